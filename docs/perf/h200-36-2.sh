#!/bin/bash
# 36th session, call 2. Issue 47, prefill on quantized weights: the dense copy made in chunks
# of the weight's rows, each chunk's pass running beside the GEMM of the chunk before (no
# barrier between them), against one pass first. VK_SGMAT_DEQUANT_CHUNKS=c (an experiment
# switch of this build only) sets the chunks; our f16 weights and ggml-vulkan in the same call.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
timeout 200 $G --min-time 0.5 q4_K:22016x128x4096 q4_K:22016x512x4096 q8_0:22016x512x4096 q4_K:4096x512x4096 q4_K:14336x512x4096 q4_K:4096x512x11008 q4_K:22016x2048x4096 q8_0:22016x2048x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=32x22016x4096,128x22016x4096,512x22016x4096,2048x22016x4096,512x4096x4096,128x4096x4096,512x14336x4096,512x4096x11008
run() { # label env args
  local label=$1 env=$2; shift 2
  for pass in 1 2; do
    env $env timeout 120 $B bench "$@" --stream --reps 30 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -vE "^\[|^$" /tmp/b.txt | grep -E "[0-9]x[0-9]|rror|anic" | sed "s|^|[$label] |"
  done
}
run "f16 weights" X=1 --types f16:f32 --layout nt --shapes $S
for q in q4_K q8_0; do
  for c in 1 2 3 4 6 8; do
    run "$q chunks $c" VK_SGMAT_DEQUANT_CHUNKS=$c --types f16:f32 --weights $q --shapes $S
  done
done
for c in 1 4; do
  for q in q4_K q6_K; do
    VK_SGMAT_DEQUANT_CHUNKS=$c timeout 60 $B gemm 512 4099 4352 --weights $q --types f16:f32 --repeat 2 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check $c] |"
    VK_SGMAT_DEQUANT_CHUNKS=$c timeout 60 $B gemm 130 1031 4352 --weights $q --types f32:f32 --repeat 2 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check f32 $c] |"
  done
done
echo "all done at $SECONDS s"
