#!/bin/bash
# 40th session, call 1. Issue 47: decode reading the blocks 16 bytes at a time where every
# block starts on 16 bytes (`GemmOptions::gemv_wide_loads`, default on: q4_K 144 bytes, q5_K
# 176, q3_K 112 as the device holds it), against 32-bit loads (`--gemv-wide-loads off`, what
# main did) in the same binary, ggml-vulkan's mul_mat_vec beside; grouped decode of q4_K
# experts both ways; the quantized test binary under the validation layer first.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | tail -6
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
GS=""
for q in q4_K q5_K q3_K; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 150 /tmp/g/ggml/mm_bench --min-time 0.5 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,8x22016x4096
# Each process quantizes its weights on the CPU; pass 1 creates the pipelines, pass 2 reports.
for q in q4_K q5_K q3_K; do
  for wide in auto off auto; do
    for pass in 1 2; do
      timeout 90 $B bench --types f16:f32 --weights $q --shapes $S --stream --reps 50 --warm 0.3 --gemv-wide-loads $wide > /tmp/b.txt 2>&1
    done
    grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$q wide $wide] |"
  done
  echo "$q at $SECONDS s"
done
for g in 1,0,0,1,0,0,0,0 1,1,1,1,1,1,1,1; do
  for wide in auto off; do
    m=$(( $(echo $g | tr , +) ))
    timeout 60 $B gemm $m 14336 4096 --weights q4_K --types f16:f32 --groups $g --counts-on-device --gemv-wide-loads $wide --repeat 20 2>&1 | grep -E "gemv|median|rror|anic" | sed "s|^|[experts q4_K $g wide $wide] |"
  done
done
echo "all done at $SECONDS s"
