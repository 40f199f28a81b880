#!/bin/bash
# Issue 12: which tile stores an f16 C fastest at attention's short K (batch 32), for f32 sums
# cast to f16 (--out f16) and for the f16 config; torch.bmm f16 in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
timeout 100 python3 carry/bmm_reference.py --batch 32 --types f16:f16 2>&1 | grep best
for S in "1024 1024 128" "2048 2048 128" "2048 128 2048"; do
  for T in "--types f16:f32 --out f16" "--types f16:f16"; do
    for X in wg_t128_fr8x8_k32_u8_a0_ct wg_t128_fr8x8_k32_u8_a0 wg_t256_fr16x16_k32_u8_a0_ct wg_t256_fr16x16_k32_u8_a0 wg_t128_fr4x4_k32_u2_a0_ct wg_t128_fr4x4_k32_u2_ct wg_t256_fr16x8_k64_u8_a0_ct wg_t256_fr8x16_k64_u8_a0; do
      R=$(timeout 60 $B gemm $S --batch 32 $T --scheme $X --repeat 20 2>&1 | grep -v "^\[" | tail -1)
      echo "$S | $T | $X | $R"
    done
  done
done
