#!/bin/bash
# Issue 16, third call: (1) the tests on the GPUs with validation layer and loader 1.4.363 (from
# Debian forky, in carry/layer and carry/loader: the .gl loader, 1.3.239, asks the layer for a
# function that newer headers made instance-level, which the layer reports); (2) is the pinned
# path's spread on copy queues the copy engines' assignment? One device, 8192^3, a process each,
# with 2 copy-only queues (in and out apart), 1 (both directions on one queue) and 0 (compute
# queues). Carry and prefix as in x2-copy-queues-1.sh.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tests on the GPUs, validation on"
for t in multi streams api; do
  LD_LIBRARY_PATH=$PWD/carry/loader VK_LAYER_PATH=$PWD/carry/layer timeout 60 carry/test-$t --skip a_failing_device 2>&1 \
    | grep -E "^test .*FAILED|test result|panicked|\] " | cut -c1-300 | head -8
done
echo "tested at $SECONDS s"
LD_LIBRARY_PATH=$PWD/carry/loader VK_LAYER_PATH=$PWD/carry/layer timeout 60 carry/test-multi a_failing_device 2>&1 \
  | grep -E "^test |test result|panicked|\] |expected|left|right" | cut -c1-300 | head -8
echo "at $SECONDS s"
for q in 2 1 0 2 1 0 2 2 1; do
  echo "== VK_SGMAT_COPY_QUEUES=$q"
  VK_SGMAT_COPY_QUEUES=$q timeout 40 carry/vk-sgmat gemm 8192 8192 8192 --devices 0 --repeat 9 2>&1 | grep -E "^device|^pinned"
done
echo "done at $SECONDS s"
