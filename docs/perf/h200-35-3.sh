#!/bin/bash
# 35th session, call 3. Issue 47: Q3_K's and Q6_K's blocks padded to a whole word on upload
# (210 -> 212 bytes, so the kernel reads them as words) against the binary before (call 2's
# "aligned"), then the final table of decode on quantized weights against ggml-vulkan: every
# format at 1 and 8 tokens of 22016x4096 and 1 token of 14336x4096, f16 and f32 activations,
# and 512-token prefill of q4_K and q8_0 (the dense copy, unchanged); the quantized test
# binary under the validation layer; checked GEMMs of the padded formats at odd sizes.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/old/vk-sgmat-aligned
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
for q in q4_K q6_K q8_0 q4_0 mxfp4 q3_K q5_K; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 200 $G --min-time 0.5 $GS q4_K:22016x512x4096 q8_0:22016x512x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=1x22016x4096,1x14336x4096,8x22016x4096
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 90 $bin bench "$@" --stream --reps 50 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for q in q6_K q3_K; do
  run "before $q" $OLD --types f16:f32 --weights $q --shapes $S
  run "padded $q" $B --types f16:f32 --weights $q --shapes $S
done
for q in q4_K q8_0 q4_0 mxfp4 q5_K; do
  run "f16 $q" $B --types f16:f32 --weights $q --shapes $S
done
for q in q4_K q6_K q8_0 q4_0 mxfp4 q3_K q5_K; do
  run "f32 $q" $B --types f32:f32 --int8-activations on --weights $q --shapes $S
done
for q in q4_K q8_0; do
  run "prefill $q" $B --types f16:f32 --weights $q --shapes 512x22016x4096
done
for q in q3_K q6_K; do
  for m in 1 3 8 17; do
    timeout 60 $B gemm $m 4099 4352 --weights $q --types f16:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check $m] |"
    timeout 60 $B gemm $m 4099 4352 --weights $q --types f32:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check f32 $m] |"
  done
done
echo "all done at $SECONDS s"
