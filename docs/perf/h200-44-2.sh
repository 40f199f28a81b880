#!/bin/bash
# 44th session, call 2: call 1's script ran out of its 150 s limit after ggml-vulkan's part (its
# first process compiled its IQ4 pipelines: 145 s); ours on the same warm machine, the same
# binary, a minute later (the session's last 86 s of device time): IQ4_NL and IQ4_XS weights at
# one and eight tokens of a 22016x4096 weight, as streams, the second of two processes.
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
source docs/perf/lib.sh
for q in iq4_nl iq4_xs; do
  bench2 "new $q" $B --types f16:f32 --weights $q --shapes 1x22016x4096,8x22016x4096
  echo "$q done at $SECONDS s"
done
