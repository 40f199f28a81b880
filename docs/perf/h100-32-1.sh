#!/bin/bash
# Issue 47, 2026-11-27 (32nd session), call 1: quantized weights on the H200. (1) The quantized
# test binary under the validation layer (every format bit for bit through the identity GEMM,
# layers at odd shapes, the decode path; spirv-val is not on this machine); (2) ggml-vulkan's
# `mm_bench` on the issue's shapes (weights 22016x4096 and 14336x4096 as its A, f32 activations;
# N = 1 and 8 run its mul_mat_vec, 512 and 2048 its mul_mm); (3) vk-sgmat `bench --weights`
# on the same, twice: round 1 in processes that create their pipelines, round 2 from the
# pipeline cache (steady state). Decode with f32 activations and the weights read exactly
# (the block-streaming matrix-vector kernel), prefill with f16 activations and an f16 dense copy.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "^test |panicked|got|Check" /tmp/test.log | head -12
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
cases=""
for q in q4_K q6_K q8_0 q4_0 mxfp4 f16; do cases="$cases $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 150 $G --min-time 0.6 $cases 2>&1 | grep -E "^ggml-vulkan [a-z0-9_]+ |matrix cores" | sed "s|^|[ggml] |"
timeout 100 $G --min-time 0.6 q4_K:22016x512x4096 q8_0:22016x512x4096 f16:22016x512x4096 q4_K:22016x2048x4096 q8_0:22016x2048x4096 f16:22016x2048x4096 2>&1 | grep -E "^ggml-vulkan [a-z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
for round in 1 2; do
  for q in q4_K q6_K q8_0 q4_0 mxfp4; do
    timeout 100 $B bench --types f32:f32 --weights $q --stream --reps 50 --shapes 1x22016x4096,1x14336x4096,8x22016x4096 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[r$round decode] |"
  done
  timeout 60 $B bench --types f32:f32 --layout nt --stream --reps 50 --shapes 1x22016x4096,1x14336x4096,8x22016x4096 2>&1 | grep -E "^f32|rror" | sed "s|^|[r$round decode f32 dense] |"
  timeout 60 $B bench --types f16:f32 --layout nt --stream --reps 50 --shapes 1x22016x4096,1x14336x4096,8x22016x4096 2>&1 | grep -E "^f16|rror" | sed "s|^|[r$round decode f16 dense] |"
  for q in q4_K q8_0; do
    timeout 100 $B bench --types f16:f32 --weights $q --stream --reps 20 --shapes 512x22016x4096,2048x22016x4096 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[r$round prefill] |"
  done
  timeout 60 $B bench --types f16:f32 --layout nt --stream --reps 20 --shapes 512x22016x4096,2048x22016x4096 2>&1 | grep -E "^f16|rror" | sed "s|^|[r$round prefill f16 dense] |"
  echo "round $round done at $SECONDS s"
done
echo "all done at $SECONDS s"
