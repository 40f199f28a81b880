#!/bin/bash
# Issue 13, 2026-11-26 (25th session), call 2: tune's new deep candidates, `tune --warm 1
# --relayout off` (every pipeline primed in an earlier process): the `nt` lead and the 128x128
# `tn` lead against (a) the same on the grouped walk (`_g8`: less of B streamed per wave where N
# is long), (b) iterations as deep in fewer, larger loads: 128-element (256-byte) K steps, four
# or eight of them.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
NT=wg_t256_fr16x8_k64_u16_a0_rf_ct,wg_t256_fr16x8_k64_u16_a0_g8_rf_ct,wg_t256_fr16x8_k128_u8_a0_rf_ct,wg_t256_fr16x8_k128_u8_a0_g8_rf_ct,wg_t256_fr16x8_k128_u4_a0_ct
TN=wg_t128_fr8x8_k32_u16_a0_g8_rf_ct,wg_t128_fr8x8_k128_u8_a0_g8_rf_ct,wg_t128_fr8x8_k128_u4_a0_g8_ct,wg_t128_fr8x8_k128_u8_a0_rf_ct
t() { timeout 150 $B tune "$@" --relayout off 2>&1 | grep -E "^16x16|rror" ; }
for s in "4096 4096 4096" "4096 11008 4096" "2048 2048 2048"; do t $s --layout nt --filter $NT --warm 0 --reps 1 > /dev/null; done
t 4096 4096 4096 --layout tn --filter $TN --warm 0 --reps 1 > /dev/null
echo "primed at $SECONDS s"
for pass in 1 2; do
  for s in "4096 4096 4096" "4096 11008 4096" "2048 2048 2048"; do
    t $s --layout nt --filter $NT --warm 1 --reps 20 | sed "s|^|p$pass nt $(echo $s | tr ' ' x) |"
  done
  for s in "4096 4096 4096" "8192 8192 8192"; do
    t $s --layout tn --filter $TN --warm 1 --reps 20 | sed "s|^|p$pass tn $(echo $s | tr ' ' x) |"
  done
done
echo "all done at $SECONDS s"
