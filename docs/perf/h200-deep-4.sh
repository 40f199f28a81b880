#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 12: `nn` at 2048^3 runs in place on the 128x128
# tile at 0.95x ggml-vulkan (h200-deep-3.txt). `tune` there and at 4096^3 (copies off) over the
# 256x128 tile that now leads `nt` (sixteen and eight steps, right operand first) and the
# 128x128 forms, in `nn` and `tt`; then the batched check that h200-deep-3's filter hid, and
# `vk-sgmat check --quick` for longer.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t256_fr16x8_k64_u16_a0_rf_ct,wg_t256_fr16x8_k64_u8_a0_rf_ct,wg_t128_fr8x8_k32_u16_a0_g8_rf_ct,wg_t128_fr8x8_k32_u8_a0_g8_ct
for L in nn tt; do timeout 100 $B tune 2048 2048 2048 --layout $L --filter $F --reps 3 --warm 0 --relayout off > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for L in nn tt; do for S in "2048 2048 2048" "4096 4096 4096"; do
  timeout 100 $B tune $S --layout $L --filter $F --reps 20 --warm 1 --relayout off 2>&1 | grep -E '^16x16' | sed "s|^|$L ${S// /x} |"
done; done
timeout 60 $B gemm 1031 2053 2048 --layout nt --batch 3 --repeat 2 2>&1 | tail -3
timeout 60 $B gemm 515 1029 4096 --layout nn --batch 5 --beta 0.5 --repeat 2 2>&1 | tail -3
timeout 200 $B check --quick --types f16:f32,bf16:f32 2>&1 | grep -E "FAIL|passed|failed|^\[" | tail -8
echo "all done at $SECONDS s"
