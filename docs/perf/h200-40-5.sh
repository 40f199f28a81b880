#!/bin/bash
# 40th session, call 5: the session's last commit on the H200: the quantized and counted-group
# test binaries under the validation layer (16-byte block loads on by default), and one token
# of q4_K / q5_K / q3_K decode again beside ggml. Carry as in h200-40-2.sh.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for bin in quantized grouped_counted; do
  start=$SECONDS
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/$bin --skip spirv_val > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | tail -6
done
for q in q4_K q5_K q3_K; do
  for pass in 1 2; do
    timeout 60 $B bench --types f16:f32 --weights $q --shapes 1x22016x4096,1x14336x4096 --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
  done
  grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$q] |"
done
echo "all done at $SECONDS s"
