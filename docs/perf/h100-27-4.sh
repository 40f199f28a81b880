#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 4: stream-K, second form. Call 3 (h100-27-3.txt)
# ran every workgroup's run, its own tile too, as a loop over up to three parts: correct, but
# 15-42% slower than a workgroup per tile. Here the workgroups of their own tile run the K loop
# as before and each sharing workgroup's parts are written out in turn (the loop form again
# with VK_SGMAT_SK_FORM=loop, an experiment switch). (1) `gemm` against the f64 reference.
# (2) `bench` stream-K on against off, by own timestamps.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4096 4096 4096 --layout nn --alpha 2 --beta 0.5
g 4096 11008 4096 --layout nt --alpha -1
g 4096 4096 2048 --layout nt --types f16:f16 --beta 1
echo "gemm checks done at $SECONDS s"
S=4096x4096x4096,4096x11008x4096,4096x4096x2048
for L in nn nt; do for K in on off; do timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --stream-k $K --reps 2 --warm 0 > /dev/null 2>&1; done; done
VK_SGMAT_SK_FORM=loop timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --stream-k on --reps 2 --warm 0 > /dev/null 2>&1
echo "primed at $SECONDS s"
for pass in 1 2; do for L in nn nt; do for K in on off; do
  timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --stream-k $K --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass $L |"
done; done
VK_SGMAT_SK_FORM=loop timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --stream-k on --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass loop nt |"
done
echo "all done at $SECONDS s"
