#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 3: stream-K (plan::StreamK, kernel::stream_k), first
# run. (1) `gemm` against the f64 reference where it is taken by default (256-invocation
# leads on grids whose last wave is partial), alpha and beta, f16 and bf16 -> f32, f16 -> f16,
# K from 1024. (2) `bench`, stream-K on against off, by own timestamps.
# Ran twice. perf/h200-27-3.txt: on an H200, from this script's first version (`gemm` timeouts
# 60 s, bf16 8192^3 and `nt` 4096x4096x1024 in place of 8192x8192x2048 and `nn`
# 4096x4096x2048), with a kernel bug (the runs' loop stepped by 12 and ran once: wrong sums,
# fast or slow timings). perf/h100-27-3.txt: on an H100, this version, the bug fixed.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4096 4096 4096 --layout nn --alpha 2 --beta 0.5
g 4096 4096 4096 --layout nt
g 8192 8192 2048 --layout nt --beta 1 --types bf16:f32
g 4096 11008 4096 --layout nt --alpha -1
g 4096 4096 2048 --layout nn --beta -1
g 4096 4096 4096 --layout nt --types f16:f16
g 4096 4096 4096 --layout nn --stream-k off
echo "gemm checks done at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,4096x11008x4096,4096x4096x2048
for L in nn nt; do for K in on off; do timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --stream-k $K --reps 2 --warm 0 > /dev/null 2>&1; done; done
echo "primed at $SECONDS s"
for pass in 1 2; do for L in nn nt; do for K in on off; do
  timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --stream-k $K --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass $L |"
done; done; done
for K in on off; do timeout 100 $B bench --types f16:f16 --shapes 4096x4096x4096,8192x8192x8192 --layout nt --stream-k $K --reps 20 2>&1 | grep -E '^f16' | sed "s|^|f16 nt |"; done
echo "all done at $SECONDS s"
