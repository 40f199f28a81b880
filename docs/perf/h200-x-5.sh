#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 5: at 2048^3 ggml-vulkan's `nt` kernel runs
# 57.3-58.3 us and ours 60.2-61.4 us (h200-x-4.txt) with the same tile (128x256 of C, its
# transpose for us), where at 4096^3 they are level. `scripts/kernel-probe` (plain ash, one
# dispatch per timestamp pair, A = B = 1) runs ggml's own SPIR-V (module 1772 of the anchor)
# and our `nt` default at 2048^3 and 4096^3; each twice, the second process measured.
P=carry/kernel-probe
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for pass in prime measure; do
  for n in 2048 4096; do
    timeout 60 $P ggml carry/m1772.spv $n 2>&1 | sed "s|^|$pass |"
    timeout 60 $P ours nt $n 2>&1 | sed "s|^|$pass |"
  done
done
echo "all done at $SECONDS s"
