#!/bin/bash
# Needs the grouped raster on the step-by-step schemes as tuning candidates (an experimental build:
# workgroup_tuning_candidates chaining with_raster_group(8) onto each lookahead variant; not kept).
# Issue 13: 4096x11008x4096 `nt` (0.93 of ggml-vulkan) and 4096^3: the grouped raster (_g8) and
# load lookahead of the `nt` tiles, a priming process first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
F=wg_t256_fr16x8_k64_u8_a0_ct,wg_t256_fr16x8_k64_u8_a0_g8_ct,wg_t256_fr16x8_k64_u8_a1_ct,wg_t256_fr16x8_k64_u8_a1_g8_ct,wg_t128_fr8x8_k32_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_g8_ct
t() { echo "== $*"; timeout 120 $B tune "$@" --shape 16x16x16 --filter $F 2>&1 | grep -v "^\[" | grep -E "wg_|FAIL|rror" | head -8; }
t 4096 11008 4096 --layout nt --reps 1 | sed 's/^/prime /'
t 4096 11008 4096 --layout nt --reps 10
t 4096 4096 4096 --layout nt --reps 10
t 11008 4096 4096 --layout nt --reps 10
t 4096 11008 4096 --layout tn --reps 10
