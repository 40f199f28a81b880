#!/bin/bash
# 35th session, call 1. Issue 47: decode on quantized weights with the activations rounded to
# 8 bits (GemmOptions::int8_activations; the kernel `gemv_*_x8` multiplies four weight codes by
# four activations in one packed dot product) against the f32 dequantizing kernel of the same
# binary (--int8-activations off) and ggml-vulkan's mul_mat_vec, same call. (A) the quantized
# test binary under the validation layer; (B) ggml; (C) ours, each bench run twice (the second
# from the pipeline cache), f32 activations on/off and f16 auto; (D) rows of W per workgroup
# for the 8-bit kernel; (E) one checked GEMM per format at odd sizes.
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
GS=""
for q in q4_K q6_K q8_0 q4_0 mxfp4; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 200 $G --min-time 0.5 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=1x22016x4096,1x14336x4096,8x22016x4096
for q in q4_K q6_K q8_0 q4_0; do
  for o in on off; do
    for pass in 1 2; do
      timeout 90 $B bench --types f32:f32 --weights $q --int8-activations $o --stream --reps 50 --warm 0.5 --shapes $S > /tmp/b.txt 2>&1
      [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[f32 $o] |"
    done
  done
  timeout 90 $B bench --types f16:f32 --weights $q --stream --reps 50 --warm 0.5 --shapes $S 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[f16 auto] |"
done
for q in q4_K q8_0; do
  for c in 2 8; do
    timeout 90 $B bench --types f32:f32 --weights $q --int8-activations on --gemv-cols $c --stream --reps 50 --warm 0.5 --shapes $S 2>&1 | grep -E "weights|rror|anic" | grep -v "^\[" | sed "s|^|[f32 on cols $c] |"
  done
done
for q in q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K mxfp4; do
  for m in 1 3 8; do
    timeout 60 $B gemm $m 4099 4096 --weights $q --types f16:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check $m] |"
  done
done
echo "all done at $SECONDS s"
