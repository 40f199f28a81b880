#!/bin/bash
# Issue 48, call 6: call 5 found the slow start of freshly compiled pipelines follows the count
# of their runs (a 400 ms pause after the first run left 170-280 slow runs). Does running each
# kernel N times on 16 rows first (the same pipeline, cheap) end it? The same layer, cold, with
# `--prime 0`, `256`, `1024`, interleaved, twice.
B=$PWD/carry/vk-sgmat
export __GL_SHADER_DISK_CACHE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for round in 1 2; do
  for prime in 0 256 1024; do
    timeout 120 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1.5 --prime $prime 2>&1 | grep -E "first|rror" | sed "s|^|[r$round prime $prime] |"
  done
done
echo "all done at $SECONDS s"
