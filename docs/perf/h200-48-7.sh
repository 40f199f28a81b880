#!/bin/bash
# 48th session, call 7. h200-48-6's variant (the mid-grid table for 16-bit results too,
# carry/vk-sgmat-f16mid) against this session's binary on bf16 -> bf16 `nt`, the Llama-7B and
# Llama-3-8B layers' GEMMs at 128 and 512 tokens, once. Second of two processes.
source docs/perf/lib.sh
F16MID=$PWD/carry/vk-sgmat-f16mid
gpu_line
S1=128x12288x4096,128x4096x4096,128x22016x4096,128x4096x11008,128x6144x4096,128x28672x4096,128x4096x14336
S2=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008,512x6144x4096,512x28672x4096,512x4096x14336
for S in $S1 $S2; do
  bench2 "now" $B --types bf16:bf16 --layout nt --shapes $S
  bench2 "f16mid" $F16MID --types bf16:bf16 --layout nt --shapes $S
done
timeout 60 $F16MID gemm 128 4099 11008 --types bf16:bf16 --layout nt 2>&1 | grep -E "verify|rror" | sed "s|^|[gemm f16mid] |"
echo "all done at $SECONDS s"
