#!/bin/bash
# Issue 13, 2026-11-26, call 7: int8 operands copied toward K from K = 512 (was 1024), now that
# the copied GEMM takes the workgroup-scope tiles there: the previous binary (vk-sgmat-prev) and
# this one, default plans, `nn`, `tt` and `tn`, a priming pass first; then the reference.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 carry/vk-sgmat bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 50 > /dev/null 2>&1   # clocks up
S=4096x4096x512,4096x4096x768,2048x2048x512,1024x1024x512,4096x11008x768,1024x4096x512,4096x1024x512
for pass in prime measure; do
  R=2; [ $pass != prime ] && R=20
  for L in nn tt tn; do
    for b in vk-sgmat-prev vk-sgmat; do
      timeout 100 carry/$b bench --types i8:i32 --shapes $S --layout $L --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass $b |"
    done
  done
  echo "$pass done at $SECONDS s"
done
echo "== new defaults against the reference, every row"
for a in "4096 4096 512 --types i8:i32 --layout nn" "4097 4095 700 --types i8:i32 --layout tt --beta 2" \
         "1000 1100 600 --types u8:u32 --layout tn --c-layout t" "2048 2048 512 --types i8:i32 --layout tn --alpha -1 --beta 1"; do
  timeout 90 carry/vk-sgmat gemm $a --repeat 5 2>&1 | grep -E "^gemm|verify|time|error|Error"
done
echo "all done at $SECONDS s"
