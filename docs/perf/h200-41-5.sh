#!/bin/bash
# 41st session, call 5. Issue 47: call 4 again with MXFP4 negated in place (each byte but -0)
# beside more than one row of X, the second dot product only beside one. Call 4: MXFP4s codes
# turned into signed bytes eight at a time (each
# magnitude fits a nibble, so it is computed on the packed word; a negative value's byte is
# one below it and a second packed dot product adds the ones back) against call 3's binary
# (`i`: four at a time, each negation checked against -0), ggml-vulkan beside; gpt-oss's
# 2880x2880 (blocks whole) too, and its experts counted on the device. The quantized test
# binary under the validation layer first.
B=$PWD/carry/vk-sgmat
I=$PWD/carry/vk-sgmat-i
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | head -6
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
timeout 100 /tmp/g/ggml/mm_bench --min-time 0.4 mxfp4:22016x1x4096 mxfp4:14336x1x4096 mxfp4:22016x8x4096 mxfp4:2880x1x2880 mxfp4:2880x8x2880 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,8x22016x4096,1x2880x2880,8x2880x2880
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for round in 1 2; do
  run "i mxfp4 $round" $I --types f16:f32 --weights mxfp4 --shapes $S
  run "new mxfp4 $round" $B --types f16:f32 --weights mxfp4 --shapes $S
done
echo "decode done at $SECONDS s"
for bin in $I $B; do
  for pass in 1 2; do
    timeout 90 $bin gemm 4 2880 2880 --weights mxfp4 --types f16:f32 --groups 1,0,1,0,1,0,1,0 --counts-on-device --repeat 20 > /tmp/e.txt 2>&1
  done
  grep -E "gemv|median|rror|anic" /tmp/e.txt | sed "s|^|[experts 4 of 8 2880x2880 $(basename $bin)] |"
done
echo "all done at $SECONDS s"
