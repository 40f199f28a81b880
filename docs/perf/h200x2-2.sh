#!/bin/bash
# Issue 16 on two H200s, second call: after B's band buffer went back to the pool (it was
# freed and allocated again every call: 512 MiB at 16384^3 alone), the bench with 2 copy-only
# queues, then the trace (now with each part's host times and new buffers) with 2 and 0 copy
# queues, then the bench on the compute queues. Carry and prefix as in h200x2-1.sh.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
run() { # name, copy queues, bench args
  local name=$1 q=$2; shift 2
  VK_SGMAT_COPY_QUEUES=$q timeout 120 carry/vk-sgmat bench --devices all "$@" 2>&1 | grep -v "^\[" > $OUT/$name.txt
  echo "== $name (VK_SGMAT_COPY_QUEUES=$q $*), at $SECONDS s"
}
run bench-q2 2 --reps 7; tail -4 $OUT/bench-q2.txt
run trace-q2 2 --reps 5 --trace; grep -E "^trace|host" $OUT/trace-q2.txt
run trace-q0 0 --reps 5 --trace; grep -E "^trace|host" $OUT/trace-q0.txt
run bench-q0 0 --reps 7; tail -4 $OUT/bench-q0.txt
echo "done at $SECONDS s"
