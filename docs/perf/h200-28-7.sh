#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 7: experiment (a build switch not kept): does
# NVIDIA's driver take its faster path for an operand or C addressed through an identity
# tensor view (dimensions in storage order) instead of no view? The transposed tile's store
# goes through a transposing view and is faster than a direct one. VK_SGMAT_EXP_IDVIEW_C: C
# stored through the identity view where not transposed; VK_SGMAT_EXP_IDVIEW_AB: A and B
# loaded so where not transposed. (1) `gemm` against the f64 reference with both. (2)
# `bench`, three interleaved passes, own timestamps: `nn` 4096^3 and 8192^3 on the
# untransposed 128x256 tile in place, and the `nt` and `tn` leads at 4096^3.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
g() { env $E timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "verify|rror|anic" | sed "s|^|[$E $*] |"; }
E="VK_SGMAT_EXP_IDVIEW_C=1 VK_SGMAT_EXP_IDVIEW_AB=1"
g 4097 4095 4096 --layout nn --relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8 --beta 0.5
g 4096 4096 4096 --layout nt
g 4096 4096 4096 --layout tn --alpha -1
echo "gemm checks done at $SECONDS s"
NN1="--layout nn --relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8"
b() { env $E timeout 100 $B bench --types f16:f32 --reps 20 "$@" 2>&1 | grep -E '^f16|rror' | sed "s|^|$P [$E] |"; }
for E in X=0 VK_SGMAT_EXP_IDVIEW_C=1 VK_SGMAT_EXP_IDVIEW_AB=1 "VK_SGMAT_EXP_IDVIEW_C=1 VK_SGMAT_EXP_IDVIEW_AB=1"; do
  P=prime; b $NN1 --shapes 4096x4096x4096,8192x8192x8192 --reps 2 --warm 0 > /dev/null
  b --layout nt --shapes 4096x4096x4096 --reps 2 --warm 0 > /dev/null; b --layout tn --shapes 4096x4096x4096 --reps 2 --warm 0 > /dev/null
done
echo "primed at $SECONDS s"
for P in p1 p2 p3; do
  for E in X=0 VK_SGMAT_EXP_IDVIEW_C=1 VK_SGMAT_EXP_IDVIEW_AB=1 "VK_SGMAT_EXP_IDVIEW_C=1 VK_SGMAT_EXP_IDVIEW_AB=1"; do
    b $NN1 --shapes 4096x4096x4096,8192x8192x8192; b --layout nt --shapes 4096x4096x4096; b --layout tn --shapes 4096x4096x4096
  done
done
echo "all done at $SECONDS s"
