#!/bin/bash
# Issue 13: the new one-copy threshold (K >= 2048) as a default: 4096x4096x2048 in `nn` and `tt`,
# default against the copy forced off, a priming pass first; then the default checked.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=4096x4096x2048,4096x4096x1024,4096x11008x2048
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for L in nn tt; do
    for r in auto off on; do
      timeout 60 $B bench --types f16:f32 --shapes $S --layout $L --relayout $r --reps $R 2>&1 | grep -E "^f16" | sed "s|^|$pass $r |"
    done
  done
done
timeout 100 $B gemm 4096 4096 2048 --layout tt --beta 0.5 --repeat 3 2>&1 | grep -E "^gemm|verify"
timeout 100 $B gemm 4096 4096 2048 --layout nn --types bf16:f32 --repeat 3 2>&1 | grep -E "^gemm|verify"
