#!/bin/bash
# 42nd session, call 8 (issue 48): is call 7's longer cold preparation the driver self-test
# (33rd session, after the 31st)? This binary cold with and without `--no-self-test`,
# interleaved, the same `bench --first-runs` as call 7.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
f() { # label args
  local label=$1; shift
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 120 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1 "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|, first run .*||"
}
f "self-test off" --no-self-test; f "self-test on"; f "self-test on"; f "self-test off" --no-self-test
echo "all done at $SECONDS s"
