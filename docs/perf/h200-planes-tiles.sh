#!/bin/bash
# Issue 17: the accurate split done first, each loop iteration's products summed from zero and
# added in f32: tiles and iteration lengths (error and speed), bench beside the split as loaded,
# f16 and cuBLAS SGEMM, one call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --types f32:f32 --shapes 4096x4096x4096 --reps 3 > /dev/null 2>&1
L="wg_t256_fr8x16_k32_u8_a0_ct wg_t256_fr8x16_k32_u4_a0_ct wg_t256_fr8x16_k32_u2_a0_ct wg_t256_fr8x16_k64_u4_a0_ct wg_t256_fr8x8_k32_u8_a0_ct wg_t256_fr8x8_k64_u4_a0_ct wg_t256_fr16x8_k32_u8_a0_ct wg_t256_fr8x8_k32_u2_a0_ct"
echo "== errors, 4096^3 (every row)"
for S in $L; do
  timeout 60 $B gemm 4096 4096 4096 --types f32:f32 --scheme $S --convert first --repeat 3 2>&1 | grep -E "^verify|rror" | sed "s/^/[$S] /"
done
echo "== bench per tile"
for S in $L; do
  timeout 60 $B bench --types f32:f32 --mode accurate --convert first --scheme $S --shapes 4096x4096x4096,8192x8192x8192 --reps 10 2>&1 | grep "f32:f32"
done
echo "== auto / as loaded / f16"
timeout 150 $B bench --types f16:f32 --types f32:f32 --mode accurate --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192 --reps 20 2>&1 | grep -v "^\["
timeout 150 $B bench --types f32:f32 --mode accurate --convert load --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192 --reps 20 2>&1 | grep "f32:f32"
echo "== sgemm"
timeout 120 python3 carry/sgemm_error.py --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192 2>&1 | tail -3
