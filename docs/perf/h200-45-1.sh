#!/bin/bash
# 45th session, call 1: IQ4_NL and IQ4_XS decode on 8-bit activations reading both codes of a
# byte with one load from a table in workgroup memory (this session's binary, $B) against the
# binary before it ($OLD: the uvec4 constant picked per code) and ggml-vulkan's mul_mat_vec on
# the same types; one and eight tokens of 22016x4096, one of 14336x4096; q4_0 for scale. Ours
# as streams, the second of two processes (lib.sh's bench2). Then the quantized and gemv tests
# under the Khronos validation layer: the IQ4 kernels' first run there.
source docs/perf/lib.sh
gpu_line
ggml --min-time 0.3 iq4_nl:22016x1x4096 iq4_xs:22016x1x4096 iq4_nl:14336x1x4096 iq4_xs:14336x1x4096 \
  iq4_nl:22016x8x4096 iq4_xs:22016x8x4096 q4_0:22016x1x4096
echo "ggml done at $SECONDS s"
for q in iq4_nl iq4_xs q4_0; do
  for which in new old; do
    bin=$B
    [ $which = old ] && bin=$OLD
    [ $q = q4_0 ] && [ $which = old ] && continue
    bench2 "$which $q" $bin --types f16:f32 --weights $q --shapes 1x22016x4096,8x22016x4096,1x14336x4096
  done
  echo "$q done at $SECONDS s"
done
validation_tests quantized gemv
echo "all done at $SECONDS s"
