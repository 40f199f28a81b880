#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 5: the session's final binary (9b9d20f: `tt` in
# place on the `nt` leads at every size; `nn` from 8192^2 in place on the 128x256 tile not
# transposed). (1) `gemm` against the f64 reference on the new `nn` lead (edges, alpha/beta,
# bf16, K whole and not). (2) `nn` at 4096^3: the transposed tile in place (the default),
# the untransposed one in place, and the copy into `tn` order, by own timestamps and as a
# stream, three interleaved passes. (3) The peers table (peers.sh).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 8193 8191 8192 --layout nn --alpha 2 --beta 0.5
g 8192 8192 8192 --layout nn --types bf16:f32
g 16384 8192 2048 --layout nn --beta 1
g 8192 8192 3000 --layout nn
echo "gemm checks done at $SECONDS s"
b() { timeout 100 $B bench --types f16:f32 --shapes 4096x4096x4096 --reps 20 --layout nn "$@" 2>&1 | grep -E '^f16|rror' | sed "s|^|$P |"; }
NN1="--relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8"
P=prime; for a in "$NN1" "--relayout on"; do b $a --reps 2 --warm 0 > /dev/null; done
for P in p1 p2 p3; do for s in "" "--stream"; do b $s; b $NN1 $s; b --relayout on $s; done; done
echo "nn done at $SECONDS s"
source docs/perf/peers.sh
echo "all done at $SECONDS s"
