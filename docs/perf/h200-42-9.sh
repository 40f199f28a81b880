#!/bin/bash
# 42nd session, call 9 (issue 48): call 8 with the self-test compiling the GEMM's whole plan
# at once (its other passes beside the family's kernel) rather than the family's kernel alone first.
# Cold, self-test on and off, interleaved, the same `bench --first-runs` as calls 7 and 8.
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
f() { # label args
  local label=$1; shift
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 120 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1 "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|, first run .*||"
}
f "self-test off" --no-self-test; f "self-test on"; f "self-test on"; f "self-test off" --no-self-test
echo "all done at $SECONDS s"
