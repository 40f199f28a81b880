#!/bin/bash
# Issue 13: grouped raster (_g8) on the _ct defaults, 4096^3 and 8192^3, nn and nt; priming first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t128_fr8x8_k32_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_g8_ct,wg_t256_fr16x8_k64_u8_a0_ct,wg_t256_fr16x8_k64_u8_a0_g8_ct
for L in nn nt; do timeout 60 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter $F --reps 1 > /dev/null 2>&1; done
for N in 4096 8192; do for L in nn nt; do echo "== $N $L"; timeout 90 $B tune $N $N $N --layout $L --shape 16x16x16 --filter $F --reps 10 2>&1 | grep -v "^\[" | grep wg_; done; done
