#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 2: `nt` copies both operands into `tn` order where
# M and N are 4096 or more and 256 <= K < 2048 (plan::NT_COPIED_K, from perf/h200-z-1.txt).
# (1) The new path against the f64 reference. (2) The rule's edges, in place (`--relayout off`)
# against both copies (`on`). (3) The peers table as in h200-y-4.sh.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 4096 4096 256 --layout nt
g 4097 4095 1000 --layout nt --alpha 2 --beta 0.5
g 4096 8193 300 --layout nt --c-layout t --beta 1
g 4099 4096 2047 --layout nt --alpha -1
g 4096 4096 1024 --layout nt --types bf16:f32 --beta -1
echo "gemm checks done at $SECONDS s"
E=4096x4096x192,4096x4096x1536,4096x4096x2048,8192x8192x1024,3072x3072x512,4096x3072x1024
for R in off on; do timeout 60 $B bench --types f16:f32 --shapes $E --layout nt --relayout $R --reps 2 --warm 0 > /dev/null 2>&1; done
for pass in 1 2; do for R in off on; do
  timeout 100 $B bench --types f16:f32 --shapes $E --layout nt --relayout $R --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass nt-$R |"
  timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x256,4096x4096x1024 --layout nt --relayout $R --reps 20 2>&1 | grep -E '^bf16' | sed "s|^|p$pass nt-$R |"
done; done
echo "edges done at $SECONDS s"
# The peers table (this block was inline when the call ran; the same commands).
source docs/perf/peers.sh
echo "all done at $SECONDS s"
