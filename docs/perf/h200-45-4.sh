#!/bin/bash
# 45th session, call 4: the matrix-vector kernels' sums gathered in two steps behind two
# barriers (sums.rs, `Sums::gathered`: `per` invocations a sum each add every `per`-th partial,
# then one adds the parts) where the tree took seven barriers; at most four sums (one token)
# still across subgroups. Three binaries: this one ($B), the same with every sum gathered ($G:
# SUBGROUP_SUMS_MAX 0), and the one before the session ($OLD: the tree, IQ4 from the constant).
# One, two, four and eight tokens of 22016x4096, one of 14336x4096; f16 weights too;
# ggml-vulkan's mul_mat_vec beside. Ours as streams, second of two processes (lib.sh's
# bench2). Then the quantized, gemv and grouped_counted tests under the validation layer.
source docs/perf/lib.sh
G=$PWD/carry/vk-sgmat-g
gpu_line
GG=""
for q in q4_0 q4_K q6_K q8_0 mxfp4 iq4_nl iq4_xs; do GG="$GG $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
ggml --min-time 0.25 $GG f16:22016x1x4096 f16:22016x8x4096
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,2x22016x4096,4x22016x4096,8x22016x4096
for q in q4_0 q4_K q6_K q8_0 mxfp4 iq4_nl iq4_xs; do
  bench2 "new $q" $B --types f16:f32 --weights $q --shapes $S
  bench2 "gathered $q" $G --types f16:f32 --weights $q --shapes $S
  bench2 "old $q" $OLD --types f16:f32 --weights $q --shapes $S
  echo "$q done at $SECONDS s"
done
for bin in new gathered old; do
  b=$B; [ $bin = gathered ] && b=$G; [ $bin = old ] && b=$OLD
  bench2 "$bin f16" $b --types f16:f32 --layout nt --shapes $S,1x4096x4096
done
echo "ours done at $SECONDS s"
validation_tests quantized gemv grouped_counted
echo "all done at $SECONDS s"
