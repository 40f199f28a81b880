#!/bin/bash
# 42nd session, call 2. Q4_K's and Q5_K's nibbles regrouped by unit on upload (each unit of 32
# values its own 16 bytes, a 32-value block's layout) and their scales by field (the scales'
# low bits, the minima's, then the top bits: every unit's at a run-time shift, no select),
# Q6_K's codes as in call 1; against the binary before the session: decode at one and eight
# tokens, small weights, the 512-token prefill, ggml-vulkan beside; the quantized, counted-group
# and matrix-vector test binaries under the validation layer first. Rounds old, new, new, old.
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
for q in q4_K q5_K; do
  for s in 22016x1x4096 14336x1x4096 22016x8x4096 14336x8x4096 4096x1x4096 2048x1x2048 22016x512x4096; do GS="$GS $q:$s"; done
done
timeout 150 /tmp/g/ggml/mm_bench --min-time 0.4 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
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
    for q in q4_K q5_K q6_K; do
      run "$name $q" $bin --types f16:f32 --weights $q --shapes $S
    done
  done
done
echo "all done at $SECONDS s"
