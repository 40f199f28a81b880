#!/bin/bash
# Issue 48, 2026-11-27 (29th session), call 4: the first runs of a Llama-7B layer's four GEMMs
# at 512 tokens (f16 -> f16, weights N x K) and one decode, each in order with no warm-up
# (`bench --first-runs 2`): pipeline creation time, first result, first run against the
# steady state, and when the runs came within 5% of it. Four fresh processes on a fresh HOME
# (no driver shader cache, no vk-sgmat pipeline cache): (1) cold, (2) both caches warm,
# (3) ours off, the driver's warm, (4) the driver's disk cache off (__GL_SHADER_DISK_CACHE=0),
# ours warm. Then (5) cold again with a fresh HOME and sizes pushed, not built in.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008,1x22016x4096
f() {
  local t0=$(date +%s.%N)
  $B bench --types f16:f16 --layout nt --shapes $S --first-runs 2 "${@:2}" 2>&1 | grep -E "first|rror|anic" | sed "s|^|[$1] |"
  echo "[$1] process wall $(python3 -c "import time; print(round(time.time() - $t0, 2))") s"
}
export HOME=/tmp/h1; rm -rf $HOME; mkdir -p $HOME
f cold
ls -la $HOME/.cache/vk-sgmat $HOME/.cache/nvidia 2>&1 | head -8
f warm
f ours-off --no-pipeline-cache
__GL_SHADER_DISK_CACHE=0 f driver-off
export HOME=/tmp/h2; rm -rf $HOME; mkdir -p $HOME
f cold-pushed --specialize off
f warm-pushed --specialize off
echo "all done at $SECONDS s"
