#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 2: `tune` measured the `tn` 128x128 kernel at
# 310-312 TFLOP/s where `bench` measured the same kernel at 293-296 in the same call
# (h200-x-1.txt). The two time alike (GPU timestamps over the same plan) but warm up differently
# (tune 0.2 s, bench 1 s, ggml's mm_bench 0.3 s). Here: the SM clock, power and throttle
# reasons logged every 50 ms beside tune, bench with 0.2 / 1 / 3 s of warm-up
# (VKSG_X_WARM_MS, experimental build) and mm_bench with 0.3 / 3 s, two rounds.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,power.limit,enforced.power.limit --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > $OUT/smi-2.csv   # kept as docs/perf/h200-x-2-smi.csv &
SMI=$!
mark() { echo "MARK $(date +%H:%M:%S.%N | cut -c1-12) $*"; }
F=wg_t128_fr8x8_k32_u8_a0_g8_ct,wg_t256_fr16x8_k64_u8_a0_ct
for L in tn nt nn; do timeout 40 $B tune 2048 2048 2048 --layout $L --filter $F --reps 3 > /dev/null 2>&1; done
timeout 30 $B bench --shapes 4096x4096x4096 --layout nt --reps 3 > /dev/null 2>&1
mark primed
for round in 1 2; do
  sleep 3; mark "r$round tune tn"
  timeout 40 $B tune 4096 4096 4096 --layout tn --filter wg_t128_fr8x8_k32_u8_a0_g8_ct --reps 20 2>&1 | grep -E '^16x16' | sed "s|^|r$round tune tn |"
  for w in 200 1000 3000; do for L in tn nt; do
    sleep 3; mark "r$round bench $L warm $w"
    VKSG_X_WARM_MS=$w timeout 40 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $L --reps 20 2>&1 | grep -E '^f16' | sed "s|^|r$round bench warm $w |"
  done; done
  for w in 0.3 3; do
    sleep 3; mark "r$round ggml warm $w"
    (cd /tmp/ggml && timeout 40 ./mm_bench --warmup $w --min-time 0.4 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan' | sed "s|^|r$round ggml warm $w |")
  done
done
mark end
kill $SMI
echo "all done at $SECONDS s"
