#!/bin/bash
# 45th session, call 2: what bounds quantized decode at ~2.5 TB/s. (1) Rows of W per workgroup
# (`--gemv-cols`, default 4 at one token, 2 at eight) swept on this session's binary for the
# formats the issue names, one token of 22016x4096 and 14336x4096. (2) The same kernels with
# the shared-memory tree that sums the 128 invocations' partial sums removed ($NR, a binary
# built for this measurement only: its results are wrong, its time is the kernel without the
# seven barriers of the tree); f16 weights beside. Ours as streams, second of two processes.
source docs/perf/lib.sh
NR=$PWD/carry/vk-sgmat-noreduce
gpu_line
S=1x22016x4096,1x14336x4096
for q in q4_0 q4_K mxfp4 q8_0 q6_K; do
  for c in 1 2 4 8; do
    bench2 "cols $c $q" $B --types f16:f32 --weights $q --shapes $S --gemv-cols $c
  done
  echo "$q done at $SECONDS s"
done
for q in q4_0 q4_K q8_0; do
  bench2 "tree $q" $B --types f16:f32 --weights $q --shapes $S,8x22016x4096 --no-self-test
  XDG_CACHE_HOME=/tmp/nr bench2 "no tree $q" $NR --types f16:f32 --weights $q --shapes $S,8x22016x4096 --no-self-test
done
bench2 "tree f16" $B --types f16:f32 --layout nt --shapes $S,1x4096x4096 --no-self-test
XDG_CACHE_HOME=/tmp/nr bench2 "no tree f16" $NR --types f16:f32 --layout nt --shapes $S,1x4096x4096 --no-self-test
echo "all done at $SECONDS s"
