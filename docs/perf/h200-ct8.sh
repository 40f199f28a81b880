#!/bin/bash
# Issue 12/13: the same in nt (where f16's 128x128 _ct once ran 5x slower), and the 64x64 tile
# (mid-size default) as it is and transposed at 1024^3 / 2048^3.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t256_fr16x16_k32_u8_a0,wg_t128_fr8x8_k32_u8_a0,wg_t128_fr4x4_k32_u2
for S in "32768 1024 128" "65536 128 2048" "4096 4096 4096"; do
  timeout 60 $B tune $S --types f16:f16 --layout nt --shape 16x16x16 --filter $F --reps 1 > /dev/null 2>&1
  echo "== f16:f16 nt $S"; timeout 60 $B tune $S --types f16:f16 --layout nt --shape 16x16x16 --filter $F --reps 10 2>&1 | grep -v "^\[" | grep wg_ | grep -v "_g8\|_a0_ct  *64\|u2_a0 "
done
G=wg_t128_fr4x4_k32_u2,wg_t128_fr8x8_k32_u8_a0_ct,sg1x2_fr2x2_k32_s32
for L in nn nt tn tt; do for S in "1024 1024 1024"; do
  timeout 60 $B tune $S --layout $L --shape 16x16x16 --filter $G --reps 1 > /dev/null 2>&1
  echo "== f16:f32 $L $S"; timeout 60 $B tune $S --layout $L --shape 16x16x16 --filter $G --reps 20 2>&1 | grep -v "^\[" | grep -E "wg_|sg" | grep -v "_g8\|u2_a0"
done; done
echo "== f16:f16 nn 1024^3"; timeout 60 $B tune 1024 1024 1024 --types f16:f16 --shape 16x16x16 --filter $G --reps 20 2>&1 | grep -v "^\[" | grep -E "wg_|sg" | grep -v "_g8\|u2_a0"
