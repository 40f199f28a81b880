#!/bin/bash
# 48th session, call 1. Issue 47: (1) the weights as A (C = W X^T, ggml's orientation,
# `bench --weights-first`, shapes as ggml's WxTxK) from 9 to 64 tokens in chunks of 8 against
# the dense copy (`--matrix-vector off`, the only path before), beside the same tokens with the
# weights as B and ggml-vulkan; (2) NVFP4, new: decode at 1 and 8 tokens and prefill at 512,
# its blocks interleaved on upload (this binary) against kept whole (carry/vk-sgmat-whole),
# MXFP4 beside, ggml-vulkan's nvfp4 beside; `gemm` verifying NVFP4 on the GPU; (3) the quantized
# tests under the validation layer. Ours as streams, the second of two processes.
source docs/perf/lib.sh
WHOLE=$PWD/carry/vk-sgmat-whole
gpu_line
ggml --min-time 0.25 q4_K:22016x16x4096 q4_K:22016x32x4096 q8_0:22016x16x4096 q8_0:22016x32x4096 \
  nvfp4:22016x1x4096 nvfp4:14336x1x4096 nvfp4:22016x8x4096 nvfp4:14336x8x4096 mxfp4:22016x1x4096 \
  nvfp4:22016x512x4096
echo "ggml done at $SECONDS s"
WF=22016x9x4096,22016x16x4096,22016x32x4096,22016x48x4096,22016x64x4096
WB=9x22016x4096,16x22016x4096,32x22016x4096,48x22016x4096,64x22016x4096
for q in q4_K q8_0; do
  bench2 "w first chunks $q" $B --types f16:f32 --weights $q --weights-first --shapes $WF
  bench2 "w first copy $q" $B --types f16:f32 --weights $q --weights-first --shapes $WF --matrix-vector off
  bench2 "w second chunks $q" $B --types f16:f32 --weights $q --shapes $WB
  echo "$q done at $SECONDS s"
done
D=1x22016x4096,8x22016x4096,1x14336x4096,8x14336x4096,512x22016x4096
bench2 "nvfp4 interleaved" $B --types f16:f32 --weights nvfp4 --shapes $D
bench2 "nvfp4 whole" $WHOLE --types f16:f32 --weights nvfp4 --shapes $D
bench2 "mxfp4" $B --types f16:f32 --weights mxfp4 --shapes $D
bench2 "nvfp4 w first" $B --types f16:f32 --weights nvfp4 --weights-first --shapes 22016x1x4096,22016x8x4096,22016x16x4096
echo "ours done at $SECONDS s"
for shape in "1 22016 4096" "8 14336 4096" "23 22016 4096" "512 4096 4096"; do
  timeout 60 $B gemm $shape --types f16:f32 --weights nvfp4 --repeat 5 2>&1 | grep -E "weights|rel.err|rror|anic" | sed "s|^|[gemm nvfp4] |"
done
timeout 60 $B gemm 41 14336 4096 --types f32:f32 --weights nvfp4 --repeat 5 2>&1 | grep -E "weights|rel.err|rror|anic" | sed "s|^|[gemm nvfp4 f32] |"
echo "gemm done at $SECONDS s"
validation_tests quantized
echo "all done at $SECONDS s"
