#!/bin/bash
# 48th session, call 6. h200-48-5 ran 128x22016x4096 into an f16 C at 168.5 us where an f32 C
# took 123.3: the mid-grid table (`tiling::mid_grid_choice`) is taken for f32 results only.
# A variant taking it for 16-bit results too (carry/vk-sgmat-f16mid) against this session's
# binary (carry/vk-sgmat), f16 -> f16 `nt`, the Llama-7B and Llama-3-8B layers' GEMMs at 128
# and 512 tokens, interleaved twice; then `runtime`'s layer. Second of two processes.
source docs/perf/lib.sh
F16MID=$PWD/carry/vk-sgmat-f16mid
gpu_line
S1=128x12288x4096,128x4096x4096,128x22016x4096,128x4096x11008,128x6144x4096,128x28672x4096,128x4096x14336
S2=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008,512x6144x4096,512x28672x4096,512x4096x14336
for round in 1 2; do
  for S in $S1 $S2; do
    bench2 "now r$round" $B --types f16:f16 --layout nt --shapes $S
    bench2 "f16mid r$round" $F16MID --types f16:f16 --layout nt --shapes $S
  done
  echo "round $round done at $SECONDS s"
done
for bin in $B $F16MID; do
  timeout 120 $bin runtime 2>&1 | grep -iE "layer|rror" | sed "s|^|[runtime $(basename $bin)] |"
done
timeout 60 $F16MID gemm 128 22016 4096 --types f16:f16 --layout nt 2>&1 | grep -E "verify|rror" | sed "s|^|[gemm f16mid] |"
timeout 60 $F16MID gemm 512 4097 4096 --types f16:f16 --layout nt 2>&1 | grep -E "verify|rror" | sed "s|^|[gemm f16mid] |"
echo "all done at $SECONDS s"
