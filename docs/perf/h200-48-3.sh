#!/bin/bash
# 48th session, call 3. The mid-grid table (`tiling::mid_grid_choice`) looked up with the short
# side as M (carry/vk-sgmat-mirror) against as it was (carry/vk-sgmat): dense f16 -> f32 `nt`
# GEMMs whose short side is N (the weights as A, from h200-48-2: 22016x64x4096 ran the 256x128
# tile at 256 us, 64x22016x4096 the 64x64 one at 127), controls with the short side as M
# (unchanged by construction), and the weights-first q4_K dense copy. Second of two processes.
source docs/perf/lib.sh
MIRROR=$PWD/carry/vk-sgmat-mirror
gpu_line
S1=22016x16x4096,22016x64x4096,22016x128x4096,22016x256x4096,22016x512x4096,128x22016x4096
S2=4096x128x4096,4096x512x4096,14336x64x4096,14336x128x4096,4096x256x11008,512x4096x4096
for round in 1 2; do
  for S in $S1 $S2; do
    bench2 "before r$round" $B --types f16:f32 --layout nt --shapes $S
    bench2 "mirror r$round" $MIRROR --types f16:f32 --layout nt --shapes $S
  done
  echo "round $round done at $SECONDS s"
done
WF=22016x64x4096,22016x128x4096,22016x256x4096
bench2 "before wf q4_K" $B --types f16:f32 --weights q4_K --weights-first --shapes $WF
bench2 "mirror wf q4_K" $MIRROR --types f16:f32 --weights q4_K --weights-first --shapes $WF
echo "all done at $SECONDS s"
