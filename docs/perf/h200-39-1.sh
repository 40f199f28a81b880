#!/bin/bash
# 39th session, call 1. Issue 47: grouped decode with the sizes on the device, tiles of 1, 2, 4
# or 8 rows of A per workgroup (`--gemv-group-rows`; before this session every group took a
# tile of all of A's rows), over routings of one and eight rows to eight experts of 14336x4096,
# dense f16 and q4_K, beside the same groups from the host; the quantized and counted-group test
# binaries under the validation layer (call 1 of the 38th session found the layer, 1.4.309,
# not knowing VK_KHR_shader_bfloat16, which the H200's driver offers).
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
# Routings of A's rows to the eight experts.
R="2:1,0,0,1,0,0,0,0 8:1,1,1,1,1,1,1,1 8:2,2,2,2,0,0,0,0 8:4,0,0,4,0,0,0,0 8:8,0,0,0,0,0,0,0"
for mg in $R; do
  m=${mg%%:*} g=${mg#*:}
  for rows in 1 2 4 8 host; do
    [ $rows != host ] && [ $rows -gt $m ] && continue
    where="--counts-on-device --gemv-group-rows $rows"
    [ $rows = host ] && where=""
    for pass in 1 2; do
      timeout 60 $B gemm $m 14336 4096 --layout nt --types f16:f32 --groups $g $where --repeat 20 > /tmp/g.txt 2>&1
    done
    grep -E "check|rror|anic" /tmp/g.txt | sed "s|^|[f16 $g rows $rows] |"
  done
done
echo "f16 done at $SECONDS s"
for mg in 2:1,0,0,1,0,0,0,0 8:1,1,1,1,1,1,1,1 8:2,2,2,2,0,0,0,0 8:4,0,0,4,0,0,0,0; do
  m=${mg%%:*} g=${mg#*:}
  for rows in 1 2 8; do
    [ $rows -gt $m ] && continue
    timeout 90 $B gemm $m 14336 4096 --weights q4_K --types f16:f32 --groups $g --counts-on-device --gemv-group-rows $rows --repeat 20 2>&1 | grep -E "median|rror|anic" | sed "s|^|[q4_K $g rows $rows] |"
  done
done
echo "all done at $SECONDS s"
