#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 7: stream-K with each part's K loop counted from a
# constant 0 (the operands' first elements moved instead: call 6 showed a loop started at a
# run-time K 3.2x slower). (1) `gemm` against the f64 reference. (2) `bench` stream-K on
# (parts written out in turn; VK_SGMAT_SK_FORM=loop: as a loop, an experiment switch)
# against off, by own timestamps, `nt` and `nn`.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4096 4096 4096 --layout nn --alpha 2 --beta 0.5
g 4096 11008 4096 --layout nt --alpha -1
g 4096 4096 2048 --layout nt --types f16:f16 --beta 1
VK_SGMAT_SK_FORM=loop g 4096 4096 4096 --layout nt --beta 1
echo "gemm checks done at $SECONDS s"
S=4096x4096x4096,8192x8192x8192,4096x11008x4096,4096x4096x2048
run() { env $3 timeout 100 $B bench --types f16:f32 --shapes $S --layout $2 --stream-k $4 --reps ${R:-20} 2>&1 | grep -E '^f16' | sed "s|^|$1 $2 |"; }
for L in nt nn; do R=2 run prime $L x=1 off > /dev/null; R=2 run prime $L x=1 on > /dev/null; done
R=2 run prime nt VK_SGMAT_SK_FORM=loop on > /dev/null
echo "primed at $SECONDS s"
for pass in 1 2; do
  for L in nt nn; do run "p$pass off" $L x=1 off; run "p$pass on" $L x=1 on; done
  run "p$pass loop" nt VK_SGMAT_SK_FORM=loop on
done
echo "all done at $SECONDS s"
