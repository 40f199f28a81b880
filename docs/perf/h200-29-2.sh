#!/bin/bash
# Issue 46, 2026-11-27 (29th session), call 2: the matrix-vector kernel with scalar sums (one
# dot product per vector pair), rows of the weights per workgroup (--gemv-cols) 2, 4 and 8 and
# the default, at 1, 2, 4 and 8 rows of activations, as streams (ggml-vulkan's method), two
# interleaved passes; ggml-vulkan's mul_mat_vec on the same shapes in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=1x22016x4096,1x4096x4096,1x4096x11008,2x22016x4096,4x22016x4096,8x22016x4096,8x4096x4096
b() { timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --reps 50 --stream "$@" 2>&1 | grep -E '^f16|rror|anic' | sed "s|^|[$*] |"; }
b --reps 2 --warm 0 > /dev/null
for pass in 1 2; do b; for c in 2 4 8; do b --gemv-cols $c; done; done
echo "bench done at $SECONDS s"
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && ./mm_bench --min-time 0.6 f16:22016x1x4096 f16:4096x1x4096 f16:4096x1x11008 f16:22016x2x4096 f16:22016x4x4096 f16:22016x8x4096 f16:4096x8x4096 2>&1 | grep -E "^ggml-vulkan|rror")
echo "all done at $SECONDS s"
