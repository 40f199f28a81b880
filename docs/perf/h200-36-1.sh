#!/bin/bash
# 36th session, call 1. Issue 47, prefill on quantized weights: the dequantizing pass staged
# through shared memory (each workgroup reads a tile's blocks in whole lines, dequantizes, then
# writes the values in whole lines) against the same binary's unit-per-invocation pass
# (VK_SGMAT_DEQUANT_DIRECT=1, an experiment switch of this build only); our f16 weights at the
# same shapes for the GEMM alone; ggml-vulkan's mul_mm in the same call. Then the quantized
# test binary under the validation layer and checked prefill GEMMs of every format.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound" /tmp/test.log | head -8
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
timeout 200 $G --min-time 0.5 f16:22016x512x4096 q4_K:22016x512x4096 q8_0:22016x512x4096 q6_K:22016x512x4096 q4_K:22016x2048x4096 q8_0:22016x2048x4096 q4_K:22016x32x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=32x22016x4096,512x22016x4096,2048x22016x4096,512x4096x4096
run() { # label env args
  local label=$1 env=$2; shift 2
  for pass in 1 2; do
    env $env timeout 120 $B bench "$@" --stream --reps 30 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -vE "^\[|^$" /tmp/b.txt | grep -E "[0-9]x[0-9]|rror|anic" | sed "s|^|[$label] |"
  done
}
run "f16 weights" X=1 --types f16:f32 --layout nt --shapes $S
for round in 1 2; do
  for q in q4_K q8_0 q6_K; do
    run "direct $q" VK_SGMAT_DEQUANT_DIRECT=1 --types f16:f32 --weights $q --shapes $S
    run "staged $q" X=1 --types f16:f32 --weights $q --shapes $S
  done
done
for q in q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K mxfp4; do
  for m in 17 512; do
    timeout 60 $B gemm $m 4099 4352 --weights $q --types f16:f32 --repeat 2 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check $q $m] |"
  done
  timeout 60 $B gemm 33 1031 4352 --weights $q --types f32:f32 --repeat 2 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check f32 $q 33] |"
done
echo "all done at $SECONDS s"
