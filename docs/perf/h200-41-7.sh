#!/bin/bash
# 41st session, call 7 (the session's last code). The quantized, counted-group and
# matrix-vector test binaries under the validation layer; the K-quant formats at small sizes
# (call 6 stopped their process at 2880), where one row over at most 2^22 weights now skips the
# 8-bit rounding pass by default: 2048x2048 default against `--int8-activations on`, 4096x4096
# (the 8-bit path by default) against off, ggml-vulkan beside.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
for bin in quantized grouped_counted gemv; do
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/$bin --skip spirv_val > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | head -6
done
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
GS=""
for q in q4_K q5_K q6_K; do GS="$GS $q:2048x1x2048 $q:4096x1x4096"; done
timeout 100 /tmp/g/ggml/mm_bench --min-time 0.3 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for q in q4_K q5_K q6_K; do
  run "default $q" $B --types f16:f32 --weights $q --shapes 1x2048x2048,1x4096x4096
  run "x8 on $q" $B --types f16:f32 --weights $q --shapes 1x2048x2048 --int8-activations on
  run "x8 off $q" $B --types f16:f32 --weights $q --shapes 1x4096x4096 --int8-activations off
done
echo "all done at $SECONDS s"
