#!/bin/bash
# Issue 13 target 3: int8 on the workgroup-scope kernel computed transposed, against the
# subgroup-scope default and cuBLAS's int8 TN kernel (B column-major: layout nt), one call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t128_fr8x8_k64_u8_a0,wg_t256_fr16x8_k128_u8_a0,wg_t256_fr8x16_k128_u8_a0,wg_t256_fr16x8_k128_u4,wg_t128_fr8x8_k128_u8_a0,sg1x4_fr8x2_k64
for L in nt nn; do timeout 150 $B tune 4096 4096 4096 --types i8:i32 --layout $L --filter $F --reps 1 > /dev/null 2>&1; done
for L in nt nn; do echo "== i8 4096 $L"; timeout 120 $B tune 4096 4096 4096 --types i8:i32 --layout $L --filter $F --reps 10 2>&1 | grep -v "^\[" | grep -E "wg_|sg1x4"; done
timeout 90 python3 scripts/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt 2>/dev/null
timeout 90 python3 scripts/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nn 2>/dev/null
