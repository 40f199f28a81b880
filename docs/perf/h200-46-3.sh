#!/bin/bash
# 46th session, call 3 (call 2 again, its SPIR-V fixed: the table's fill branched and the K loop named the block before the branch as its entry; NVIDIA's compiler crashed on it, lavapipe ran it): IQ4's and MXFP4's codes beside 8-bit activations looked up in a 64-entry
# table in workgroup memory (kernel/blocks/code_table.rs: 16 codes at each of a word's 4 byte
# positions, one bank an entry within a lookup) where IQ4 read a 256-entry table of code pairs
# (about 3.5 invocations a bank) and MXFP4 computed its values with integer operations and a
# second dot product for the signs. Two binaries: this one ($B) and the session's commit before
# it ($OLD, 479fa2e). One, two, four and eight tokens of 22016x4096, one and eight of
# 14336x4096; ggml-vulkan's mul_mat_vec beside.
# Ours as streams, second of two processes (lib.sh's bench2).
# Then the quantized, gemv and grouped_counted tests under the validation layer.
source docs/perf/lib.sh
OLD=$PWD/carry/vk-sgmat-before
gpu_line
GG=""
for q in mxfp4 iq4_nl iq4_xs; do GG="$GG $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096"; done
ggml --min-time 0.25 $GG
echo "ggml done at $SECONDS s"
S=1x22016x4096,1x14336x4096,2x22016x4096,4x22016x4096,8x22016x4096,8x14336x4096
for q in mxfp4 iq4_nl iq4_xs; do
  bench2 "table $q" $B --types f16:f32 --weights $q --shapes $S
  bench2 "before $q" $OLD --types f16:f32 --weights $q --shapes $S
  echo "$q done at $SECONDS s"
done
bench2 "table mxfp4 f32" $B --types f32:f32 --weights mxfp4 --int8-activations on --shapes 1x22016x4096,8x22016x4096
bench2 "before mxfp4 f32" $OLD --types f32:f32 --weights mxfp4 --int8-activations on --shapes 1x22016x4096,8x22016x4096
echo "ours done at $SECONDS s"
validation_tests quantized gemv grouped_counted
echo "all done at $SECONDS s"
