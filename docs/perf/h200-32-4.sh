#!/bin/bash
# Issue 47, 2026-11-27 (32nd session), call 4: rows of quantized weights per workgroup of the
# matrix-vector kernel (--gemv-cols 1, 2, 4, 8) on one-token decode, f32 and f16 activations,
# for q4_K, q6_K, q8_0 and mxfp4 (22016x4096), beside the current choice and ggml-vulkan's
# mul_mat_vec in the same call.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
timeout 100 $G --min-time 0.6 q4_K:22016x1x4096 q6_K:22016x1x4096 q8_0:22016x1x4096 mxfp4:22016x1x4096 q4_K:22016x4x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
for q in q4_K q6_K q8_0 mxfp4; do
  for c in 1 2 4 8; do
    timeout 60 $B bench --types f32:f32 --weights $q --gemv-cols $c --stream --reps 50 --warm 0.5 --shapes 1x22016x4096 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[f32 cols $c] |"
  done
done
for c in 1 2 4 8; do
  timeout 60 $B bench --types f16:f32 --weights q4_K --gemv-cols $c --stream --reps 50 --warm 0.5 --shapes 1x22016x4096,4x22016x4096,8x22016x4096 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[f16 cols $c] |"
done
echo "all done at $SECONDS s"
