#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 6: what in our `nt` kernel's SPIR-V costs the
# 1.4-2% it trails ggml-vulkan's own kernel by in one harness (h200-x-5.txt). Hand-edited
# variants of `kernel-probe dump nt` (docs/perf/h200-x-6-variants/), each run as ours:
#   v0: as generated (control)
#   v1: the interior tiles' path without its clamped K-tail loop
#   v2: v1 and without the loop over K's whole steps after the iterations (main loop only)
#   v3: v2 and no edge-tile path at all (valid here: every tile lies inside C, K % 512 = 0)
#   v4: v2 with the main loop counting iterations from 0 (ggml's form) instead of K
# A priming pass at 512^3 compiles each, then two passes at 2048^3 and 4096^3.
P=carry/kernel-probe
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
K="ggml:carry/m1772.spv v0 v1 v2 v3 v4"
run() { # kernel, n
  case $1 in
    ggml:*) timeout 60 $P ggml ${1#ggml:} $2 ;;
    *) timeout 60 $P spv carry/v/$1.spv $2 nt ;;
  esac
}
for k in $K; do run $k 512 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for pass in 1 2; do
  for n in 2048 4096; do
    for k in $K; do run $k $n 2>&1 | sed "s|^|p$pass $k |"; done
  done
done
echo "all done at $SECONDS s"
