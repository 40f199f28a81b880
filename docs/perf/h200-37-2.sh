#!/bin/bash
# 37th session, call 2. Issue 47 prefill: the GEMM on the dequantized copy ran 22-27% slower
# than on our f16 weights (call 1). Is it the data? An experiment build (carry/vk-sgmat-x, not
# kept) fills the copy with hashed values in +-[0.5, 1) instead of the dequantized ones
# (VK_SGMAT_X=hash); each dispatch timed apart (`--trace`).
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
for round in 1 2; do
  run "f16 weights" X=1 --types f16:f32 --layout nt --shapes $S
  for q in q4_K q8_0; do
    run "$q dequantized" XDG_CACHE_HOME=/tmp/c1 --types f16:f32 --weights $q --shapes $S
    run "$q hashed copy" "XDG_CACHE_HOME=/tmp/c2 VK_SGMAT_X=hash" --types f16:f32 --weights $q --shapes $S
  done
done
run "q4_K 128x128 tile" XDG_CACHE_HOME=/tmp/c1 --types f16:f32 --weights q4_K --shapes $S --scheme wg_t128_fr8x8_k32_u16_a0_g8_rf_ct
run "f16 128x128 tile" X=1 --types f16:f32 --layout nt --shapes $S --scheme wg_t128_fr8x8_k32_u16_a0_g8_rf_ct
echo "all done at $SECONDS s"
