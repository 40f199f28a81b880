#!/bin/bash
# Issue 12: f16 results at attention shapes (batch 32 folded into M: the same tiles and K), the
# 256x256 f16 default against 128x128, each as it is and transposed; f32 results beside.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t256_fr16x16_k32_u8_a0,wg_t128_fr8x8_k32_u8_a0,wg_t128_fr4x4_k32_u2
for S in "32768 1024 128" "65536 2048 128" "65536 128 2048" "4096 4096 4096"; do
  timeout 60 $B tune $S --types f16:f16 --shape 16x16x16 --filter $F --reps 1 > /dev/null 2>&1
  echo "== f16:f16 $S"; timeout 60 $B tune $S --types f16:f16 --shape 16x16x16 --filter $F --reps 10 2>&1 | grep -v "^\[" | grep wg_
done
for S in "32768 1024 128" "65536 128 2048"; do
  echo "== f16:f32 $S"; timeout 60 $B tune $S --types f16:f32 --shape 16x16x16 --filter $F --reps 10 2>&1 | grep -v "^\[" | grep wg_
done
