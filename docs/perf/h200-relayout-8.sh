#!/bin/bash
# Issue 13: where the copy in registers pays, `nn` and `nt`, the copy forced on and off, a
# priming pass first (same binary as h200-copy-3).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=2048x2048x2048,4096x4096x2048,4096x4096x4096,4096x11008x4096,11008x4096x4096,8192x8192x8192
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for L in nn nt; do
    for r in off on; do
      timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --relayout $r --reps $R 2>&1 | grep -E "^f16" | sed "s|^|$pass $r |"
    done
  done
done
