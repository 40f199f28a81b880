#!/bin/bash
# Needs the experiment, which is not in the tree: git apply docs/perf/h200-acc-1.patch (on 18cee7c).
# Issue 13 experiment: K-contiguous operands loaded as f16 accumulators, then converted (A) or
# transposed (B) to their use (VK_SGMAT_EXP=acc / acc-left / acc-right), against the plain
# tensor loads, 4096^3 f16->f32, a priming process first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
echo "== checks (EXP=acc)"
for L in nn nt tt; do
  for S in wg_t128_fr8x8_k32_u8_a0_ct wg_t128_fr8x8_k32_u8_a0; do
    VK_SGMAT_EXP=acc timeout 40 $B gemm 2049 1023 517 --layout $L --relayout off --scheme $S --alpha 2 --beta 0.5 --repeat 1 2>&1 | grep -iE "pass|fail|error|mismatch" | head -3 | sed "s|^|$L $S: |"
  done
done
F=wg_t128_fr8x8_k32_u8_a0,wg_t256_fr16x8_k64_u8_a0,wg_t256_fr8x16_k64_u8_a0
t() { E=$1; shift; echo "== EXP=$E $*"; VK_SGMAT_EXP=$E timeout 70 $B tune 4096 4096 4096 --shape 16x16x16 "$@" 2>&1 | grep -v "^\[" | grep -E "wg_|FAIL|rror" | head -8; }
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=10
  echo "#### $pass"
  for L in nn nt tn; do t none --layout $L --filter $F --reps $R; done
  for L in nn nt; do t acc --layout $L --filter $F --reps $R; done
  for E in acc-left acc-right; do t $E --layout nt --filter wg_t256_fr16x8_k64_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_ct --reps $R; done
done
