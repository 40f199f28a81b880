#!/bin/bash
# Issue 13, 2026-11-26, call 5: correctness of this session's defaults (the 128x128 tile's
# grouped raster, int8's shorter K-contiguous lists) through `vk-sgmat check` (every failure
# printed), batched and f16-result runs of the new default, and two copies for `nt` at
# 4096x11008x4096 and 2048^3 against the kernel in place.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
for a in "1031 2053 300 --layout tn --batch 3" "4096 4096 512 --layout nt --types f16:f16" \
         "4095 4097 700 --layout nn --types f16:f16 --beta -1" "2048 2048 2048 --layout nn --epilogue bias-col,gelu"; do
  timeout 90 $B gemm $a --repeat 3 2>&1 | grep -vE "^\[" | head -4
done
for pass in prime measure; do
  R=3; [ $pass = measure ] && R=20
  for r in off on; do
    timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096,4096x11008x4096 --layout nt --relayout $r --reps $R 2>&1 | grep -E '^f16' | sed "s|^|$pass relayout-$r |"
  done
  for b in vk-sgmat-prev vk-sgmat; do
    timeout 60 carry/$b bench --types f16:f16 --shapes 4096x4096x512,4096x4096x1024 --layout nn --reps $R 2>&1 | grep -E '^f16' | sed "s|^|$pass $b |"
  done
done
echo "== check, every line that is not ok"
timeout 170 $B check --quick --types f16:f32,bf16:f32 2>&1 | grep -vE ": ok$" | tail -15
timeout 120 $B check --quick --types i8:i32,u8:u32 2>&1 | grep -vE ": ok$" | tail -15
echo "all done at $SECONDS s"
