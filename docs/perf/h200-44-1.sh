#!/bin/bash
# 44th session, call 1 (the session's last 4.7 minutes of device time): the new IQ4_NL and
# IQ4_XS weights at one and eight tokens of a 22016x4096 weight beside ggml-vulkan's
# mul_mat_vec on the same types, q4_0 beside them for scale. Ours as streams, the second of two
# processes (lib.sh's bench2).
source docs/perf/lib.sh
gpu_line
ggml --min-time 0.3 iq4_nl:22016x1x4096 iq4_xs:22016x1x4096 q4_0:22016x1x4096 iq4_nl:22016x8x4096 iq4_xs:22016x8x4096
echo "ggml done at $SECONDS s"
for q in iq4_nl iq4_xs q4_0; do
  bench2 "new $q" $B --types f16:f32 --weights $q --shapes 1x22016x4096,8x22016x4096
  echo "$q done at $SECONDS s"
done
