#!/bin/bash
# Issue 16 on two H200s, third call: the medians of h200x2-2.sh swung 2-7x between runs of the
# same binary (resident 8192^3 on both GPUs 14.85 ms once, 2.0 otherwise), so this one prints
# every sample (bench --trace), a line per traced call and the slowest call's steps, with
# `nvidia-smi dmon` (clocks, power, per second) beside it. 2 copy-only queues, then the compute
# queues. Carry and prefix as in h200x2-1.sh.
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
nvidia-smi dmon -s pc -d 1 > $OUT/dmon.txt 2>&1 &
for q in 2 0; do
  VK_SGMAT_COPY_QUEUES=$q timeout 150 carry/vk-sgmat bench --devices all --reps 9 --trace 2>&1 | grep -v "^\[" > $OUT/trace-q$q.txt
  echo "== VK_SGMAT_COPY_QUEUES=$q, at $SECONDS s"
  grep -E "^[0-9]|^multi-gpu|^samples|^traced|^ +[0-9.]+ ms" $OUT/trace-q$q.txt | cut -c1-250
done
kill %1
echo "done at $SECONDS s"
