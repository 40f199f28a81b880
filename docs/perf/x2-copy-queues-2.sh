#!/bin/bash
# Issue 16, second call: the multi-device tests on both GPUs with a validation layer that knows
# the NVIDIA driver's extensions (1.4.363, from Debian forky; the lavapipe sysroot's 1.4.309
# reports VK_KHR_shader_bfloat16 as unknown), then the pinned path with host copies on the
# copy-only queues against the compute queues (VK_SGMAT_NO_COPY_QUEUE=1), twice each, same
# binary (d8fe522). Carry and prefix as in x2-copy-queues-1.sh.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tests on the GPUs, validation on"
for t in multi streams api; do
  VK_LAYER_PATH=$PWD/carry/layer timeout 100 carry/test-$t 2>&1 | grep -E "^test .*FAILED|test result|panicked|\] " | cut -c1-400 | head -12
done
echo "tested at $SECONDS s"
for mode in copy nocopy copy nocopy; do
  env=""; [ $mode = nocopy ] && env="VK_SGMAT_NO_COPY_QUEUE=1"
  echo "== bench --devices all, copies on $mode queues"
  env $env timeout 100 carry/vk-sgmat bench --devices all --reps 7 2>&1 | grep -E "^[0-9]+x|multi-gpu"
  echo "at $SECONDS s"
done
for mode in copy nocopy; do
  env=""; [ $mode = nocopy ] && env="VK_SGMAT_NO_COPY_QUEUE=1"
  for d in 0 all; do
    echo "== pinned 8192^3 on devices $d, $mode queues"
    env $env timeout 40 carry/vk-sgmat gemm 8192 8192 8192 --devices $d --repeat 9 2>&1 | grep -E "^pinned|^host"
  done
done
echo "done at $SECONDS s"
