#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 3: call 2 (an H100) found `nn` in place fastest on
# the 128x256 tile NOT computed transposed, and `tt` in place on the `nt` lead (256x128
# computed transposed, right first), with sizes built in. Here against the defaults over
# 2048^3..8192^3 and 4096x11008x4096, three interleaved passes, own timestamps; non-transposed
# right-first now a tuning candidate.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096
NN1="--relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8"
NN2="--relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8_rf"
TT1="--relayout off --scheme wg_t256_fr16x8_k64_u16_a0_g8_rf_ct"
b() { timeout 100 $B bench --types f16:f32 --shapes $S --reps 20 "$@" 2>&1 | grep -E '^f16|rror' | sed "s|^|$P |"; }
P=prime; for a in "$NN1" "$NN2" "--relayout on" ""; do b --layout nn $a --reps 2 --warm 0 > /dev/null; done
for a in "$TT1" ""; do b --layout tt $a --reps 2 --warm 0 > /dev/null; done; b --layout nt --reps 2 --warm 0 > /dev/null
echo "primed at $SECONDS s"
for P in p1 p2 p3; do
  b --layout nn; b --layout nn $NN1; b --layout nn $NN2; b --layout nn --relayout on
  b --layout tt; b --layout tt $TT1; b --layout nt
done
echo "all done at $SECONDS s"
