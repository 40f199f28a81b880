#!/bin/bash
# 45th session, call 5 (the change it measured was not kept: same time to 1%, see
# docs/performance.md): IQ4_NL's and IQ4_XS's codes paired on upload (quant/device.rs,
# `regroup_iq4`: each byte's two codes two values apart, so two pair-table entries make four
# consecutive values with a shift and an OR) in this session's final binary ($B), against the
# same binary before the pairing ($G, call 4's gathered sums) and ggml-vulkan's mul_mat_vec;
# one, two, four and eight tokens of 22016x4096, one of 14336x4096; q4_0 for scale. Then the
# quantized, gemv and grouped_counted tests under the validation layer (the final kernels).
source docs/perf/lib.sh
G=$PWD/carry/vk-sgmat-g
gpu_line
ggml --min-time 0.25 iq4_nl:22016x1x4096 iq4_xs:22016x1x4096 iq4_nl:14336x1x4096 iq4_xs:14336x1x4096 \
  iq4_nl:22016x8x4096 iq4_xs:22016x8x4096
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,2x22016x4096,4x22016x4096,8x22016x4096
for q in iq4_nl iq4_xs q4_0; do
  bench2 "new $q" $B --types f16:f32 --weights $q --shapes $S
  bench2 "unpaired $q" $G --types f16:f32 --weights $q --shapes $S
  echo "$q done at $SECONDS s"
done
validation_tests quantized gemv grouped_counted
echo "all done at $SECONDS s"
