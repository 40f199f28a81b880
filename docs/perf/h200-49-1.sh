#!/bin/bash
# 49th session, call 1 (issue 48): what a cold pipeline costs to compile, per kernel variant.
# The Llama-7B layer's four GEMMs at 512 tokens and 4096^3, `nt`, each in a cold first process
# (driver disk cache off, our pipeline cache off), compiled in the process so creation is timed
# (`compiled here N in X ms`, summed over the preparation's pipelines): the default; sizes
# pushed (`--specialize off`); the 256x128 tile in eight K steps per iteration instead of
# sixteen (u8). Then the same variants' steady state (second of two processes), and
# examples/prepare_in_parallel 512 as before.
source docs/perf/lib.sh
gpu_line
L=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
U8=wg_t256_fr16x8_k64_u8_a0_rf_ct
fr() {
  local label=$1
  shift
  cold $B bench --no-pipeline-cache --layout nt --first-runs 1 --compile-in-process "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|, first result [0-9.]+ ms||; s|, within 5% from.*; ([0-9]+) runs;|;|"
}
fr "f32 default" --types f16:f32 --shapes $L,4096x4096x4096
fr "f32 pushed" --types f16:f32 --shapes $L,4096x4096x4096 --specialize off
fr "f32 u8" --types f16:f32 --shapes 512x12288x4096,512x22016x4096,4096x4096x4096 --scheme $U8
fr "f32 u8 split 2" --types f16:f32 --shapes 512x4096x4096,512x4096x11008 --scheme $U8 --split-k 2
fr "f16 default" --types f16:f16 --shapes $L
fr "f16 pushed" --types f16:f16 --shapes $L --specialize off
echo "(1) done at $SECONDS s"
bench2 "f32 default" $B --types f16:f32 --layout nt --shapes $L,4096x4096x4096
bench2 "f32 pushed" $B --types f16:f32 --layout nt --shapes $L,4096x4096x4096 --specialize off
bench2 "f32 u8" $B --types f16:f32 --layout nt --shapes 512x12288x4096,512x22016x4096,4096x4096x4096 --scheme $U8
bench2 "f32 u8 split 2" $B --types f16:f32 --layout nt --shapes 512x4096x4096,512x4096x11008 --scheme $U8 --split-k 2
bench2 "f16 default" $B --types f16:f16 --layout nt --shapes $L
bench2 "f16 pushed" $B --types f16:f16 --layout nt --shapes $L --specialize off
echo "(2) done at $SECONDS s"
for mode in in-process helper; do
  arg=""; [ $mode = helper ] && arg=helper
  cold carry/examples/prepare_in_parallel 512 $arg 2>&1 | grep -v "^device" | sed "s|^|[prepare_in_parallel $mode] |"
done
echo "all done at $SECONDS s"
