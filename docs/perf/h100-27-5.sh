#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 5: why the stream-K kernel is slow (calls 3 and 4:
# 15-57% below a workgroup per tile). Experiment switches (not kept): VK_SGMAT_SK_SYNC=none
# (no hand-over: wrong sums, timing only), =relaxed (barriers without availability and
# visibility, accesses without NonPrivatePointer); VK_SGMAT_SK_FORM=dponly (the sharing
# workgroups do nothing: the workgroups of their own tile alone), =loop (call 3's form).
# `bench` by own timestamps (verification is by `gemm`, not here: some forms are wrong on
# purpose).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=4096x4096x4096,4096x4096x2048
run() { name=$1; shift; env "$@" timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --stream-k on --reps ${R:-20} 2>&1 | grep -E '^f16' | sed "s|^|$name |"; }
for e in "x=1" "VK_SGMAT_SK_SYNC=none" "VK_SGMAT_SK_SYNC=relaxed" "VK_SGMAT_SK_FORM=dponly" "VK_SGMAT_SK_FORM=dponly VK_SGMAT_SK_SYNC=none" "VK_SGMAT_SK_FORM=loop VK_SGMAT_SK_SYNC=none"; do R=2 run prime $e > /dev/null; done
timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --stream-k off --reps 2 > /dev/null 2>&1
echo "primed at $SECONDS s"
for pass in 1 2; do
  timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --stream-k off --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass off |"
  run "p$pass sk" x=1
  run "p$pass sync-none" VK_SGMAT_SK_SYNC=none
  run "p$pass sync-relaxed" VK_SGMAT_SK_SYNC=relaxed
  run "p$pass dponly" VK_SGMAT_SK_FORM=dponly
  run "p$pass dponly-none" VK_SGMAT_SK_FORM=dponly VK_SGMAT_SK_SYNC=none
  run "p$pass loop-none" VK_SGMAT_SK_FORM=loop VK_SGMAT_SK_SYNC=none
done
echo "all done at $SECONDS s"
