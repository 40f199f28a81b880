#!/bin/bash
# 37th session, call 3. Issue 47 prefill: the GEMM on the dequantized copy is slower than on
# f16 weights whatever the copy holds (call 2). An experiment build (carry/vk-sgmat-x, not kept):
# VK_SGMAT_X2=twice runs the GEMM twice after the pass (is it the pass just before?),
# VK_SGMAT_X3=BYTES moves the copy that far into scratch (is it where the copy lies?).
B=$PWD/carry/vk-sgmat-x
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=512x22016x4096,2048x22016x4096
run() { # label env args
  local label=$1 env=$2; shift 2
  for pass in 1 2; do
    env $env timeout 150 $B bench "$@" --stream --reps 30 --warm 0.5 --trace > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "steps|rror|anic" /tmp/b.txt | sed "s|^|[$label] |"
  done
}
run "f16 weights" X=1 --types f16:f32 --layout nt --shapes $S
for q in q4_K q8_0; do
  run "$q" X=1 --types f16:f32 --weights $q --shapes $S
  run "$q gemm twice" VK_SGMAT_X2=twice --types f16:f32 --weights $q --shapes $S
done
for off in 256 65536 2097152 33554432; do
  run "q4_K copy at +$off" VK_SGMAT_X3=$off --types f16:f32 --weights q4_K --shapes $S
done
echo "all done at $SECONDS s"
