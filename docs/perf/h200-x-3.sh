#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 3: (1) short K in `nt` (4096x4096x256, issue 13's
# 155 TFLOP/s) tuned over a short list of transposed workgroup-scope tiles, a priming process
# first; (2) the peers in two regimes, SM clock and power logged every 50 ms: `bench` after
# 0.2 s and after 3 s of warm-up (VKSG_X_WARM_MS, experimental build), mm_bench after 0.3 s and
# 3 s, at 2048^3 and 4096^3 in nn, nt and tn.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > $OUT/smi-3.csv   # kept as docs/perf/h200-x-3-smi.csv &
SMI=$!
mark() { echo "MARK $(date +%H:%M:%S.%N | cut -c1-12) $*"; }
F=t128_fr4x4_k64_u2_ct,t128_fr4x8_k32_u2_ct,t128_fr8x4_k32_u2_ct,t128_fr4x8_k64_u2_ct,t128_fr8x4_k64_u2_ct,t128_fr8x8_k32_u2_ct,t128_fr8x8_k32_u4_ct,t128_fr8x8_k32_u8_a0_ct,t128_fr8x8_k32_u8_a0_g8_ct,t256_fr8x8_k32_u2_ct,t256_fr8x8_k32_u4_ct,t256_fr8x16_k32_u2_ct,t256_fr16x8_k32_u2_ct
timeout 150 $B tune 4096 4096 256 --layout nt --filter $F --reps 3 2>&1 | grep -E '^16x16' | sed 's/^/prime /'
mark "tune short K"
timeout 120 $B tune 4096 4096 256 --layout nt --filter $F --reps 30 2>&1 | grep -E '^16x16|device' | sed 's/^/shortk /'
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x256 --layout nt --reps 30 2>&1 | grep -E '^f16' | sed 's/^/shortk bench /'
(cd /tmp/ggml && timeout 30 ./mm_bench --min-time 0.4 f16:4096x4096x256 2>&1 | grep '^ggml-vulkan' | sed 's/^/shortk /')
for L in nn nt tn; do timeout 30 $B bench --shapes 2048x2048x2048,4096x4096x4096 --layout $L --reps 3 > /dev/null 2>&1; done
mark primed
for round in 1 2; do
  for w in 200 3000; do for L in nn nt tn; do
    sleep 2; mark "r$round bench $L warm $w"
    VKSG_X_WARM_MS=$w timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096 --layout $L --reps 20 2>&1 | grep -E '^f16' | sed "s|^|r$round bench warm $w |"
  done; done
  for w in 0.3 3; do
    sleep 2; mark "r$round ggml warm $w"
    (cd /tmp/ggml && timeout 60 ./mm_bench --warmup $w --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan' | sed "s|^|r$round ggml warm $w |")
  done
done
mark end
kill $SMI
echo "all done at $SECONDS s"
