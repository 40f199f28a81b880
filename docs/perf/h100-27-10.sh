#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 10: call 9 (H100, 3 passes) hinted that `nn`
# runs 3-5% faster when the driver sees the leading dimensions and M, N, K as constants, and
# `nt` mixed. Again with 5 interleaved passes, at 4096^3 and 2048^3 (both layouts' in-place
# leads), and with N and K constant but M free (VK_SGMAT_CONST_NK, an inference batch's
# shape). Experiment switches, not kept. By own timestamps.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { env $1 timeout 100 $B gemm $3 $3 $3 --layout $2 --repeat 2 --relayout off 2>&1 | grep -E "verify|rror|anic" | sed "s|^|[$1 $2 $3] |"; }
g "VK_SGMAT_CONST_LD=2048 VK_SGMAT_CONST_NK=2048" nn 2048
g "VK_SGMAT_CONST_LD=2048 VK_SGMAT_CONST_DIMS=2048" nt 2048
echo "gemm checks done at $SECONDS s"
run() { env $4 timeout 100 $B bench --types f16:f32 --shapes ${3}x${3}x${3} --layout $2 --relayout off --reps 20 2>&1 | grep -E '^f16' | sed "s|^|$1 $2 |"; }
forms() { echo "plain:x=1 ld+dims:VK_SGMAT_CONST_LD=$1,VK_SGMAT_CONST_DIMS=$1 ld+nk:VK_SGMAT_CONST_LD=$1,VK_SGMAT_CONST_NK=$1"; }
for n in 4096 2048; do for f in $(forms $n); do for L in nn nt; do run prime $L $n "$(echo ${f#*:} | tr , " ")" > /dev/null; done; done; done 2>/dev/null
echo "primed at $SECONDS s"
for pass in 1 2 3 4 5; do for n in 4096 2048; do for L in nn nt; do for f in $(forms $n); do
  run "p$pass ${f%%:*}" $L $n "$(echo ${f#*:} | tr , ' ')"
done; done; done; done
echo "all done at $SECONDS s"
