#!/bin/bash
# 36th session, call 4. Issue 47: quantized experts' groups side by side in one plan (every
# group's copy or activation rounding first, one barrier, every group's GEMM), against call
# 3's figures (groups one after another); the quantized test binary under the validation layer.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound" /tmp/test.log | head -8
q_moe() { # label M groups weights
  local label=$1 m=$2 g=$3 q=$4
  for pass in 1 2; do
    timeout 120 $B gemm $m 14336 4096 --weights $q --groups $g --types f16:f32 --repeat 20 > /tmp/q.txt 2>&1
    [ $pass = 2 ] && grep -vE "^device" /tmp/q.txt | sed "s|^|[$label $q] |"
  done
}
for q in q4_K; do
  q_moe prefill 3996 1200,900,700,500,400,200,60,36 $q
  q_moe "decode 1 token" 2 1,0,0,0,1,0,0,0 $q
  q_moe "decode 8 tokens" 16 3,2,2,1,3,2,2,1 $q
done
echo "all done at $SECONDS s"
