#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 5: `nn` and `tt` in place on the 128x256 tile
# (`wg_t256_fr8x16_k64_u16_a0_g8_rf_ct`, and for `tt` also in rows) against the default (a copy
# into `tn` order, then the 128x128 lead), where that copy is taken today (M, N >= 4096, K >=
# 1024). `tune` put `nn` in place at 4096^3 at 292 (perf/h200-z-3.txt) and `bench` at 292-295
# against 284-292 for the default (h200-z-4.txt). `bench`, own timestamps and as a stream.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=4096x4096x2048,4096x4096x4096,4096x8192x4096,8192x4096x4096,4096x11008x4096
A=wg_t256_fr8x16_k64_u16_a0_g8_rf_ct
R=wg_t256_fr8x16_k64_u16_a0_rf_ct
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "verify|rror" | sed "s|^|[$*] |"; }
g 4097 4095 4096 --layout nn --relayout off --scheme $A --beta 0.5
g 4096 8192 4096 --layout tt --relayout off --scheme $A
for L in nn tt; do
  timeout 60 $B bench --types f16:f32 --shapes $S --layout $L --reps 2 --warm 0 > /dev/null 2>&1
  timeout 60 $B bench --types f16:f32 --shapes $S --layout $L --relayout off --scheme $A --reps 2 --warm 0 > /dev/null 2>&1
done
timeout 60 $B bench --types f16:f32 --shapes $S --layout tt --relayout off --scheme $R --reps 2 --warm 0 > /dev/null 2>&1
echo "primed at $SECONDS s"
for how in "own" "stream --stream"; do read name flags <<< "$how"
  for L in nn tt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 $flags 2>&1 | grep -E '^f16' | sed "s|^|$name $L-default |"
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --relayout off --scheme $A --reps 20 $flags 2>&1 | grep -E '^f16' | sed "s|^|$name $L-g8 |"
  done
  timeout 100 $B bench --types f16:f32 --shapes $S --layout tt --relayout off --scheme $R --reps 20 $flags 2>&1 | grep -E '^f16' | sed "s|^|$name tt-rows |"
done
echo "all done at $SECONDS s"
