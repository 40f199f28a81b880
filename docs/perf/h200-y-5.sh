#!/bin/bash
# Issue 13, 2026-11-26 (25th session), call 5: the rows still short of 1.05x ggml-vulkan that a
# listed candidate might move, `tune --warm 1 --relayout off` (pipelines primed first):
# (a) short K 4096x4096x256 (one 256-deep iteration) in `nt` and `nn`: the 128x128 default
#     against the same with each step's right operand first, grouped or in rows;
# (b) `nn` and `tt` at 2048^3 in place: the sixteen-step `nt` lead against eight steps.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
SK=wg_t128_fr8x8_k32_u8_a0_g8_ct,wg_t128_fr8x8_k32_u8_a0_g8_rf_ct,wg_t128_fr8x8_k32_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_rf_ct
D=wg_t256_fr16x8_k64_u16_a0_rf_ct,wg_t256_fr16x8_k64_u8_a0_rf_ct
t() { timeout 100 $B tune "$@" --relayout off ${W:---warm 1 --reps 20} 2>&1 | grep -E "^16x16|rror" | sed "s|^|$1x$2x$3 $5 |"; }
for L in nt nn; do W="--warm 0 --reps 1" t 4096 4096 256 --layout $L --filter $SK > /dev/null; done
for L in nn tt; do W="--warm 0 --reps 1" t 2048 2048 2048 --layout $L --filter $D > /dev/null; done
echo "primed at $SECONDS s"
for pass in 1 2; do
  for L in nt nn; do t 4096 4096 256 --layout $L --filter $SK | sed "s|^|p$pass |"; done
  for L in nn tt; do t 2048 2048 2048 --layout $L --filter $D | sed "s|^|p$pass |"; done
done
echo "all done at $SECONDS s"
