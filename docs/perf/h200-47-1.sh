#!/bin/bash
# 47th session, call 1. Issue 47 prefill: the dequantizing pass with every word of a tile's
# blocks loaded before the first is staged ($B; the binary before the session, 00cd62a, as
# $OLD, looped one load after another), and the same with up to 65535 workgroups, one tile each
# at these sizes ($G; 8192 before), each dispatch timed apart (`bench --trace`) at 32, 512 and
# 2048 tokens of 22016x4096 q4_K / q8_0 / q6_K weights and 512 of 4096x4096, beside our f16
# weights and ggml-vulkan's mul_mm (512 tokens). Then the loops' entry blocks taken from the block being
# built (no label-only blocks; GEMM and decode SPIR-V changed, not their instructions): square
# GEMMs and decode, $B against $OLD. Then the quantized and gemv tests under the validation layer.
source docs/perf/lib.sh
G=$PWD/carry/vk-sgmat-g
gpu_line
ggml --min-time 0.25 f16:22016x512x4096 q4_K:22016x512x4096 q8_0:22016x512x4096
echo "ggml done at $SECONDS s"
S=32x22016x4096,512x22016x4096,2048x22016x4096,512x4096x4096
trace() { # label binary args: the second of two processes, its dispatches timed apart
  local label=$1 bin=$2
  shift 2
  for pass in 1 2; do
    timeout 100 $bin bench "$@" --stream --reps 30 --warm 0.3 --trace > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "^steps|weights nt|nt  |rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
trace "f16" $B --types f16:f32 --layout nt --shapes $S
for q in q4_K q8_0 q6_K; do
  trace "$q" $B --types f16:f32 --weights $q --shapes $S
  trace "$q before" $OLD --types f16:f32 --weights $q --shapes $S
  [ $q != q6_K ] && trace "$q g" $G --types f16:f32 --weights $q --shapes $S
  echo "$q done at $SECONDS s"
done
D=1x22016x4096,8x22016x4096
bench2 "decode" $B --types f16:f32 --weights q4_K --shapes $D
bench2 "decode before" $OLD --types f16:f32 --weights q4_K --shapes $D
echo "ours done at $SECONDS s"
validation_tests quantized gemv
Q=4096x4096x4096,8192x8192x8192,512x12288x4096
bench2 "square" $B --types f16:f32 --layout nt --shapes $Q
bench2 "square before" $OLD --types f16:f32 --layout nt --shapes $Q
echo "all done at $SECONDS s"
