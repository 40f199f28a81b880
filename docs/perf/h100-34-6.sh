#!/bin/bash
# 34th session, call 6 (issue 46; ran on an H100): what is left at 128 tokens is the 4096- and 6144-wide
# weights, where the mid-grid rule runs the 64x64 tile (0.65-0.68x ggml-vulkan, h200-34-5).
# ggml-vulkan splits K up to 8 ways on large tiles where they fill under half the SMs. The
# 128x128 tile at 4, 6 and 8 K slices, and the 256-invocation tiles 256x128 and 128x256 at 4
# and 8, f16 -> f32, weights N x K, streams.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=128x4096x4096,128x6144x4096,128x4096x11008,128x4096x14336,128x12288x4096
b() { timeout 150 $B bench --types f16:f32 --layout nt --shapes $S --reps 30 --stream "$@" 2>&1 | grep -E '^f16|rror|anic' | sed "s|^|[$*] |"; }
b
for k in 4 6 8; do b --scheme wg_t128_fr8x8_k32_u8_a0_g8_ct --split-k $k; done
for s in wg_t256_fr16x8_k64_u16_a0_rf_ct wg_t256_fr8x16_k64_u16_a0_g8_rf_ct; do for k in 4 8; do b --scheme $s --split-k $k; done; done
echo "all done at $SECONDS s"
