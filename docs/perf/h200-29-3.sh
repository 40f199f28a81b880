#!/bin/bash
# Issue 46, 2026-11-27 (29th session), call 3: the matrix-vector kernel with two vectors per
# step (--gemv-unroll 2) against one (the default), at 1, 2, 4 and 8 rows, f16, bf16 and f32
# weights, as streams, two interleaved passes; rows=1 with two weight rows per workgroup; and
# ggml-vulkan's mul_mat_vec on the same shapes in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=1x22016x4096,1x4096x4096,1x4096x11008,2x22016x4096,4x22016x4096,8x22016x4096,8x4096x4096
b() { timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --reps 50 --stream "$@" 2>&1 | grep -E '^f16|rror|anic' | sed "s|^|[$*] |"; }
b --reps 2 --warm 0 > /dev/null
for pass in 1 2; do b; b --gemv-unroll 2; b --gemv-unroll 2 --gemv-cols 2; done
for u in 1 2; do timeout 100 $B bench --types bf16:f32,f32:f32 --mode exact --layout nt --shapes 1x22016x4096,1x4096x4096 --stream --reps 50 --gemv-unroll $u 2>&1 | grep -E '^(bf16|f32)|rror' | sed "s|^|[u$u] |"; done
echo "bench done at $SECONDS s"
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && ./mm_bench --min-time 0.6 f16:22016x1x4096 f16:4096x1x4096 f16:4096x1x11008 f16:22016x2x4096 f16:22016x4x4096 f16:22016x8x4096 f16:4096x8x4096 bf16:22016x1x4096 f32:22016x1x4096 2>&1 | grep -E "^ggml-vulkan|rror")
echo "all done at $SECONDS s"
