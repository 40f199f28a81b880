#!/bin/bash
# Issue 13, 2026-11-26, call 9: how much 4096^3 f16->f32 `nn` (A copied, then the `tn` kernel)
# moves between processes, beside `tn` (no copy) and `nn` in place: five rounds of three
# bench processes, 20 timed runs each, after one priming round.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
for round in 0 1 2 3 4 5; do
  for c in "nn auto" "nn off" "tn auto"; do read L R <<< "$c"
    timeout 30 $B bench --types f16:f32 --shapes 4096x4096x4096,8192x8192x4096 --layout $L --relayout $R --reps 20 2>&1 | grep -E '^f16' | awk -v r=$round -v c="$L-$R" '{print "round", r, c, $6, $7, $8}'
  done
done
echo "all done at $SECONDS s"
