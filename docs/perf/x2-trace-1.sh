#!/bin/bash
# Issue 16, for the next session with a two-GPU kind: where the pinned path's copies and
# multiplies fail to overlap. bench --devices all --trace prints each band's A in, multiply and
# C out per GPU (GPU timestamps) for device 0 alone and for both, with host copies on 2 copy-only
# queues (the default), on 1 (both directions on one queue) and on the compute queues (0): the
# 8192^3 two-GPU spread and the 36 ms against ~20-29 modelled at 16384^3. Carry and prefix as in
# x2-copy-queues-1.sh (carry/vk-sgmat of this commit or later).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for q in 2 1 0 2; do
  echo "== VK_SGMAT_COPY_QUEUES=$q"
  VK_SGMAT_COPY_QUEUES=$q timeout 130 carry/vk-sgmat bench --devices all --reps 5 --trace 2>&1 | grep -v "^\[" 
  echo "at $SECONDS s"
done
