#!/bin/bash
# 41st session, call 1. Issue 47: blocks interleaved on upload (`QuantType::interleave`: each
# group of 2-16 blocks holds their scales first, then their codes, so every block's codes start
# on 16 bytes and decode reads them in 16-byte loads) in q8_0, q4_0, q6_K, mxfp4, q2_K, q4_1,
# q5_0, q5_1, against the binary before (blocks whole), ggml-vulkan's mul_mat_vec beside;
# q4_K (never interleaved) as the control; prefill's dequantizing pass on interleaved q8_0 and
# q6_K at 512 tokens; the quantized and counted-group test binaries under the validation layer.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-before
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
for bin in quantized grouped_counted; do
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/$bin --skip spirv_val > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | head -6
done
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
GS=""
for q in q8_0 q4_0 q6_K mxfp4 q2_K q4_1 q5_0 q5_1; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 200 /tmp/g/ggml/mm_bench --min-time 0.4 $GS q8_0:22016x512x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,8x22016x4096
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for q in q8_0 q4_0 q6_K mxfp4 q2_K q4_1 q5_0 q5_1 q4_K; do
  run "old $q" $OLD --types f16:f32 --weights $q --shapes $S
  run "new $q" $B --types f16:f32 --weights $q --shapes $S
done
echo "decode done at $SECONDS s"
for q in q8_0 q6_K; do
  run "old $q" $OLD --types f16:f32 --weights $q --shapes 512x22016x4096
  run "new $q" $B --types f16:f32 --weights $q --shapes 512x22016x4096
done
for q in q8_0 mxfp4 q6_K; do
  timeout 60 $B gemm 1 4099 4096 --weights $q --types f16:f32 --repeat 3 2>&1 | grep -E "gemv|verified|FAILED|rror|anic" | sed "s|^|[check $q] |"
done
echo "all done at $SECONDS s"
