#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 6: `vk-sgmat check --quick` (f16 -> f32) with the
# session's final binary, whole: every preferred lead (the new `nn` one included) on odd
# shapes in every layout, with alpha and beta, against the f64 reference.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 560 $B check --quick --types f16:f32 > $OUT/check.txt 2>&1; echo "rc $?"; tail -3 $OUT/check.txt
echo "check: $(grep -c ': ok$' $OUT/check.txt) ok; not ok: $(grep '^\[' $OUT/check.txt | grep -vc ': ok$')"; grep '^\[' $OUT/check.txt | grep -v ': ok$' | head -5
grep -c "wg_t256_fr8x16_k64_u16_a0_g8\]" $OUT/check.txt
echo "all done at $SECONDS s"
