#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 9: f16 -> f16 (target 2 asks 0.65x cuBLAS; call 8:
# 0.54-0.63). Its lead is still the 256x256 tile in eight 64-byte steps, left first, chosen
# before the sixteen-step right-first loops and sizes built in. Every scheme by `bench --scheme`
# at 4096^3 and 8192^3, `nt` and `nn` in place (sizes built in by default there), two
# interleaved passes, own timestamps, cuBLAS's f16 output in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=4096x4096x4096,8192x8192x8192
timeout 100 python3 carry/cublas_reference.py --types f16:f16 --shapes $S --layout nn > /tmp/cublas-f16.jsonl 2> /dev/null
timeout 100 python3 carry/cublas_reference.py --types f16:f16 --shapes $S --layout nt >> /tmp/cublas-f16.jsonl 2> /dev/null
NT="wg_t256_fr16x16_k32_u16_a0_rf_ct wg_t256_fr16x16_k32_u16_a0_g8_rf_ct wg_t256_fr16x16_k32_u8_a0_rf_ct wg_t256_fr16x16_k64_u16_a0_rf_ct wg_t256_fr16x8_k64_u16_a0_g8_rf_ct"
NN="wg_t256_fr16x16_k32_u16_a0_rf_ct wg_t256_fr16x16_k32_u16_a0_g8_rf_ct wg_t256_fr16x16_k32_u16_a0_g8 wg_t256_fr16x8_k64_u16_a0_g8_rf_ct"
b() { timeout 100 $B bench --types f16:f16 --shapes $S --reps 20 --cublas /tmp/cublas-f16.jsonl "$@" 2>&1 | grep -E '^f16|rror' | sed "s|^|$P |"; }
P=prime; b --layout nt --reps 2 --warm 0 > /dev/null; b --layout nn --reps 2 --warm 0 > /dev/null
for s in $NT; do b --layout nt --scheme $s --reps 2 --warm 0 > /dev/null; done
for s in $NN; do b --layout nn --relayout off --scheme $s --reps 2 --warm 0 > /dev/null; done
echo "primed at $SECONDS s"
for P in p1 p2; do
  b --layout nt; for s in $NT; do b --layout nt --scheme $s; done
  b --layout nn; for s in $NN; do b --layout nn --relayout off --scheme $s; done
done
echo "all done at $SECONDS s"
