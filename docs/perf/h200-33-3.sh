#!/bin/bash
# Issue 49, 2026-11-27 (33rd session), call 3: the self-test's own time, now reported by `gemm`
# (known-answer GEMMs run in the process and their time, pipeline creation not counted: the GEMM
# compiles the same pipeline anyway; and the time reading the kept verdicts). A first process
# per shape and type in a new cache directory, then a second on the same directory.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for run in "512 4096 4096 f16:f32 nt" "4096 4096 4096 f16:f32 nt" "4096 4096 4096 f16:f32 nn" "4096 4096 4096 i8:i32 nt" "4096 4096 4096 bf16:f32 nt" "4096 4096 4096 f32:f32 nn" "2048 2048 2048 f16:f16 tn" "1 22016 4096 f16:f32 nt"; do
  set -- $run
  d=/tmp/xdg-$1x$2x$3-${4/:/}-$5
  for proc in first second; do
    XDG_CACHE_HOME=$d timeout 120 $B gemm $1 $2 $3 --types $4 --layout $5 --repeat 10 2>&1 | grep -E "^gemm|self-test|time|rror" | sed "s|^|[$run, $proc process] |"
  done
done
echo "all done at $SECONDS s"
