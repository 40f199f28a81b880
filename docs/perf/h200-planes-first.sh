#!/bin/bash
# Issue 17: the accurate split done first (largest magnitudes, f16 hi/lo planes in scratch,
# the workgroup-scope kernel summing each K step's three products from zero) against the
# split as loaded (subgroup scope) and cuBLAS SGEMM, one call; candidate tiles; GPU checks.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --types f32:f32 --shapes 4096x4096x4096 --reps 3 > /dev/null 2>&1
echo "== tiles (accurate, first; submit to completion)"
for S in wg_t256_fr8x8_k32_u8_a0_ct wg_t128_fr8x8_k32_u8_a0_ct wg_t256_fr8x8_k16_u8_a0_ct wg_t256_fr8x8_k64_u8_a0_ct wg_t256_fr8x8_k32_u4_ct wg_t256_fr8x16_k32_u8_a0_ct; do
  timeout 60 $B gemm 4096 4096 4096 --types f32:f32 --scheme $S --convert first --repeat 10 2>&1 | grep -E "^verify|^time|rror" | sed "s/^/[$S] /"
done
S=2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096
echo "== accurate, auto"
timeout 150 $B bench --types f16:f32 --types f32:f32 --mode accurate --shapes $S --reps 20 2>&1 | grep -v "^\["
echo "== accurate, as loaded"
timeout 150 $B bench --types f32:f32 --mode accurate --convert load --shapes $S --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"
echo "== exact, fast, mixed (same call)"
timeout 150 $B bench --types f32:f32 --mode exact --shapes 4096x4096x4096 --reps 10 2>&1 | grep -v "^\[" | grep -v "^device"
timeout 150 $B bench --types f32:f32 --types f16,f32:f32 --mode fast --shapes 4096x4096x4096 --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"
echo "== sgemm"
timeout 120 python3 carry/sgemm_error.py --shapes 2048x2048x2048,4096x4096x4096,8192x8192x8192 2>&1 | tail -3
echo "== checks"
for args in "4096 4096 4096 --types f32:f32" "4096 4096 4096 --types f32:f32 --convert load" \
  "4099 4097 1029 --types f32:f32 --layout nt --c-layout t" "4099 4097 1029 --types f32:f32 --layout tn" \
  "2049 3001 777 --types f32:f32 --layout tt --beta 0.5 --alpha -2" "2047 1025 4096 --types f32:f32" \
  "1025 1031 3 --types f32:f32 --convert first" "1 5000 77 --types f32:f32 --convert first" \
  "3000 2000 1000 --types f32:f32 --epilogue bias-col,gelu"; do
  timeout 90 $B gemm $args --repeat 3 2>&1 | grep -E "^gemm|^verify|^time|rror" | sed "s/^/[$args] /"
done
