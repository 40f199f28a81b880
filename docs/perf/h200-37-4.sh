#!/bin/bash
# 37th session, call 4. Issue 47 prefill: the GEMM on the dequantized copy is slower than on f16
# weights whatever the copy holds or where in scratch it lies, and not because of the pass just
# before it (calls 2, 3). An experiment build (carry/vk-sgmat-x, not kept): VK_SGMAT_X4 times our
# f16 weights in the same process right after the quantized point; VK_SGMAT_X5 gives every
# buffer of 64 MB or more a dedicated allocation; VK_SGMAT_X6 stops the scratch pool rounding
# sizes up to a power of two.
B=$PWD/carry/vk-sgmat-x
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=512x22016x4096,2048x22016x4096
run() { # label env args
  local label=$1 env=$2; shift 2
  for pass in 1 2; do
    env $env timeout 150 $B bench "$@" --stream --reps 30 --warm 0.5 --trace > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "steps|rror|anic|same process" /tmp/b.txt | sed "s|^|[$label] |"
  done
}
run "f16 weights" X=1 --types f16:f32 --layout nt --shapes $S
run "q4_K" X=1 --types f16:f32 --weights q4_K --shapes $S
run "q4_K, then f16 in the process" VK_SGMAT_X4=1 --types f16:f32 --weights q4_K --shapes $S
run "q8_0, then f16 in the process" VK_SGMAT_X4=1 --types f16:f32 --weights q8_0 --shapes $S
run "q4_K dedicated" VK_SGMAT_X5=1 --types f16:f32 --weights q4_K --shapes $S
run "f16 dedicated" VK_SGMAT_X5=1 --types f16:f32 --layout nt --shapes $S
run "q4_K exact pool sizes" VK_SGMAT_X6=1 --types f16:f32 --weights q4_K --shapes $S
run "q4_K 2048 first" X=1 --types f16:f32 --weights q4_K --shapes 2048x22016x4096,512x22016x4096
echo "all done at $SECONDS s"
