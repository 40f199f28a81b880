#!/bin/bash
# 47th session, call 3. The session's binary ($B) against the one before it ($OLD, 00cd62a) on
# quantized experts (Mixtral's 8 of 14336x4096, q4_K, f16 activations, f32 C): prefill groups
# 1200..36 (the 36-row group now decode in chunks) and a small batch of groups 40..9 (all in
# chunks now), `gemm --groups --repeat 20` (verified; GPU span per run, median). Then `gemm`
# verified on NVIDIA in chunks (23 and 41 rows) in four formats, bf16 activations in chunks
# against the dense copy, and the quantized, gemv and grouped_counted tests under the validation
# layer.
source docs/perf/lib.sh
gpu_line
ex() { # label binary groups rows
  for pass in 1 2; do
    timeout 120 $2 gemm $4 14336 4096 --weights q4_K --groups $3 --types f16:f32 --repeat 20 > /tmp/q.txt 2>&1
    [ $pass = 2 ] && grep -E "median|rror|anic|verified" /tmp/q.txt | head -4 | cut -c1-240 | sed "s|^|[$1] |"
  done
}
ex "moe" $B 1200,900,700,500,400,200,60,36 3996
ex "moe before" $OLD 1200,900,700,500,400,200,60,36 3996
ex "moe small" $B 40,32,24,16,16,12,11,9 160
ex "moe small before" $OLD 40,32,24,16,16,12,11,9 160
echo "experts done at $SECONDS s"
for q in q4_K q6_K q8_0 mxfp4; do
  for m in 23 41; do
    timeout 60 $B gemm $m 22016 4096 --weights $q --types f16:f32 --matrix-vector on --repeat 5 2>&1 | grep -E "weights|rel.err|rror|anic" | cut -c1-240 | sed "s|^|[gemm $q $m] |"
  done
done
S=16x22016x4096,32x22016x4096,48x22016x4096
bench2 "chunks bf16" $B --types bf16:f32 --weights q4_K --shapes $S
bench2 "copy bf16" $B --types bf16:f32 --weights q4_K --shapes $S --matrix-vector off
echo "ours done at $SECONDS s"
validation_tests quantized gemv grouped_counted
echo "all done at $SECONDS s"
