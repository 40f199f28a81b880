#!/bin/bash
# 42nd session, call 7 (issue 48): call 6's cold preparation took 2-3x the 31st session's
# (h200-31-5: 1.2 / 0.8-1.2 / 1.8-2.3 / 1.8 s a shape; call 6: 3.4 / 2.0 / 5.6 / 3.8). The
# binary of the 31st session (bceebbf) and this one, cold, interleaved on this machine: the
# same `bench --first-runs` on the layer at 512 tokens, then the pipelines' sizes.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-31
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
nproc
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
f() { # label binary
  __GL_SHADER_DISK_CACHE=0 timeout 120 $2 bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$1] |; s|, first run .*||"
}
f "31st" $OLD; f "now" $B; f "now" $B; f "31st" $OLD
echo "all done at $SECONDS s"
