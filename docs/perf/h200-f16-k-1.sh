#!/bin/bash
# Issue 13: does f16's K-contiguous lead (256x128, 512-deep iterations) pay where K is not a
# whole number of its iterations but long (the tail a small share)? `tune` nt, a priming pass.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t256_fr16x8_k64_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_ct
S="4096x4096x11008 4096x4096x6000 4096x4096x5000 4096x11008x11008"
for pass in prime measure; do
  R=1; [ $pass = measure ] && R=10
  for s in $S; do read M N K <<< "${s//x/ }"
    out=$(timeout 120 $B tune $M $N $K --types f16:f32 --shape 16x16x16 --layout nt --filter $F --reps $R 2>&1)
    [ $pass = measure ] && { echo "== f16:f32 $s nt"; echo "$out" | grep -v "^\[" | grep -E "wg_"; }
  done
  echo "$pass done at $SECONDS s"
done
