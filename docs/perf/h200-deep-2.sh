#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 10: sixteen-step iterations (`_u16`) together with
# each step's right operand loaded first (`_rf`, +2-5% on the eight-step `nt` kernel in
# kernel-probe, h200-x-8.txt v8), every candidate against the current default, `tune --warm 1`
# (past the power limit's onset) with copies off (`--relayout off`: the kernels as they read
# the layout named), a priming process per list first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F_NT=wg_t256_fr16x8_k64_u8_a0_ct,wg_t256_fr16x8_k64_u8_a0_rf_ct,wg_t256_fr16x8_k64_u16_a0_ct,wg_t256_fr16x8_k64_u16_a0_rf_ct
F_TN=wg_t128_fr8x8_k32_u8_a0_g8_ct,wg_t128_fr8x8_k32_u8_a0_g8_rf_ct,wg_t128_fr8x8_k32_u16_a0_g8_ct,wg_t128_fr8x8_k32_u16_a0_g8_rf_ct
F_I8=wg_t256_fr16x8_k128_u8_a0_ct,wg_t256_fr16x8_k128_u16_a0_ct,wg_t256_fr16x8_k128_u16_a0_rf_ct
F_H=wg_t256_fr16x16_k32_u8_a0_ct,wg_t256_fr16x16_k32_u16_a0_ct,wg_t256_fr16x16_k32_u16_a0_rf_ct
LISTS="f16:f32,nt,$F_NT f16:f32,tn,$F_TN f16:f32,nn,$F_TN f16:f32,tt,$F_TN i8:i32,nt,$F_I8 f16:f16,nt,$F_H f16:f16,nn,$F_H"
for l in $LISTS; do IFS=, read T L rest <<< "$l"; F=${l#*,*,}
  timeout 120 $B tune 2048 2048 2048 --types $T --layout $L --filter $F --reps 3 --warm 0 --relayout off > /dev/null 2>&1
done
echo "primed at $SECONDS s"
t() { # types layout filter M N K
  timeout 120 $B tune $4 $5 $6 --types $1 --layout $2 --filter $3 --reps 20 --warm 1 --relayout off 2>&1 | grep -E '^16x16' | sed "s|^|$1 $2 $4x$5x$6 |"
}
for S in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192" "4096 11008 4096"; do t f16:f32 nt $F_NT $S; done
for S in "2048 2048 2048" "4096 4096 4096" "8192 8192 8192"; do t f16:f32 tn $F_TN $S; done
for S in "2048 2048 2048" "4096 4096 4096"; do t f16:f32 nn $F_TN $S; t f16:f32 tt $F_TN $S; done
t i8:i32 nt $F_I8 4096 4096 4096
t f16:f16 nt $F_H 4096 4096 4096
t f16:f16 nn $F_H 4096 4096 4096
echo "all done at $SECONDS s"
