#!/bin/bash
# Run on 2026-11-26 (docs/perf/h200x2-6.txt), the first call on a fresh nvidia-h200-x2 machine.
# Issue 16 on two H200s, sixth call: in the first bench process of calls 2 and 5, GPU 0 was
# slow whenever both GPUs worked at once (weight measured 0.217; resident 8192^3 on both 14.9 ms
# against 2.0, 16384^3 28.7 ms: about what GPU 1's 82% share takes alone, as if GPU 0's part
# cost ~14 ms however small), either GPU alone at full speed; the other processes were normal.
# Three short bench processes with every GPU's SM clock, power and active throttle reasons
# sampled every 250 ms beside them, to tell the machine (a throttle reason) from the host side.
nvidia-smi --query-gpu=name,driver_version,clocks_throttle_reasons.active --format=csv,noheader
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 250 > $OUT/clocks.txt 2>&1 &
for i in 1 2 3; do
  timeout 40 carry/vk-sgmat bench --devices all --shapes 8192x8192x8192 --reps 5 2>&1 | grep -v "^\[" | grep -E "^device|^8192"
  echo "== process $i done at $SECONDS s"
done
kill %1
awk -F', ' '{print $2, $5}' $OUT/clocks.txt | sort | uniq -c | sort -rn | head -12
