#!/bin/bash
# Issue 16: host copies of the multi-device pipeline on copy lanes (three streams per device; a
# copy-only queue family where the device has one) against the previous binary (one stream: the
# copies in turn with the kernels on the compute queue), in one call on two GPUs. Run from the
# checkout's root with carry [".gl","carry"]; carry/ holds vk-sgmat (this commit), vk-sgmat-old
# (51bf42d), the stripped test binaries test-multi and test-streams, and layer/ (the Khronos
# validation layer of the lavapipe sysroot, its JSON's library_path made relative):
#   export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; bash docs/perf/x2-copy-queues-1.sh | tee $OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== tests on the GPUs, validation on"
VK_LAYER_PATH=$PWD/carry/layer timeout 90 carry/test-multi 2>&1 | tail -4
VK_LAYER_PATH=$PWD/carry/layer timeout 60 carry/test-streams 2>&1 | tail -3
echo "tested at $SECONDS s"
for run in new old; do
  bin=carry/vk-sgmat; [ $run = old ] && bin=carry/vk-sgmat-old
  echo "== bench --devices all, $run binary"
  timeout 120 $bin bench --devices all --reps 7 2>&1 | tail -7
  echo "at $SECONDS s"
done
for split in rows cols; do
  echo "== pinned 16384^3 split $split, new binary"
  timeout 70 carry/vk-sgmat gemm 16384 16384 16384 --devices all --split $split --repeat 5 2>&1 | tail -3
  echo "at $SECONDS s"
done
echo "== bench --devices all, new binary, copies on compute queues (VK_SGMAT_NO_COPY_QUEUE=1)"
VK_SGMAT_NO_COPY_QUEUE=1 timeout 120 carry/vk-sgmat bench --devices all --reps 7 2>&1 | tail -7
echo "done at $SECONDS s"
