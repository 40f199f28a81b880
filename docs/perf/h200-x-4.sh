#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 4: ggml-vulkan's mm_bench writes C column-major
# (its dst is M-contiguous); `bench` writes C row-major. Here `bench` with C column-major
# (VKSG_X_CT, experimental build) beside row-major C, `nt` and `nn`, 2048^3 and 4096^3, two
# processes each after a priming one, and mm_bench in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
S=2048x2048x2048,4096x4096x4096,8192x8192x8192
for c in n t; do for L in nt nn; do
  if [ $c = t ]; then export VKSG_X_CT=1; else unset VKSG_X_CT; fi
  timeout 40 $B bench --shapes 2048x2048x2048 --layout $L --reps 3 > /dev/null 2>&1
done; done
for round in 1 2; do
  for c in n t; do for L in nt nn; do
    if [ $c = t ]; then export VKSG_X_CT=1; else unset VKSG_X_CT; fi
    timeout 60 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 --trace 2>&1 | grep -E '^f16|^steps' | sed "s|^|r$round C=$c |"
  done; done
  unset VKSG_X_CT
  (cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 f16:8192x8192x8192 2>&1 | grep '^ggml-vulkan' | sed "s|^|r$round |")
done
echo "all done at $SECONDS s"
