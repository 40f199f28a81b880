#!/bin/bash
# Issue 13: K step and tile of the transposed workgroup-scope kernel per layout (does a
# 128-byte K step let K-contiguous operands run at the `tn` speed?), 4096^3 f16->f32, a
# priming process first; 8192^3 and 2048^3 `nt` after.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
F=wg_t128_fr8x8_k32_u8_a0_ct,wg_t128_fr8x8_k64_u8_a0_ct,wg_t128_fr8x8_k64_u4_a0_ct,wg_t128_fr8x8_k64_u2_a0_ct,wg_t128_fr8x8_k64_u4_ct,wg_t128_fr8x8_k32_u4_ct,wg_t256_fr16x8_k64_u8_a0_ct,wg_t256_fr16x8_k32_u8_a0_ct,wg_t256_fr16x8_k64_u4_a0_ct
t() { echo "== $*"; timeout 100 $B tune "$@" --shape 16x16x16 --filter $F 2>&1 | grep -v "^\[" | grep -E "wg_|FAIL|rror" | head -12; }
for L in nt nn; do t 4096 4096 4096 --layout $L --reps 1 | sed "s|^|prime |"; done
echo "#### measure"
for L in nt nn; do t 4096 4096 4096 --layout $L --reps 10; done
t 8192 8192 8192 --layout nt --reps 5
t 2048 2048 2048 --layout nt --reps 10
