#!/bin/bash
# 42nd session, call 5 (issue 46): the layer GEMMs that trail ggml-vulkan most in call 4
# (128x4096x4096 at 0.64, 128x12288x4096 0.80, 128x4096x11008 0.83, 512x4096x4096 0.90) on
# the mid-grid schemes and K splits the planner does not pick for them, each forced with
# --scheme/--split-k, as streams, the second of two processes; the planner's choice first.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S0=wg_t128_fr4x4_k64_u2_ct; S1=wg_t128_fr8x8_k32_u8_a0_g8_ct; S2=wg_t256_fr16x8_k64_u16_a0_rf_ct
b() { # shape [scheme split]
  local shape=$1; shift
  local args=""; [ $# -gt 0 ] && args="--scheme $1 --split-k $2"
  for pass in 1 2; do
    timeout 60 $B bench --types f16:f32 --layout nt --shapes $shape --stream --reps 30 $args > /tmp/b.txt 2>&1
  done
  grep -E "^f16|rror|anic" /tmp/b.txt | sed "s|^|[$shape ${1:-default} ${2:-}] |"
}
b 128x4096x4096; b 128x4096x4096 $S0 4; b 128x4096x4096 $S1 2; b 128x4096x4096 $S1 4; b 128x4096x4096 $S1 8
b 128x12288x4096; b 128x12288x4096 $S1 1; b 128x12288x4096 $S1 4; b 128x12288x4096 $S0 2
b 128x4096x11008; b 128x4096x11008 $S1 4; b 128x4096x11008 $S0 4; b 128x4096x11008 $S0 8
b 512x4096x4096; b 512x4096x4096 $S2 1; b 512x4096x4096 $S2 4; b 512x4096x4096 $S1 2; b 512x4096x4096 $S1 4
echo "all done at $SECONDS s"
