#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 14: is the new `nt` lead (256x128, sixteen steps,
# right operand first) held at the power limit at 4096^3, as the 128x128 kernel is? `bench`
# after 0.2 s and 3 s of warm-up, `nt` and `tn`, SM clock, power and throttle reasons logged.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 50 > $OUT/smi-deep-6.csv &   # kept as docs/perf/h200-deep-6-smi.csv
SMI=$!
mark() { echo "MARK $(date +%H:%M:%S.%N | cut -c1-12) $*"; }
for L in nt tn; do timeout 30 $B bench --shapes 4096x4096x4096 --layout $L --reps 3 > /dev/null 2>&1; done
mark primed
for w in 0.2 3; do for L in nt tn; do
  sleep 2; mark "bench $L warm $w"
  timeout 40 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $L --reps 20 --warm $w 2>&1 | grep -E '^f16' | sed "s|^|warm $w |"
done; done
mark end
kill $SMI
echo "all done at $SECONDS s"
