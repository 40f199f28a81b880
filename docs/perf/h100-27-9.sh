#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 9: does the workgroup-scope kernel run faster when
# the driver sees the leading dimensions (VK_SGMAT_CONST_LD=4096) or also M, N and K
# (VK_SGMAT_CONST_DIMS=4096) as constants? (Experiment switches, not kept; call 6 showed the
# driver's loads slow down 3.2x when it cannot tell a loop's K is aligned.) 4096^3, `nn` and
# `nt` in place, f16 -> f32, by own timestamps; `gemm` checks the constant forms first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { env $1 timeout 100 $B gemm 4096 4096 4096 --layout $2 --repeat 2 --relayout off 2>&1 | grep -E "verify|rror|anic" | sed "s|^|[$1 $2] |"; }
g "VK_SGMAT_CONST_LD=4096" nn
g "VK_SGMAT_CONST_LD=4096 VK_SGMAT_CONST_DIMS=4096" nt
echo "gemm checks done at $SECONDS s"
run() { env $3 timeout 100 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $2 --relayout off --reps ${R:-20} 2>&1 | grep -E '^f16' | sed "s|^|$1 $2 |"; }
for e in x=1 VK_SGMAT_CONST_LD=4096 "VK_SGMAT_CONST_LD=4096 VK_SGMAT_CONST_DIMS=4096"; do for L in nn nt; do R=2 run prime $L "$e" > /dev/null; done; done
echo "primed at $SECONDS s"
for pass in 1 2 3; do for L in nn nt; do
  run "p$pass plain" $L x=1; run "p$pass ld" $L VK_SGMAT_CONST_LD=4096; run "p$pass ld+dims" $L "VK_SGMAT_CONST_LD=4096 VK_SGMAT_CONST_DIMS=4096"
done; done
echo "all done at $SECONDS s"
