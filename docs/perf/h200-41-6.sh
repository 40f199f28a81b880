#!/bin/bash
# 41st session, call 6. Issue 47: decode at small sizes (gpt-oss's 2880x2880, 4096x4096 and
# 2048x2048, one token), where the pass that rounds the activations to 8 bits is a dispatch of
# its own before the kernel: the 8-bit path (default) against f16 activations read as they are
# (`--int8-activations off`, each weight dequantized in f32), and the rows of weights per
# workgroup (`--gemv-cols 2 | 8`), ggml-vulkan beside.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
GS=""
for q in q4_K q8_0 mxfp4 q6_K q4_0; do GS="$GS $q:2880x1x2880 $q:4096x1x4096 $q:2048x1x2048"; done
timeout 120 /tmp/g/ggml/mm_bench --min-time 0.3 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
echo "ggml done at $SECONDS s"
S=1x2880x2880,1x4096x4096,1x2048x2048
run() { # label binary args
  local label=$1 bin=$2; shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for q in q4_K q8_0 mxfp4 q6_K q4_0; do
  run "x8 $q" $B --types f16:f32 --weights $q --shapes $S
  run "f16 $q" $B --types f16:f32 --weights $q --shapes $S --int8-activations off
  for c in 2 8; do
    run "x8 cols $c $q" $B --types f16:f32 --weights $q --shapes $S --gemv-cols $c
  done
done
echo "all done at $SECONDS s"
