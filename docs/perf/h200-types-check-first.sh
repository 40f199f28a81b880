#!/bin/bash
# Issue 17: vk-sgmat check over every f32 and mixed pair, with conversion first (rounded and
# split planes) beside the defaults; the defaults' choice at 4096^3.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 $B check --quick --types f32:f32 --types f16,f32:f32 --types f32,f16:f32 --types bf16,f32:f32 --types f32,bf16:f32 --types f16,f32:f16 2>&1 | grep -E "FAIL|passed|skipped"
for args in "--mode fast" "--mode accurate"; do
  timeout 60 $B gemm 4096 4096 4096 --types f32:f32 $args --repeat 5 2>&1 | grep -E "^gemm|^verify|^time" | sed "s/^/[$args] /"
done
