#!/bin/bash
# 42nd session, call 6 (issue 48): where the first process stands with this session's binary.
# (1) A Llama-7B layer's four GEMMs at 512 tokens prepared cold (no pipeline cache of ours,
# the driver's disk cache off): one after another, then on four threads
# (examples/prepare_in_parallel.rs), twice. (2) `bench --first-runs` on the same four GEMMs
# (f16 -> f16, `nt`), cold, twice, then cold with `--prime 256` (each fresh kernel run 256 times
# on 16 rows at preparation), then from a warm cache of ours (a first process fills it, the
# second is timed).
E=$PWD/carry/examples/prepare_in_parallel
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for i in 1 2; do
  __GL_SHADER_DISK_CACHE=0 timeout 150 $E 512 2>&1 | tail -2 | sed "s|^|[prepare $i] |"
done
echo "prepare done at $SECONDS s"
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
f() { # label args
  local label=$1; shift
  __GL_SHADER_DISK_CACHE=0 timeout 150 $B bench --types f16:f16 --layout nt --shapes $S --first-runs 2 "$@" 2>&1 | grep -E "first|ready|rror|anic" | sed "s|^|[$label] |"
}
f "cold 1" --no-pipeline-cache
f "cold 2" --no-pipeline-cache
f "cold primed" --no-pipeline-cache --prime 256
rm -rf /tmp/pc && mkdir -p /tmp/pc
f "filling our cache" --pipeline-cache /tmp/pc/cache.bin > /dev/null
f "warm (our cache)" --pipeline-cache /tmp/pc/cache.bin
echo "all done at $SECONDS s"
