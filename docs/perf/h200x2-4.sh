#!/bin/bash
# Issue 16 on two H200s, fourth call (this commit's binary): the bench --devices all with every
# series warmed a second, samples and traces printed, host copies on 2 copy-only queues (the
# default) and on the compute queues; between them, device 0's kernel alone (GPU timestamps) on
# the band shapes the pinned pipeline multiplies (1024 and 2048 rows of 16384^3), to tell a
# slow kernel at those shapes from a kernel slowed by the copies beside it. Carry and prefix as
# in h200x2-1.sh. The test suite follows in its own call (docs/perf/gpu-tests.sh 240 4).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi dmon -s pc -d 1 > $OUT/dmon.txt 2>&1 &
VK_SGMAT_COPY_QUEUES=2 timeout 200 carry/vk-sgmat bench --devices all --reps 7 --trace 2>&1 | grep -v "^\[" > $OUT/bench-q2.txt
echo "== copy queues 2, at $SECONDS s"
grep -E "^[0-9]|^multi-gpu|^samples|^ +[0-9.]+ ms" $OUT/bench-q2.txt | cut -c1-240
timeout 120 carry/vk-sgmat bench --types f16:f32 --reps 10 \
  --shapes 1024x16384x16384,2048x16384x16384,8192x16384x16384,16384x16384x16384 2>&1 | grep -v "^\[" > $OUT/bands.txt
echo "== band shapes on device 0 alone, at $SECONDS s"; cat $OUT/bands.txt | cut -c1-200 | tail -12
VK_SGMAT_COPY_QUEUES=0 timeout 200 carry/vk-sgmat bench --devices all --reps 7 2>&1 | grep -v "^\[" > $OUT/bench-q0.txt
echo "== copy queues 0, at $SECONDS s"; tail -4 $OUT/bench-q0.txt | cut -c1-240
kill %1
echo "done at $SECONDS s"
