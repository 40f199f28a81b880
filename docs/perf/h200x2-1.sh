#!/bin/bash
# Issue 16 on two H200s (nvidia-h200-x2, first time lent since the copy queues landed): the
# bench for the `multi-gpu h200x2` line with host copies on 2 copy-only queues (default) and on
# the compute queues, the per-band trace (x2-trace-1.sh) with 2, 0 and 1 copy queues, then the
# multi-GPU and stream tests with validation. Carry [".gl","carry"] after
# scripts/gpu-test-bundle.sh; prefix:
#   export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader
nvidia-smi topo -m | head -4
for q in 2 0; do
  echo "== bench --devices all, VK_SGMAT_COPY_QUEUES=$q"
  VK_SGMAT_COPY_QUEUES=$q timeout 120 carry/vk-sgmat bench --devices all --reps 7 > $OUT/bench-q$q.txt 2>&1
  tail -7 $OUT/bench-q$q.txt
  echo "at $SECONDS s"
done
for q in 2 0 1; do
  echo "== trace, VK_SGMAT_COPY_QUEUES=$q"
  VK_SGMAT_COPY_QUEUES=$q timeout 120 carry/vk-sgmat bench --devices all --reps 5 --trace 2>&1 | grep -v "^\[" > $OUT/trace-q$q.txt
  wc -l $OUT/trace-q$q.txt
  echo "at $SECONDS s"
done
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp carry/tests/layer/*.json $layer/ && xz -dc carry/tests/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for t in multi streams; do
  echo "== tests/$t.rs, validation on"
  LD_LIBRARY_PATH=$PWD/carry/tests/loader VK_LAYER_PATH=$layer timeout 90 carry/tests/bin/$t > $OUT/test-$t.txt 2>&1
  echo "rc $?"; grep -E "^test .*FAILED|test result|panicked|\] " $OUT/test-$t.txt | cut -c1-300 | head -8
done
echo "done at $SECONDS s"
