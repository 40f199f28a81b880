#!/bin/bash
# Issue 12: integer grouped GEMMs leave the 256-row K-contiguous lead for the default of the
# other layouts (as f32 results do); checked exactly, timed against the previous binary's
# 3.24 ms (h200-grouped-4). f16 results: the default against the 128x128 tile, forced.
B=carry/vk-sgmat
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
timeout 150 $B gemm 3996 14336 4096 --groups $G --repeat 1 --layout nt --types i8:i32 2>&1 | grep -i "grouped\|vk-sgmat:"
timeout 150 $B gemm 3996 14336 4096 --groups $G --repeat 1 --layout nt --types u8:u32 --beta 1 2>&1 | grep -i "grouped\|vk-sgmat:"
for pass in prime measure; do
  N=2; [ $pass = measure ] && N=20
  for L in nn nt; do
    timeout 120 $B bench --groups $G --types i8:i32 --types f16:f16 --layout $L --reps $N 2>&1 | grep grouped | sed "s|^|$pass |"
    timeout 120 $B gemm 3996 14336 4096 --groups $G --types f16:f16 --layout $L --scheme wg_t128_fr8x8_k32_u8_a0_ct --repeat $N 2>&1 | grep grouped | sed "s|^|$pass forced |"
  done
done
