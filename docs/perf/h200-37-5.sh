#!/bin/bash
# 37th session, call 5. Device buffers of 64 MB or more in memory of their own (calls 1-4 found
# the GEMM on a dequantized copy in a pooled buffer 16% slower at 2048 tokens): quantized
# prefill (each dispatch timed apart) beside ggml-vulkan's mul_mm in the same call; our f16
# weights, square GEMMs and decode, to see that nothing else moved; the MoE layer in `nt` on
# forced 128x128 tiles (bench --groups now takes --scheme); quantized experts' prefill. The
# binary before the change (carry/vk-sgmat-old, ef9b082) beside it where marked "before".
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
timeout 200 $G --min-time 0.5 f16:22016x512x4096 q4_K:22016x512x4096 q8_0:22016x512x4096 q6_K:22016x512x4096 q4_K:22016x2048x4096 q8_0:22016x2048x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=512x22016x4096,2048x22016x4096
run() { # label args
  local label=$1; shift
  for pass in 1 2; do
    timeout 150 $B bench "$@" --stream --reps 30 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "steps|[0-9]x[0-9].*(wg_|sg|gemv)|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
run "f16 weights" --types f16:f32 --layout nt --shapes $S --trace
for q in q4_K q8_0 q6_K; do
  run "$q" --types f16:f32 --weights $q --shapes $S --trace
done
B=$OLD run "q4_K before" --types f16:f32 --weights q4_K --shapes $S --trace
B=$OLD run "q8_0 before" --types f16:f32 --weights q8_0 --shapes $S --trace
run "square nn" --types f16:f32 --layout nn --shapes 4096x4096x4096,8192x8192x8192
run "square nt" --types f16:f32 --layout nt --shapes 4096x4096x4096,8192x8192x8192
run "decode f16" --types f16:f32 --layout nt --shapes 1x22016x4096,8x22016x4096
run "decode q4_K" --types f16:f32 --weights q4_K --shapes 1x22016x4096,8x22016x4096
G8=1200,900,700,500,400,200,60,36
moe() { # label args
  local label=$1; shift
  for pass in 1 2; do
    timeout 120 $B bench --groups $G8 --types f16:f32 --reps 20 "$@" > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "grouped|rror|anic" /tmp/b.txt | head -3 | sed "s|^|[$label] |"
  done
}
moe "moe nn" --layout nn
moe "moe nt" --layout nt
for s in wg_t128_fr8x8_k32_u16_a0_g8_rf_ct wg_t128_fr8x8_k32_u8_a0_g8_ct wg_t128_fr4x4_k64_u2_ct; do
  moe "moe nt $s" --layout nt --scheme $s
done
for b in $B $OLD; do for pass in 1 2; do
  timeout 150 $b gemm 3996 14336 4096 --weights q4_K --groups $G8 --types f16:f32 --repeat 20 > /tmp/q.txt 2>&1
  [ $pass = 2 ] && grep -E "ms|rror|anic|verified" /tmp/q.txt | head -4 | sed "s|^|[experts q4_K $(basename $b)] |"
done; done
echo "all done at $SECONDS s"
