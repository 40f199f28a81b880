#!/bin/bash
# 49th session, call 2 (issue 48): split-K's slices with their sizes built in (one pipeline per
# slice depth) against the binary before (sizes pushed in slices, carry/vk-sgmat-before), in
# one call. (1) f64 checks of the new plans; the self-test binary under the validation layer.
# (2) Cold first processes compiling in the process (each preparation's pipelines timed), the
# Llama-7B layer at 512 tokens, f16 -> f32 and f16 -> f16 `nt`, old and new interleaved; the
# u8 form of the 256x128 tile's compile (--scheme now honoured by --first-runs). (3) Steady
# state, second of two processes, old and new. (4) examples/prepare_in_parallel 512, old and new.
source docs/perf/lib.sh
gpu_line
L=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
U8=wg_t256_fr16x8_k64_u8_a0_rf_ct
for args in "512 4096 4096 --layout nt" "512 4096 11008 --layout nt --types f16:f16" "300 4096 4160 --layout nt --split-k 3 --specialize on" \
            "257 1000 8191 --layout nn --split-k 2 --specialize on --alpha 2 --beta 0.5" "512 4096 11008 --layout tt --types bf16:f32 --split-k 2 --specialize on"; do
  timeout 90 $B gemm $args 2>&1 | grep -E "verify|built in|kernel|rror|anic" | head -3 | sed "s|^|[gemm $args] |"
done
validation_tests self_test
echo "(1) done at $SECONDS s"
fr() {
  local label=$1 bin=$2
  shift 2
  cold $bin bench --no-pipeline-cache --layout nt --first-runs 1 --compile-in-process "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|, first result [0-9.]+ ms||; s|, within 5% from.*; ([0-9]+) runs;|;|"
}
for r in 1; do
  fr "f32 before r$r" $OLD --types f16:f32 --shapes $L
  fr "f32 now r$r" $B --types f16:f32 --shapes $L
done
fr "f16 before" $OLD --types f16:f16 --shapes $L
fr "f16 now" $B --types f16:f16 --shapes $L
fr "f32 u8" $B --types f16:f32 --shapes 512x12288x4096,512x22016x4096 --scheme $U8
echo "(2) done at $SECONDS s"
bench2 "f32 before" $OLD --types f16:f32 --layout nt --shapes $L
bench2 "f32 now" $B --types f16:f32 --layout nt --shapes $L
bench2 "f16 before" $OLD --types f16:f16 --layout nt --shapes $L
bench2 "f16 now" $B --types f16:f16 --layout nt --shapes $L
echo "(3) done at $SECONDS s"
for bin in prepare_in_parallel-before prepare_in_parallel; do
  for mode in in-process helper; do
    arg=""; [ $mode = helper ] && arg=helper
    cold carry/examples/$bin 512 $arg 2>&1 | grep -v "^device" | sed "s|^|[$bin $mode] |"
  done
done
echo "all done at $SECONDS s"
