#!/bin/bash
# 49th session, call 6 (issue 46): sizes built in below 2048^3. The 128-token GEMMs of the
# Llama-7B and Llama-3-8B layers (f16 -> f32 `nt`) keep sizes pushed by the M*N*K rule, the
# wide two (22016, 28672) excepted; forced on (`--specialize on`) against the default, two
# rounds, second of two processes, as streams.
source docs/perf/lib.sh
rm -rf ~/.cache/vk-sgmat ${XDG_CACHE_HOME:-/nonexistent}/vk-sgmat
gpu_line
S=128x12288x4096,128x4096x4096,128x4096x11008,128x6144x4096,128x4096x14336,256x4096x4096
for r in 1 2; do
  bench2 "auto r$r" $B --types f16:f32 --layout nt --shapes $S
  bench2 "on r$r" $B --types f16:f32 --layout nt --shapes $S --specialize on
done
echo "all done at $SECONDS s"
