#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 1: two untried SPIR-V forms of the workgroup-scope
# kernel, each behind an environment variable of an experimental build, `tune` in nn, nt and tn
# (a priming process per form first): VKSG_X_V4, A and B declared as arrays of 16-byte vectors
# (the form of NVIDIA's own coopmat2 sample) instead of their element type; VKSG_X_K3, a
# K-contiguous operand read through a 3-D tensor layout (rows, K/8, 8) in the unclamped loop.
# Then `bench --trace` at 4096^3 and 2048^3 `nn` (the copy and the GEMM apart) in four processes.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
F=wg_t128_fr8x8_k32_u8_a0_g8_ct,wg_t256_fr16x8_k64_u8_a0_ct
run() { # form, then the command
  local v=$1; shift
  case $v in
    base) env "$@" ;;
    V4) env VKSG_X_V4=1 "$@" ;;
    K3) env VKSG_X_K3=1 "$@" ;;
    V4K3) env VKSG_X_V4=1 VKSG_X_K3=1 "$@" ;;
  esac
}
for v in base V4 K3 V4K3; do
  for L in nn nt tn; do
    run $v timeout 40 $B tune 2048 2048 2048 --layout $L --filter $F --reps 3 > /dev/null 2>&1
  done
  echo "primed $v at $SECONDS s"
done
for round in 1 2; do
  for v in base V4 K3 V4K3; do
    for L in nn nt tn; do
      for S in "4096 4096 4096" "2048 2048 2048"; do
        run $v timeout 40 $B tune $S --layout $L --filter $F --reps 20 2>&1 | grep -E '^16x16x16' | sed "s|^|r$round $v $L ${S// /x} |"
      done
    done
  done
  echo "round $round done at $SECONDS s"
done
(cd /tmp/ggml && timeout 40 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan')
for p in 1 2 3 4; do
  timeout 40 $B bench --types f16:f32 --shapes 4096x4096x4096,2048x2048x2048 --layout nn --reps 20 --trace 2>&1 | grep -v '^\[' | sed "s|^|trace$p nn |"
  timeout 40 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout tn --reps 20 --trace 2>&1 | grep -v '^\[' | grep -v '^device\|^types' | sed "s|^|trace$p tn |"
done
echo "all done at $SECONDS s"
