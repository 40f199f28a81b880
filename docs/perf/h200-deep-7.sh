#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 15: other depths and step sizes of the new `nt` lead
# (256x128 computed transposed, right operand first), for the next session: `tune --warm 1
# --relayout off`, a priming process first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t256_fr16x8_k64_u16_a0_rf_ct,wg_t256_fr16x8_k32_u32_a0_rf_ct,wg_t256_fr16x8_k32_u16_a0_rf_ct,wg_t256_fr16x8_k64_u32_a0_rf_ct
timeout 100 $B tune 2048 2048 2048 --layout nt --filter $F --reps 3 --warm 0 --relayout off > /dev/null 2>&1
echo "primed at $SECONDS s"
for S in "2048 2048 2048" "4096 4096 4096"; do
  timeout 100 $B tune $S --layout nt --filter $F --reps 20 --warm 1 --relayout off 2>&1 | grep -E '^16x16' | sed "s|^|nt ${S// /x} |"
done
echo "all done at $SECONDS s"
