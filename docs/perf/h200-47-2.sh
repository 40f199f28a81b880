#!/bin/bash
# 47th session, call 2. Issue 47: 9 to 64 rows of activations over quantized weights as decode in
# chunks of at most 8 rows side by side (`--matrix-vector on`) against the dense copy and the
# GEMM on it (`--matrix-vector off`, the path before), to choose up to how many rows the
# chunks run by default. 22016x4096 in five formats and 14336x4096 in q4_K, f16 activations;
# q4_K with f32 activations; ggml-vulkan at 16 and 32 tokens beside. Ours as streams, the
# second of two processes. Then the quantized tests under the validation layer.
source docs/perf/lib.sh
gpu_line
ggml --min-time 0.25 q4_K:22016x16x4096 q4_K:22016x32x4096 q8_0:22016x16x4096 q8_0:22016x32x4096
echo "ggml done at $SECONDS s"
S=9x22016x4096,16x22016x4096,24x22016x4096,32x22016x4096,40x22016x4096,48x22016x4096,64x22016x4096
for q in q4_K q8_0 q6_K q4_0 mxfp4; do
  bench2 "chunks $q" $B --types f16:f32 --weights $q --shapes $S --matrix-vector on
  bench2 "copy $q" $B --types f16:f32 --weights $q --shapes $S --matrix-vector off
  echo "$q done at $SECONDS s"
done
S14=9x14336x4096,16x14336x4096,24x14336x4096,32x14336x4096,48x14336x4096
bench2 "chunks q4_K 14336" $B --types f16:f32 --weights q4_K --shapes $S14 --matrix-vector on
bench2 "copy q4_K 14336" $B --types f16:f32 --weights q4_K --shapes $S14 --matrix-vector off
SF=9x22016x4096,16x22016x4096,32x22016x4096,48x22016x4096
bench2 "chunks q4_K f32" $B --types f32:f32 --weights q4_K --shapes $SF --matrix-vector on
bench2 "copy q4_K f32" $B --types f32:f32 --weights q4_K --shapes $SF --matrix-vector off
echo "ours done at $SECONDS s"
validation_tests quantized
echo "all done at $SECONDS s"
