#!/bin/bash
# 38th session, call 1. Issue 47: decode on quantized weights with invocations sharing a row
# of W, each a whole 256 values (a K format's block, its scales at positions known when the
# kernel is made) per step (`--gemv-lanes`, `_l16` kernels), against the binary before (every
# invocation along each row, a unit of 32 a step), ggml-vulkan's mul_mat_vec in the same call,
# and the lanes/rows-per-invocation choices; dense f16 experts' decode with the sizes on the
# device (now the matrix-vector kernel, before the grouped GEMM) beside the same groups from the
# host; the quantized test binary under the validation layer. Quantized experts: call 2.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound" /tmp/test.log | head -8
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
GS=""
for q in q4_K q5_K q6_K q3_K q2_K q8_0 q4_0 mxfp4; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
timeout 240 $G --min-time 0.5 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,8x22016x4096
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for q in q4_K q6_K q8_0 q4_0 mxfp4 q5_K q3_K q2_K; do
  run "old $q" $OLD --types f16:f32 --weights $q --shapes $S
  run "new $q" $B --types f16:f32 --weights $q --shapes $S
done
echo "formats done at $SECONDS s"
for q in q4_K q8_0 q6_K; do
  run "l16 r2 $q" $B --types f16:f32 --weights $q --shapes $S --gemv-lanes 16 --gemv-cols 16
  # Four rows an invocation: 8 tokens would hold 256 sums, over the kernel's 128.
  run "l16 r4 $q" $B --types f16:f32 --weights $q --shapes 1x22016x4096,1x14336x4096 --gemv-lanes 16 --gemv-cols 32
  run "l32 r1 $q" $B --types f16:f32 --weights $q --shapes $S --gemv-lanes 32 --gemv-cols 4
  run "l64 r1 $q" $B --types f16:f32 --weights $q --shapes $S --gemv-lanes 64 --gemv-cols 2
done
# Dense f16 experts (uploaded as they are: quick); the quantized ones are call 2's (quantizing
# eight 14336x4096 experts on the CPU takes about 40 s a process).
for bin in $OLD $B; do
  for mg in 2:1,0,0,1,0,0,0,0 8:1,1,1,1,1,1,1,1; do
    m=${mg%%:*} g=${mg#*:}
    for where in "" --counts-on-device; do
      timeout 60 $bin gemm $m 14336 4096 --layout nt --types f16:f32 --groups $g $where --repeat 20 > /dev/null 2>&1
      timeout 60 $bin gemm $m 14336 4096 --layout nt --types f16:f32 --groups $g $where --repeat 20 2>&1 | grep -E "groups|median|rror|anic" | sed "s|^|[experts f16 $(basename $bin) $g $where] |"
    done
  done
done
for m in 1 8; do
  timeout 60 $B gemm $m 4099 4096 --weights q4_K --types f16:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check $m] |"
done
echo "all done at $SECONDS s"
