#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 8: two more hand-edited variants of the `nt`
# kernel (docs/perf/h200-x-6-variants/), run by `scripts/kernel-probe` beside v0 (as generated)
# and ggml-vulkan's own kernel:
#   v5: sixteen 64-element K steps per loop iteration instead of eight (1024-deep iterations)
#   v8: each step loads the right operand (through the transposing view) before the left one
P=carry/kernel-probe
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
K="ggml:carry/m1772.spv v0 v5 v8"
run() {
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
