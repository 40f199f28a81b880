#!/bin/bash
# Issue 13, int8: the K-contiguous lead at K not a whole number of its iterations, 128x128 tiles
# for shorter K and 64x64 for small grids. The previous binary (vk-sgmat-prev) and this one,
# default plans, in every layout, a priming pass first; then the new paths against the
# reference (every row).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 carry/vk-sgmat bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 50 > /dev/null 2>&1   # clocks up
S=4096x4096x11008,4096x4096x4000,4096x4096x2048,2048x2048x2048,1024x1024x4096,1024x1024x2048
for pass in prime measure; do
  R=2; [ $pass != prime ] && R=20
  for L in nt nn tt tn; do
    for b in vk-sgmat-prev vk-sgmat; do
      timeout 100 carry/$b bench --types i8:i32 --shapes $S --layout $L --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass $b |"
    done
  done
  echo "$pass done at $SECONDS s"
done
echo "== new defaults against the reference, every row"
for a in "4096 4096 11008 --types i8:i32 --layout nt" "4097 4095 4000 --types i8:i32 --layout nt --beta 2" \
         "1024 1024 4096 --types u8:u32 --layout nt" "1000 1000 4096 --types i8:i32 --layout nn --beta -1" \
         "3000 2000 2500 --types i8:i32 --layout tn --c-layout t" "4096 4096 2048 --types u8:u32 --layout tt --alpha 3"; do
  timeout 90 carry/vk-sgmat gemm $a --repeat 5 2>&1 | grep -E "^gemm|verify|time"
done
echo "checked at $SECONDS s"
