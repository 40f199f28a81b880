#!/bin/bash
# 45th session, call 3: the matrix-vector kernels summing their 128 invocations' partial sums
# across each subgroup in one instruction and the four subgroups' sums behind one barrier
# (this session's binary, $B, which also reads IQ4 codes from the pair table of call 1)
# against the binary before the session ($OLD: a shared-memory tree of seven barriers), beside
# ggml-vulkan's mul_mat_vec on the same types: one token of 22016x4096 and 14336x4096, eight
# of 22016x4096; f16 weights too. Ours as streams, second of two processes (lib.sh's bench2).
# Then the quantized, gemv and grouped_counted tests under the Khronos validation layer.
source docs/perf/lib.sh
gpu_line
G=""
for q in q4_0 q4_K q6_K q8_0 mxfp4 iq4_nl iq4_xs; do G="$G $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
ggml --min-time 0.25 $G f16:22016x1x4096 f16:14336x1x4096 f16:4096x1x4096
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,8x22016x4096
for q in q4_0 q4_K q6_K q8_0 mxfp4 iq4_nl iq4_xs; do
  bench2 "new $q" $B --types f16:f32 --weights $q --shapes $S
  bench2 "old $q" $OLD --types f16:f32 --weights $q --shapes $S
  echo "$q done at $SECONDS s"
done
bench2 "new f16" $B --types f16:f32 --layout nt --shapes $S,1x4096x4096
bench2 "old f16" $OLD --types f16:f32 --layout nt --shapes $S,1x4096x4096
echo "ours done at $SECONDS s"
validation_tests quantized gemv grouped_counted
echo "all done at $SECONDS s"
