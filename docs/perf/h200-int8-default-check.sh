#!/bin/bash
# Issue 13: the int8 TN default (wg_t256_fr16x8_k128_u8_a0_ct on 16x16x32) checked on the GPU.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 200 $B check --quick --types i8:i32 --types u8:u32 2>&1 | grep -E "FAIL|passed"
for args in "4096 4096 4096 --types i8:i32 --layout nt" "4099 4097 4096 --types i8:i32 --layout nt --beta 2" "8192 4096 8192 --types i8:i32 --layout nt" "4096 4096 4096 --types u8:u32 --layout nt"; do
  timeout 90 $B gemm $args --repeat 5 2>&1 | grep -E "^gemm|^verify|^time|rror" | sed "s/^/[$args] /"
done
