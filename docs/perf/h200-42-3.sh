#!/bin/bash
# 42nd session, call 3 (the session's decode kernels: Q2_K's and Q3_K's codes regrouped by unit
# too, Q3_K's scales by field; Q4_K, Q5_K and Q6_K as in call 2). Issue 47's whole decode table
# in one call beside ggml-vulkan's mul_mat_vec, the binary before the session for the K-quant
# formats, prefill at 512 tokens (q4_K, q8_0, our f16 weights, ggml's mul_mm); the test binaries
# under the validation layer first.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-before
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
for bin in quantized grouped_counted gemv; do
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/$bin --skip spirv_val --skip validates > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | head -6
done
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
GS=""
for q in q4_K q5_K q6_K q3_K q2_K q8_0 q4_0 mxfp4; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 200 /tmp/g/ggml/mm_bench --min-time 0.4 $GS f16:22016x512x4096 q4_K:22016x512x4096 q8_0:22016x512x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,8x22016x4096
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|nt |rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for q in q4_K q5_K q6_K q3_K q2_K q8_0 q4_0 mxfp4; do
  run "new $q" $B --types f16:f32 --weights $q --shapes $S
done
for q in q4_K q5_K q6_K q3_K q2_K; do
  run "old $q" $OLD --types f16:f32 --weights $q --shapes $S
done
echo "decode done at $SECONDS s"
for q in q4_K q8_0 q3_K q2_K; do
  run "new $q" $B --types f16:f32 --weights $q --shapes 512x22016x4096
done
run "new f16" $B --types f16:f32 --layout nt --shapes 512x22016x4096
echo "all done at $SECONDS s"
