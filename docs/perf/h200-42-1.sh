#!/bin/bash
# 42nd session, call 1. Q6_K's codes regrouped by unit on upload (each unit of 32 values its
# own 16 bytes of low nibbles and 8 of high bit pairs, every field at a literal shift) against
# the binary before (the file's ql/qh layout): decode at one and eight tokens, small weights,
# and the 512-token prefill (its dequantizing pass reads the same layout), beside ggml-vulkan's
# mul_mat_vec / mul_mm in the same call; the quantized test binary under the validation layer
# first. Each binary's rounds in the order old, new, new, old.
B=$PWD/carry/vk-sgmat
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
GS="q6_K:22016x1x4096 q6_K:14336x1x4096 q6_K:22016x8x4096 q6_K:14336x8x4096 q6_K:4096x1x4096 q6_K:2048x1x2048 q6_K:22016x512x4096"
timeout 120 /tmp/g/ggml/mm_bench --min-time 0.4 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|nt |rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
S=1x22016x4096,1x14336x4096,8x22016x4096,8x14336x4096,1x4096x4096,1x2048x2048,512x22016x4096
for round in 1 2; do
  if [ $round = 1 ]; then order="$OLD $B"; else order="$B $OLD"; fi
  for bin in $order; do
    name=new; [ $bin = $OLD ] && name=old
    run "$name q6_K" $bin --types f16:f32 --weights q6_K --shapes $S
  done
done
echo "all done at $SECONDS s"
