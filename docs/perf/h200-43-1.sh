#!/bin/bash
# 43rd session, call 1 (issue 48).
# (1) The 42nd session's call 9: cold preparation with the driver self-test on and off, now
#     that the self-test compiles the GEMM's whole plan at once (`Pipelines::prepare_all`).
# (2) Is a pipeline compiled by another process fast from its first run? Each layer GEMM is
#     compiled by one process that saves its pipeline cache right after compiling (`prepare`)
#     and runs the GEMM once, then run by a second process from that cache file (the driver's
#     disk cache off in both). The 34th session found a pipeline re-created in the process that
#     compiled it, from any cache, slow; a second process's never.
# (3) The cost of a process that only opens the device (what a compiling helper would add).
# (4) examples/prepare_in_parallel 512, cold: the layer's four GEMMs one after another, then
#     on four threads.
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
f() { # label args
  local label=$1; shift
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 120 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1 "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|, first run .*||"
}
f "self-test off" --no-self-test; f "self-test on"; f "self-test on"; f "self-test off" --no-self-test
echo "(1) done at $SECONDS s"
for s in ${S//,/ }; do
  d=$(mktemp -d)
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$d timeout 120 $B bench --pipeline-cache $d/c.bin --types f16:f16 --layout nt --shapes $s --first-runs 0 2>&1 | grep -E "first|rror|anic" | sed "s|^|[compiling process] |"
  echo "[cache file] $(stat -c %s $d/c.bin) bytes"
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$d timeout 120 $B bench --pipeline-cache $d/c.bin --types f16:f16 --layout nt --shapes $s --first-runs 1 2>&1 | grep -E "first|rror|anic" | sed "s|^|[second process, its cache] |"
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 120 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $s --first-runs 1 2>&1 | grep -E "first|rror|anic" | sed "s|^|[cold, for comparison] |"
done
echo "(2) done at $SECONDS s"
for i in 1 2 3; do
  t0=$EPOCHREALTIME; $B info > /dev/null 2>&1; t1=$EPOCHREALTIME
  echo "[vk-sgmat info] $(awk "BEGIN{print $t1 - $t0}") s"
done
for i in 1 2; do
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 150 carry/examples/prepare_in_parallel 512 2>&1 | tail -3 | sed "s|^|[prepare_in_parallel $i] |"
done
echo "all done at $SECONDS s"
