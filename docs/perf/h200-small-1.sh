#!/bin/bash
# Issue 13, small shapes: which workgroup-scope tile and split-K are fastest at 1024^3 and
# 2048^3 in nn and nt (a priming tune first: fresh pipelines run slowly in the process that
# compiles them), ggml-vulkan's figures in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== ggml-vulkan (coopmat2, its layout nt)"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.6 f16:1024x1024x1024 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan')
C1024=wg_t128_fr4x4_k32_u2_ct,wg_t128_fr4x4_k32_u4_a0_ct,wg_t128_fr4x4_k32_u8_a0_ct,wg_t128_fr4x4_k64_u2_ct,wg_t128_fr4x4_k64_u4_a0_ct,wg_t128_fr4x4_k64_u8_a0_ct,wg_t64_fr4x4_k32_u8_a0_ct,wg_t64_fr4x4_k64_u4_a0_ct,wg_t32_fr4x4_k32_u8_a0_ct,wg_t64_fr4x8_k32_u8_a0_ct,wg_t64_fr8x4_k32_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_ct,wg_t256_fr8x8_k32_u8_a0_ct,wg_t256_fr16x8_k64_u8_a0_ct
C2048=wg_t128_fr8x8_k32_u8_a0_ct,wg_t128_fr8x8_k64_u8_a0_ct,wg_t128_fr8x8_k32_u4_a0_ct,wg_t256_fr8x8_k32_u8_a0_ct,wg_t256_fr8x8_k64_u8_a0_ct,wg_t256_fr16x8_k64_u8_a0_ct,wg_t256_fr16x8_k32_u8_a0_ct,wg_t128_fr4x4_k32_u8_a0_ct,wg_t128_fr4x4_k64_u8_a0_ct,wg_t64_fr4x8_k32_u8_a0_ct
for pass in prime measure; do
  for L in nn nt; do
    R=3; [ $pass = measure ] && R=30
    echo "== tune 1024^3 $L ($pass)"
    timeout 150 $B tune 1024 1024 1024 --layout $L --shape 16x16x16 --reps $R --filter $C1024 2>&1 | grep -v '^\['
    echo "== tune 2048^3 $L ($pass)"
    timeout 150 $B tune 2048 2048 2048 --layout $L --shape 16x16x16 --reps $R --filter $C2048 2>&1 | grep -v '^\['
  done
done
echo "== bench: forced split-K on the 128x128 and 256x128 tiles"
for L in nn nt; do
  for S in 1 2 4; do
    timeout 60 $B bench --types f16:f32 --shapes 1024x1024x1024,2048x2048x2048 --layout $L --split-k $S --scheme wg_t128_fr8x8_k32_u8_a0_ct --reps 30 2>&1 | grep -v '^\[\|^device'
  done
  timeout 60 $B bench --types f16:f32 --shapes 1024x1024x1024,2048x2048x2048 --layout $L --reps 30 2>&1 | grep -v '^\[\|^device'
done
