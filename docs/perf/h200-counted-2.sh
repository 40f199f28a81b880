#!/bin/bash
# The MoE layer's check with counts on the device and a fused bias + SiLU -> f16 (its line was
# missing from h200-counted-1.txt: its M was 4096, not the groups' 3996), with every line of output.
B=carry/vk-sgmat
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for L in nt nn; do
  /usr/bin/time -f "%e s" timeout 280 $B gemm 3996 14336 4096 --groups $G --repeat 1 --layout $L --types f16:f32 --counts-on-device --epilogue bias-col,silu --out f16 2>&1 | grep -v '^$'
done
