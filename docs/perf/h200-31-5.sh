#!/bin/bash
# Issue 48, call 5: does the slow start of pipelines compiled in a process (4-5x slower for
# their first 100-200 runs, about 230-250 ms, journal "Fresh pipelines first") follow the count
# of runs or the time since the first run? A Llama-7B layer's four GEMMs at 512 tokens (f16,
# `nt`), cold (no pipeline cache of ours or the driver's), each process timing 2 s of runs per
# shape after its first, with no pause and with a 400 ms pause after the first run, twice each,
# interleaved. Then the kernels without matrix units' first runs, cold.
B=$PWD/carry/vk-sgmat
export __GL_SHADER_DISK_CACHE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for round in 1 2; do
  for pause in 0 400; do
    timeout 120 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 2 --pause-after-first $pause 2>&1 | grep -E "first|rror" | sed "s|^|[r$round pause $pause] |"
  done
done
timeout 120 $B bench --no-pipeline-cache --no-matrix-units --types f32:f32,f16:f32,i8:i32 --layout nn --shapes 4096x4096x4096 --first-runs 1 2>&1 | grep -E "first|rror" | sed "s|^|[no matrix units] |"
echo "all done at $SECONDS s"
