#!/bin/bash
# Issue 13, 2026-11-26, call 2. The `nt` default (256x128 tiles of C) loses speed as N grows
# (4096 -> 8192 -> 11008 in h200-int8-k1024-1.txt: 279, 266, 259 TFLOP/s) while ggml-vulkan holds
# 281-285. ggml walks its grid along M first; ours walks along N. (1) ggml on the transposed
# shapes (its walk then runs along the long side), (2) our kernels with grouped rasters
# (_gG: groups of G tile rows walked column by column; G = 16 walks all of M = 4096 first),
# from an experimental build whose candidates carry them (carry/vk-sgmat-exp).
# (3) int8 `nt` at K = 512 and 768, below the lists' reach.
B=carry/vk-sgmat-exp
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 f16:4096x4096x4096 f16:4096x8192x4096 f16:8192x4096x4096 f16:4096x11008x4096 f16:11008x4096x4096 f16:8192x8192x8192 2>&1 | grep '^ggml-vulkan')
NT=wg_t256_fr16x8_k64_u8_a0_ct,wg_t256_fr16x8_k64_u8_a0_g4_ct,wg_t256_fr16x8_k64_u8_a0_g8_ct,wg_t256_fr16x8_k64_u8_a0_g16_ct
SQ=wg_t128_fr8x8_k32_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_g4_ct,wg_t128_fr8x8_k32_u8_a0_g8_ct,wg_t128_fr8x8_k32_u8_a0_g16_ct
timeout 100 $B tune 2048 2048 2048 --layout nt --shape 16x16x16 --filter $NT,$SQ --reps 1 > /dev/null 2>&1
echo "prime done at $SECONDS s"
for c in nt:$NT tn:$SQ nn:$SQ; do IFS=: read L F <<< "$c"
  for S in 4096x4096x4096 4096x8192x4096 4096x11008x4096 11008x4096x4096 2048x2048x2048 8192x8192x8192; do
    read M N K <<< "${S//x/ }"
    echo "== f16:f32 $S $L"
    timeout 60 $B tune $M $N $K --layout $L --shape 16x16x16 --filter $F --reps 10 2>&1 | grep -E "^16x16x16" | awk '{print "   ", $3, $(NF-1), $NF}'
  done
done
echo "f16 done at $SECONDS s"
FI=wg_t128_fr8x8_k64_u8_a0_ct,wg_t128_fr8x8_k64_u4_ct,wg_t128_fr8x8_k64_u2_ct,wg_t128_fr4x4_k128_u2_ct,wg_t128_fr4x4_k64_u2_ct,sg1x4_fr8x2_k64_s32
timeout 100 $B tune 1024 1024 512 --types i8:i32 --shape 16x16x32 --layout nt --filter $FI --reps 1 > /dev/null 2>&1
for S in 4096x4096x512 4096x4096x768 2048x2048x512 1024x1024x512; do
  read M N K <<< "${S//x/ }"
  echo "== i8:i32 $S nt"
  timeout 60 $B tune $M $N $K --types i8:i32 --shape 16x16x32 --layout nt --filter $FI --reps 10 2>&1 | grep -E "^16x16x32" | grep -v "_g[0-9]" | awk '{print "   ", $3, $(NF-1), $NF}'
done
echo "all done at $SECONDS s"
