#!/bin/bash
# 41st session, call 2. Issue 47: three binaries in one call: before (blocks whole), `i`
# (call 1's: blocks interleaved on upload), and now (interleaved, and a 16-bit scale at an even
# byte read with one load where the funnel took two: q8_0, q4_0, q5_0), ggml-vulkan's
# mul_mat_vec beside; for q6_K and q2_K, whose eight-token decode was slower interleaved in
# call 1, the same with 32-bit loads (`--gemv-wide-loads off`) and other rows of W per
# workgroup (`--gemv-cols`). The quantized test binary under the validation layer first.
B=$PWD/carry/vk-sgmat
I=$PWD/carry/vk-sgmat-i
OLD=$PWD/carry/vk-sgmat-before
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | head -6
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
GS=""
for q in q8_0 q4_0 q6_K mxfp4 q2_K; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 150 /tmp/g/ggml/mm_bench --min-time 0.4 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,8x22016x4096
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for q in q8_0 q4_0 q5_0 q6_K mxfp4 q2_K; do
  run "old $q" $OLD --types f16:f32 --weights $q --shapes $S
  run "i $q" $I --types f16:f32 --weights $q --shapes $S
  run "new $q" $B --types f16:f32 --weights $q --shapes $S
done
echo "decode done at $SECONDS s"
for q in q6_K q2_K; do
  run "new narrow $q" $B --types f16:f32 --weights $q --shapes $S --gemv-wide-loads off
  for c in 1 4; do
    run "new cols $c $q" $B --types f16:f32 --weights $q --shapes 8x22016x4096 --gemv-cols $c
    run "old cols $c $q" $OLD --types f16:f32 --weights $q --shapes 8x22016x4096 --gemv-cols $c
  done
done
echo "all done at $SECONDS s"
