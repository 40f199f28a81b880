#!/bin/bash
# Issue 49, 2026-11-27 (33rd session), call 5 (an H100): what the self-test costs a first process
# where a family's test runs on a twin pipeline: fused epilogues (bias and activation are not
# part of a family) and grouped GEMMs (tested as the ungrouped kernel). Wall time of first
# processes (the same data and checks either way) with the driver's shader disk cache off and
# our caches new, self-test on and off, twice each.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
export __GL_SHADER_DISK_CACHE=0
TIMEFORMAT="wall %R s"
for run in "512 4096 4096 --epilogue bias-col,gelu" "1024 4096 4096 --groups 512,256,256"; do
  for st in on off on off; do
    flag=""; [ $st = off ] && flag=--no-self-test
    d=/tmp/xdg-$st-$RANDOM
    { time XDG_CACHE_HOME=$d timeout 120 $B gemm $run --types f16:f32 --layout nt --repeat 5 $flag > /tmp/out.txt 2>&1; } 2>&1 | sed "s|^|[$run, self-test $st] |"
    tail -2 /tmp/out.txt | cut -c1-200 | sed "s|^|    |"
  done
done
echo "all done at $SECONDS s"
