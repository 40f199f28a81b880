#!/bin/bash
# 35th session, call 5. Issue 47: the K formats' per-unit scale bytes taken from aligned words
# with one shift (Q2_K, Q4_K/Q5_K, Q6_K) instead of through a word put together at the
# byte's address, against call 4's binary, two rounds interleaved; the quantized test binary
# under the validation layer; checked GEMMs of those formats at odd sizes, both paths.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/old/vk-sgmat-mxfp4
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound" /tmp/test.log | head -8
S=1x22016x4096,8x22016x4096
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 90 $bin bench "$@" --stream --reps 50 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for round in 1 2; do
  for q in q4_K q5_K q6_K q2_K; do
    run "r$round before $q" $OLD --types f16:f32 --weights $q --shapes $S
    run "r$round after $q" $B --types f16:f32 --weights $q --shapes $S
  done
done
for q in q2_K q4_K q5_K q6_K; do
  for m in 1 8 17; do
    timeout 60 $B gemm $m 4099 4352 --weights $q --types f16:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check $m] |"
    timeout 60 $B gemm $m 4099 4352 --weights $q --types f32:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check f32 $m] |"
  done
done
echo "all done at $SECONDS s"
