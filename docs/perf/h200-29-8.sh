#!/bin/bash
# Issue 46, 2026-11-27 (29th session), call 8: the mid-size shapes where the model sweep
# (h200-29-7) trails ggml-vulkan: 128 and 512 tokens through the 4096-wide weights. The default
# against the 64x64 workgroup-scope tile (wg_t128_fr4x4_k64_u2_ct) and the 128x128 one
# (wg_t128_fr8x8_k32_u8_a0_g8_ct) at split-K 1, 2 and 4, f16 -> f32, weights N x K, streams.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=128x4096x4096,128x4096x11008,128x12288x4096,512x4096x4096,512x4096x11008
b() { timeout 120 $B bench --types f16:f32 --layout nt --shapes $S --reps 30 --stream "$@" 2>&1 | grep -E '^f16|rror|anic' | sed "s|^|[$*] |"; }
b
for s in wg_t128_fr4x4_k64_u2_ct wg_t128_fr8x8_k32_u8_a0_g8_ct; do for k in 1 2 4; do b --scheme $s --split-k $k; done; done
echo "all done at $SECONDS s"
