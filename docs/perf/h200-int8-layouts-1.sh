#!/bin/bash
# Issue 13 target 3 beyond `nt`: the int8 workgroup-scope tiles in every layout, and u8, against
# the subgroup-scope default, one call. A priming process per case first (cold workgroup-scope
# pipelines run slow in the process that compiles them), then the measuring one.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t256_fr16x8_k128_u8_a0_ct,wg_t128_fr8x8_k64_u8_a0_ct,wg_t256_fr8x16_k128_u8_a0,sg1x4_fr8x2_k64_s32_g8
CASES="i8:i32,tn i8:i32,nn i8:i32,tt i8:i32,nt u8:u32,nt u8:u32,tn"
for c in $CASES; do T=${c%,*}; L=${c#*,}
  timeout 100 $B tune 4096 4096 4096 --types $T --layout $L --shape 16x16x32 --filter $F --reps 1 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for c in $CASES; do T=${c%,*}; L=${c#*,}; echo "== $T 4096 $L"
  timeout 60 $B tune 4096 4096 4096 --types $T --layout $L --shape 16x16x32 --filter $F --reps 10 2>&1 | grep -v "^\[" | grep -E "wg_|sg1x4"; done
echo "measured at $SECONDS s"
timeout 90 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt 2>/dev/null
