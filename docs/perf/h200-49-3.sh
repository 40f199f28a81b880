#!/bin/bash
# 49th session, call 3 (issue 48): why split-K's 5504-deep slices (512x4096x11008 in two) compile
# in 5-7 s where 2048-deep ones take 3 (h200-49-2). The workgroup kernel's K loops after the
# whole iterations (single steps: the unclamped tail, the partial step, edge workgroups' whole
# K) carry no loop control, so the driver may unroll a tail whose trip count it knows. The
# variant (carry/vk-sgmat-du) marks them DontUnroll. Cold compile in the process and steady
# state (second of two processes), this session's binary (now) against the variant (du).
source docs/perf/lib.sh
DU=$PWD/carry/vk-sgmat-du
gpu_line
L=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for args in "512 4096 11008 --layout nt" "4097 4095 4100 --layout nt --types f16:f16" "1000 1000 1000 --layout nn --alpha 2 --beta 0.5"; do
  timeout 90 $DU gemm $args 2>&1 | grep -E "verify|rror|anic" | head -3 | sed "s|^|[du gemm $args] |"
done
echo "(1) done at $SECONDS s"
fr() {
  local label=$1 bin=$2
  shift 2
  cold $bin bench --no-pipeline-cache --layout nt --first-runs 1 --compile-in-process "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|, first result [0-9.]+ ms||; s|, within 5% from.*; ([0-9]+) runs;|;|"
}
fr "now" $B --types f16:f32 --shapes $L,4096x4096x4000
fr "du" $DU --types f16:f32 --shapes $L,4096x4096x4000
fr "now pushed" $B --types f16:f32 --shapes 512x12288x4096,512x4096x11008 --specialize off
fr "du pushed" $DU --types f16:f32 --shapes 512x12288x4096,512x4096x11008 --specialize off
echo "(2) done at $SECONDS s"
S=$L,4096x4096x4000,4096x4096x4096,4097x4095x4100,1000x1000x1000
bench2 "now" $B --types f16:f32 --layout nt --shapes $S
bench2 "du" $DU --types f16:f32 --layout nt --shapes $S
echo "(3) done at $SECONDS s"
for bin in prepare_in_parallel-du prepare_in_parallel; do
  cold carry/examples/$bin 512 2>&1 | grep -v "^device" | sed "s|^|[$bin in-process] |"
done
echo "all done at $SECONDS s"
