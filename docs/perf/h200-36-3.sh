#!/bin/bash
# 36th session, call 3. Issue 47: grouped GEMMs over quantized experts (a mixture of experts
# as GGUF files hold it, Context::upload_quantized_experts). Mixtral's 8 experts of
# 14336x4096: prefill groups 1200..36 (each group's expert dequantized, then its GEMM) in
# q4_K and q8_0, against our f16 experts (nt, the same orientation) and the loop of torch.mm
# in the same call; decode (one and eight tokens routed top-2: the blocks streamed, 8-bit
# activations) against single decode GEMMs. Checked grouped GEMMs at odd sizes; the quantized
# test binary under the validation layer.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/quantized --skip spirv_val > /tmp/test.log 2>&1
echo "quantized tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "panicked|FAILED|bound" /tmp/test.log | head -8
G=1200,900,700,500,400,200,60,36
timeout 120 python3 carry/scripts/grouped_reference.py --groups $G --types f16:f32 2>&1 | sed "s|^|[torch] |"
for pass in 1 2; do
  timeout 120 $B bench --groups $G --types f16:f32 --layout nt --reps 20 > /tmp/b.txt 2>&1
  [ $pass = 2 ] && grep -E "grouped|GEMMs|rror" /tmp/b.txt | sed "s|^|[f16 experts] |"
done
q_moe() { # label M groups weights [types]
  local label=$1 m=$2 g=$3 q=$4 ty=${5:-f16:f32}
  for pass in 1 2; do
    timeout 120 $B gemm $m 14336 4096 --weights $q --groups $g --types $ty --repeat 20 > /tmp/q.txt 2>&1
    [ $pass = 2 ] && grep -vE "^device" /tmp/q.txt | sed "s|^|[$label $q] |"
  done
}
for q in q4_K q8_0; do
  q_moe prefill 3996 $G $q
  q_moe "decode 1 token" 2 1,0,0,0,1,0,0,0 $q
  q_moe "decode 8 tokens" 16 3,2,2,1,3,2,2,1 $q
done
for q in q4_K q8_0; do
  for pass in 1 2; do
    timeout 90 $B bench --types f16:f32 --weights $q --shapes 1x14336x4096,2x14336x4096 --stream --reps 50 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -vE "^\[|^$" /tmp/b.txt | grep -E "[0-9]x[0-9]|rror" | sed "s|^|[single $q] |"
  done
done
for q in q4_0 q6_K mxfp4 q2_K; do
  timeout 60 $B gemm 4123 1031 4352 --weights $q --groups 1,3,0,2000,17,2102 --repeat 2 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check $q] |"
  timeout 60 $B gemm 40 1031 4352 --weights $q --groups 1,39 --types f32:f32 --repeat 2 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check f32 $q] |"
done
echo "all done at $SECONDS s"
