#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 1: `nn` in place at 2048^3 and 4096^3 (both
# short of 1.05x ggml) over the sixteen-step tiles in every form `tune` now lists: each step's
# right operand loaded first also where the tile is not computed transposed, and the
# right-first transposed forms also on walks of 4 and 16 tile rows. `tune --warm 1 --relayout
# off`, after a priming pass that compiles every pipeline. Then `check --quick` (f16 -> f32),
# whose extras include the `nn` in-place lead since 43ed167.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
F=wg_t256_fr8x16_k64_u16_a0,wg_t256_fr16x8_k64_u16_a0,wg_t128_fr8x8_k32_u16_a0
t() { timeout 200 $B tune "$@" --relayout off ${W:---warm 1 --reps 20} 2>&1 | grep -E "^16x16|rror" | sed "s|^|$1x$2x$3 $5 |"; }
W="--warm 0 --reps 1" t 4096 4096 4096 --layout nn --filter $F > /dev/null
echo "primed at $SECONDS s"
t 4096 4096 4096 --layout nn --filter $F
echo "4096 done at $SECONDS s"
t 2048 2048 2048 --layout nn --filter $F
echo "2048 done at $SECONDS s"
t 4096 4096 4096 --layout nn --filter wg_t256_fr8x16_k64_u16_a0 | sed 's/^/again /'
echo "tune done at $SECONDS s"
timeout 150 $B check --quick --types f16:f32 > /tmp/check.txt 2>&1; tail -2 /tmp/check.txt
echo "check: $(grep -c ': ok$' /tmp/check.txt) ok; not ok: $(grep '^\[' /tmp/check.txt | grep -vc ': ok$')"; grep '^\[' /tmp/check.txt | grep -v ': ok$' | head -5
grep 'fr8x16_k64_u16_a0_g8_rf_ct\]' /tmp/check.txt | tail -2
echo "all done at $SECONDS s"
