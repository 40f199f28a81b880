#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 4: `tt` in place on the `nt` leads at every size
# (api::schemes, LeadLayouts::BColumnMajor; until now B was copied into `tn` order over 2048^2).
# (1) `gemm` against the f64 reference on `tt` in place (edges, alpha/beta, bf16, K whole and
# not). (2) `nn` at 4096^3 and 8192^3: the lead in place (128x256 computed transposed) against
# the same tile not computed transposed, in place, and the copy into `tn` order; three
# interleaved passes. (3) The peers table (peers.sh).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4097 4095 4096 --layout tt --alpha 2 --beta 0.5
g 8192 8192 8192 --layout tt --types bf16:f32
g 4096 4096 3000 --layout tt
g 3000 5000 2048 --layout tt --beta 1
echo "gemm checks done at $SECONDS s"
S=4096x4096x4096,8192x8192x8192
b() { timeout 100 $B bench --types f16:f32 --shapes $S --reps 20 --layout nn "$@" 2>&1 | grep -E '^f16|rror' | sed "s|^|$P |"; }
NN0="--relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8_rf_ct"
NN1="--relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8"
P=prime; for a in "$NN0" "$NN1" "--relayout on"; do b $a --reps 2 --warm 0 > /dev/null; done
for P in p1 p2 p3; do b $NN0; b $NN1; b --relayout on; done
echo "nn done at $SECONDS s"
source docs/perf/peers.sh
echo "all done at $SECONDS s"
