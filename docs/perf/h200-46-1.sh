#!/bin/bash
# 46th session, call 1: decode on 8-bit activations with X rounded by the matrix-vector kernel
# itself as it loads each unit (`GemvKey::round_x`, no pass, nothing waiting for one) against
# the pass before it (`act8`, then the kernel behind a barrier). Two binaries: this one ($B,
# ROUND_X_ROWS 8: every row count rounds in the kernel) and the same with ROUND_X_ROWS 0 ($P:
# the pass, as before the session). One, two, four and eight tokens of 22016x4096, one and eight
# of 14336x4096; ggml-vulkan's mul_mat_vec beside. Ours as streams, second of two processes
# (lib.sh's bench2). Then the quantized, gemv and grouped_counted tests under the validation
# layer (the binary with the kernel rounding).
source docs/perf/lib.sh
P=$PWD/carry/vk-sgmat-pass
gpu_line
GG=""
for q in q4_0 q4_K q6_K q8_0 mxfp4; do GG="$GG $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096 $q:14336x8x4096"; done
ggml --min-time 0.25 $GG
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,2x22016x4096,4x22016x4096,8x22016x4096,8x14336x4096
for q in q4_0 q4_K q6_K q8_0 mxfp4 iq4_nl; do
  bench2 "inline $q" $B --types f16:f32 --weights $q --shapes $S
  bench2 "pass $q" $P --types f16:f32 --weights $q --shapes $S
  echo "$q done at $SECONDS s"
done
bench2 "inline q4_K f32" $B --types f32:f32 --weights q4_K --int8-activations on --shapes $S
bench2 "pass q4_K f32" $P --types f32:f32 --weights q4_K --int8-activations on --shapes $S
echo "ours done at $SECONDS s"
validation_tests quantized gemv grouped_counted
echo "all done at $SECONDS s"
