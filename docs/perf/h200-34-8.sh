#!/bin/bash
# 34th session, call 8 (issue 46): the 512-token GEMMs still under ggml-vulkan (h200-34-5:
# out 512x4096x4096 0.83, down 512x4096x11008 0.92 and 512x4096x14336 0.94, QKV 512x6144x4096
# 0.89). ggml-vulkan runs its large tile there with K split in two where its tiles fill under
# half the SMs. The 256x128 and 128x256 tiles at one and two K slices, and the 128x128 tile at
# three, against the default, f16 -> f32, weights N x K, streams.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x4096x4096,512x4096x11008,512x4096x14336,512x6144x4096
b() { timeout 150 $B bench --types f16:f32 --layout nt --shapes $S --reps 30 --stream "$@" 2>&1 | grep -E '^f16|rror|anic' | sed "s|^|[$*] |"; }
b
b --scheme wg_t128_fr8x8_k32_u8_a0_g8_ct --split-k 3
for s in wg_t256_fr16x8_k64_u16_a0_rf_ct wg_t256_fr8x16_k64_u16_a0_g8_rf_ct; do for k in 1 2; do b --scheme $s --split-k $k; done; done
echo "all done at $SECONDS s"
