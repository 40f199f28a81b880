#!/bin/bash
# Issue 48 and 49, call 4. (1) A Llama-7B layer's four GEMMs at 512 tokens prepared by fresh
# contexts with no pipeline cache and the driver's disk cache off: one after another, then on
# four threads (examples/prepare_in_parallel.rs), three times. (2) bf16 -> bf16, which the H200
# has no config for but bf16 -> f32: now the matrix units with the epilogue's rounding (checked,
# timed), against bf16 -> f32 in the same call.
E=$PWD/carry/examples/prepare_in_parallel
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for i in 1 2 3; do
  __GL_SHADER_DISK_CACHE=0 timeout 150 $E 512 2>&1 | tail -1
done
echo "prepare done at $SECONDS s"
g() { timeout 100 $B gemm "$@" --repeat 5 2>&1 | grep -E "scheme|verify|time|rror|anic" | sed "s|^|[$*] |"; }
g 1001 999 517 --types bf16:bf16 --layout tn --beta 0.5
g 4096 4096 4096 --types bf16:bf16 --layout nt
g 4096 4096 4096 --types bf16:f32 --layout nt
echo "all done at $SECONDS s"
