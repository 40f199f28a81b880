#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 4: the final binary: `nt` copies both operands where
# its leads do not take K (plan::NT_RELAYOUT), `nn` in place up to 2048^2 on the grouped walk.
# (1) The new paths against the f64 reference. (2) f16 -> f16 `nt` in place against copied
# (the rule was measured for f32 results). (3) `nn` 4096^3: its copy and `tn` against in place
# on the 128x256 tile that `tune` put at 292 (perf/h200-z-3.txt). (4) The peers table as in
# h200-y-4.sh.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 4096 4096 3000 --layout nt --alpha 2 --beta 0.5
g 2048 2048 2048 --layout nn --alpha -1 --beta 1
g 2049 2047 2048 --layout nn --c-layout t
g 2048 2048 2048 --layout nn --types bf16:f32
g 4096 4096 256 --layout nt --types f16:f16
echo "gemm checks done at $SECONDS s"
for R in off on; do timeout 60 $B bench --types f16:f16 --shapes 4096x4096x256,4096x4096x1024 --layout nt --relayout $R --reps 2 --warm 0 > /dev/null 2>&1; done
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8_rf_ct --reps 2 --warm 0 > /dev/null 2>&1
for pass in 1 2; do
  for R in off on; do timeout 60 $B bench --types f16:f16 --shapes 4096x4096x256,4096x4096x1024 --layout nt --relayout $R --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass nt-$R |"; done
  for how in "own" "stream --stream"; do read name flags <<< "$how"
    timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 20 $flags 2>&1 | grep -E '^f16' | sed "s|^|p$pass $name nn-default |"
    timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8_rf_ct --reps 20 $flags 2>&1 | grep -E '^f16' | sed "s|^|p$pass $name nn-inplace |"
  done
done
echo "experiments done at $SECONDS s"
# The peers table (this block was inline when the call ran; the same commands).
source docs/perf/peers.sh
echo "all done at $SECONDS s"
