#!/bin/bash
# Issue 17: the accurate split's planes GEMM (converted first) in each layout at 4096^3: does
# the order A column-major, B row-major speed it like the 16-bit GEMM?
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 3 > /dev/null 2>&1
for L in nn tn nt tt; do
  timeout 60 $B bench --types f32:f32 --mode accurate --convert first --shapes 4096x4096x4096 --layout $L --reps 10 2>&1 | grep -v "^\[" | grep -v "^device"
done
