#!/bin/bash
# Issue 13: would the K-contiguous lead pay where K is not a whole number of its iterations
# (int8 K = 11008, 4000; f16 K = 4000), and a 64x64 workgroup-scope tile for int8's small grids?
# `tune`, every result checked, a priming process per case first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
FI=wg_t256_fr16x8_k128_u8_a0_ct,wg_t128_fr8x8_k64_u8_a0_ct,sg1x4_fr8x2_k64_s32
FS=wg_t128_fr4x4_k128_u2,wg_t128_fr8x8_k64_u8_a0_ct,wg_t256_fr16x8_k128_u8_a0_ct,sg2x4_fr2x2_k64_s32,sg1x4_fr8x2_k64_s32
FF=wg_t256_fr16x8_k64_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_ct
CASES="i8:i32:$FI:4096x4096x11008 i8:i32:$FI:4096x4096x4000 i8:i32:$FS:1024x1024x4096 i8:i32:$FS:2048x2048x4096 f16:f32:$FF:4096x4096x4000 f16:f32:$FF:4096x11008x4000"
for pass in prime measure; do
  R=1; [ $pass = measure ] && R=10
  for c in $CASES; do IFS=: read T1 T2 F S <<< "$c"; read M N K <<< "${S//x/ }"
    [ $pass = measure ] && echo "== $T1:$T2 $S nt"
    SH=16x16x32; [ $T1 = f16 ] && SH=16x16x16
    out=$(timeout 150 $B tune $M $N $K --types $T1:$T2 --shape $SH --layout nt --filter $F --reps $R 2>&1)
    [ $pass = measure ] && echo "$out" | grep -v "^\[" | grep -E "wg_|sg[12]x"
  done
  echo "$pass done at $SECONDS s"
done
