#!/bin/bash
# Issue 13: where vk-sgmat still trails ggml-vulkan after relayout (1024^3 nt, 2048^3 nn and tt,
# 4096x11008x4096 nt): every f16->f32 scheme timed by `tune` against the default.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 3 > /dev/null 2>&1
for c in "1024 1024 1024 nt" "2048 2048 2048 nn" "2048 2048 2048 tt" "4096 11008 4096 nt"; do
  set -- $c
  echo "== tune $1x$2x$3 $4"
  timeout 140 $B tune $1 $2 $3 --layout $4 --shape 16x16x16 --reps 10 2>&1 | grep -v "^\[" | head -14
  timeout 30 $B gemm $1 $2 $3 --layout $4 --repeat 20 2>&1 | grep -E "^gemm|^time"
done
