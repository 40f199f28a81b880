#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 3. (a) The `nt` copies' bounds (plan::NT_RELAYOUT:
# 256 <= K < 2048, M and N >= 3072, M*N*K >= 4096^2*256), in place against copied, near the
# edges, and at a K the `nt` leads do not take (3000). (b) `nn` and `tt` in place at 2048^3 and
# `nn` at 4096^3: the sixteen-step 256x128 and 128x256 tiles in every form `tune` lists
# (computed transposed or not, grouped or not, right first), `tune --warm 1 --relayout off`.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 3072 4096 384 --layout nt --beta 0.5
g 3584 3584 1000 --layout nt --types bf16:f32
E=3072x3072x256,3072x3072x384,3072x4096x384,3584x3584x384,4096x4096x3000
for R in off on; do timeout 60 $B bench --types f16:f32 --shapes $E --layout nt --relayout $R --reps 2 --warm 0 > /dev/null 2>&1; done
for pass in 1 2; do for R in off on auto; do
  timeout 100 $B bench --types f16:f32 --shapes $E --layout nt --relayout $R --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass nt-$R |"
done; done
echo "edges done at $SECONDS s"
F=wg_t256_fr16x8_k64_u16_a0,wg_t256_fr8x16_k64_u16_a0
t() { timeout 150 $B tune "$@" --relayout off ${W:---warm 1 --reps 20} 2>&1 | grep -E "^16x16|rror" | sed "s|^|$1x$2x$3 $5 |"; }
W="--warm 0 --reps 1" t 2048 2048 2048 --layout nn --filter $F > /dev/null
W="--warm 0 --reps 1" t 2048 2048 2048 --layout tt --filter $F > /dev/null
W="--warm 0 --reps 1" t 4096 4096 4096 --layout nn --filter $F > /dev/null
echo "primed at $SECONDS s"
t 2048 2048 2048 --layout nn --filter $F
t 2048 2048 2048 --layout tt --filter $F
t 4096 4096 4096 --layout nn --filter $F
t 2048 2048 2048 --layout nn --filter $F | sed 's/^/again /'
echo "all done at $SECONDS s"
