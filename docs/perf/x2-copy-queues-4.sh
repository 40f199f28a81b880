#!/bin/bash
# Issue 16, fourth call (this commit's binary and tests): the tests on the GPUs with validation
# layer and loader 1.4.363 (carry/layer, carry/loader; see x2-copy-queues-3.sh), then
# bench --devices all with host copies on 2 copy-only queues (the default) and on the compute
# queues (VK_SGMAT_COPY_QUEUES=0). Carry and prefix as in x2-copy-queues-1.sh.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tests on the GPUs, validation on"
for t in multi streams api; do
  LD_LIBRARY_PATH=$PWD/carry/loader VK_LAYER_PATH=$PWD/carry/layer timeout 60 carry/test-$t 2>&1 \
    | grep -E "^test .*FAILED|test result|panicked|\] " | cut -c1-300 | head -8
done
echo "tested at $SECONDS s"
for q in 2 0; do
  echo "== bench --devices all, VK_SGMAT_COPY_QUEUES=$q"
  VK_SGMAT_COPY_QUEUES=$q timeout 100 carry/vk-sgmat bench --devices all --reps 7 2>&1 | tail -7
  echo "at $SECONDS s"
done
