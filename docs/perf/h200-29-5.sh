#!/bin/bash
# Issue 48, 2026-11-27 (29th session), call 5: why a pipeline created later in a cold process
# runs slowly for ~250 ms (h200-29-4). An experiment build (env switches, not committed: the
# commit after abc2cfd reverts them) in cold processes (fresh HOME: no driver shader cache; our
# cache off): baseline; 400 ms of sleep between pipeline creation and the first run; each
# pipeline created twice (the first destroyed); created without a VkPipelineCache object;
# created with DISABLE_OPTIMIZATION (what an unoptimised pipeline runs at).
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
f() {
  export HOME=/tmp/h-$1; rm -rf $HOME; mkdir -p $HOME
  $B bench --types f16:f16 --layout nt --shapes $S --first-runs 1 --no-pipeline-cache 2>&1 | grep -E "first|rror|anic" | sed "s|^|[$1] |"
}
f base
VK_SGMAT_EXP_SLEEP_MS=400 f sleep400
VK_SGMAT_EXP_RECREATE=1 f recreate
VK_SGMAT_EXP_NULLCACHE=1 f nullcache
VK_SGMAT_EXP_NOOPT=1 f noopt
f base2
echo "all done at $SECONDS s"
