#!/bin/bash
# Needs an experimental build: VK_SGMAT_XACROSS read in kernel::transpose::emit (not in the tree).
# Issue 13: the register transpose's workgroup shape. VK_SGMAT_XACROSS = invocations along a
# source row (the committed kernel: 8, 256 rows x 64 elements per workgroup; 4: 512 x 32;
# 16: 128 x 128; 32: 64 x 256). Default plans (`nn`, `tt` copy one operand), `tn` the bound.
X=carry/vk-sgmat-x
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $X bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
b() { timeout 100 $X bench --types f16:f32 --shapes 4096x4096x4096,8192x8192x8192 "$@" 2>&1 | grep -E "^f16"; }
for L in nn tt tn; do b --layout $L --reps 2 > /dev/null; done
for x in 8 4 16 32 8; do
  for L in nn tt; do echo "== across $x $L"; VK_SGMAT_XACROSS=$x b --layout $L --reps 20; done
done
echo "== tn"; b --layout tn --reps 20
