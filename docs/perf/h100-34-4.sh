#!/bin/bash
# 34th session, call 4 (issue 46; ran on an H100): the 128-token grids the mid-grid rule (h200-29-8) does not
# cover, where the layer sweep trails ggml-vulkan: the widest weights (22016, 28672: a wave or
# more of 128x128 tiles, so the default 64x64 tile unsplit), Llama-3-8B's QKV 6144 and down
# (K 14336), and the 512-token QKV of 6144. The default against the 64x64 workgroup-scope tile
# and the 128x128 one at split-K 1, 2 and 3, f16 -> f32, weights N x K, streams; ggml-vulkan's
# mm_bench on the same shapes (weights as its A) in the same call.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=128x22016x4096,128x28672x4096,128x6144x4096,128x4096x14336,512x6144x4096
b() { timeout 150 $B bench --types f16:f32 --layout nt --shapes $S --reps 30 --stream "$@" 2>&1 | grep -E '^f16|rror|anic' | sed "s|^|[$*] |"; }
b
for s in wg_t128_fr4x4_k64_u2_ct wg_t128_fr8x8_k32_u8_a0_g8_ct; do for k in 1 2 3; do b --scheme $s --split-k $k; done; done
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
timeout 120 /tmp/g/ggml/mm_bench --min-time 0.3 f16:22016x128x4096 f16:28672x128x4096 f16:6144x128x4096 f16:4096x128x14336 f16:6144x512x4096 2>&1 | grep "^ggml-vulkan" | sed "s|^|[ggml] |"
echo "all done at $SECONDS s"
