#!/bin/bash
# Issue 47, 2026-11-27 (32nd session), call 3: exact conversions without I2F, each unit's
# scales and field positions made once (after h200-32-2). (1) The quantized test binary under
# the validation layer; (2) ggml-vulkan `mm_bench` decode and prefill (its A the weights, f32
# activations); (3) vk-sgmat `bench --weights`: decode with f32 activations read exactly, then
# with f16 activations, eight rows with 1, 4 and 8 weight rows per workgroup, prefill with f16
# activations (dense copy timed in, steps apart), and dense f16 weights for scale.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|got|Check" /tmp/test.log | head -6
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
cases=""
for q in q4_K q6_K q8_0 q4_0 mxfp4; do cases="$cases $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 150 $G --min-time 0.6 $cases f16:22016x1x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
timeout 100 $G --min-time 0.6 q4_K:22016x512x4096 q8_0:22016x512x4096 q4_K:22016x2048x4096 q8_0:22016x2048x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
for q in q4_K q6_K q8_0 q4_0 mxfp4; do
  timeout 100 $B bench --types f32:f32 --weights $q --stream --reps 50 --shapes 1x22016x4096,1x14336x4096,8x22016x4096 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[decode f32] |"
  timeout 100 $B bench --types f16:f32 --weights $q --stream --reps 50 --shapes 1x22016x4096,8x22016x4096 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[decode f16] |"
done
echo "decode done at $SECONDS s"
for c in 1 4 8; do
  timeout 60 $B bench --types f32:f32 --weights q4_K --gemv-cols $c --stream --reps 50 --shapes 8x22016x4096 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[r8 cols $c] |"
done
timeout 60 $B bench --types f16:f32 --layout nt --stream --reps 50 --shapes 1x22016x4096,8x22016x4096 2>&1 | grep -E "^f16|rror" | sed "s|^|[decode f16 dense] |"
for q in q4_K q8_0; do
  timeout 100 $B bench --types f16:f32 --weights $q --stream --reps 20 --shapes 512x22016x4096,2048x22016x4096 --trace 2>&1 | grep -E "weights|rror|anic|^steps" | grep -v "^\[" | sed "s|^|[prefill] |"
done
timeout 60 $B bench --types f16:f32 --layout nt --stream --reps 20 --shapes 512x22016x4096,2048x22016x4096 2>&1 | grep -E "^f16|rror" | sed "s|^|[prefill f16 dense] |"
echo "all done at $SECONDS s"
