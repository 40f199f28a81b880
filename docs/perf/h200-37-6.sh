#!/bin/bash
# 37th session, call 6. Call 5's dedicated memory fixed q8_0 and q6_K at 512 tokens but not q4_K,
# whose 51 MB weight stays in a shared block and pushes the activations and C to offsets that are
# not a multiple of 2 MiB. An experiment build (carry/vk-sgmat-x): device buffers of 2 MiB or more
# start on a 2 MiB boundary (off with VK_SGMAT_XA), those of 64 MiB or more get their own memory
# (off with VK_SGMAT_XD); ggml-vulkan's mul_mm in the same call.
B=$PWD/carry/vk-sgmat-x
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
timeout 200 /tmp/g/ggml/mm_bench --min-time 0.5 q4_K:22016x512x4096 q8_0:22016x512x4096 q4_K:22016x2048x4096 q8_0:22016x2048x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=512x22016x4096,2048x22016x4096
run() { # label env args
  local label=$1 env=$2; shift 2
  for pass in 1 2; do
    env $env timeout 150 $B bench "$@" --stream --reps 30 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "steps|[0-9]x[0-9].*(wg_|sg|gemv)|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
run "f16 weights, aligned + own" X=1 --types f16:f32 --layout nt --shapes $S --trace
for q in q4_K q8_0; do
  run "$q aligned + own" X=1 --types f16:f32 --weights $q --shapes $S --trace
  run "$q aligned only" VK_SGMAT_XD=1 --types f16:f32 --weights $q --shapes $S --trace
  run "$q neither" "VK_SGMAT_XD=1 VK_SGMAT_XA=1" --types f16:f32 --weights $q --shapes $S --trace
done
run "square aligned only" VK_SGMAT_XD=1 --types f16:f32 --layout nn,nt --shapes 4096x4096x4096
echo "all done at $SECONDS s"
