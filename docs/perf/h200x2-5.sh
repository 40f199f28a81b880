#!/bin/bash
# Issue 16 on two H200s, fifth call: the driver's device groups (vk-sgmat info), tests/multi.rs
# with validation (the deterministic buffer-reuse test), and the bench --devices all once more
# (2 copy-only queues) for a second sample of the headline figures. Carry and prefix as in
# h200x2-1.sh, after scripts/gpu-test-bundle.sh.
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
carry/vk-sgmat info | grep -E "^device|device groups"
L=/tmp/vk-sgmat-layer; mkdir -p $L && cp carry/tests/layer/*.json $L/ && xz -dc carry/tests/layer/libVkLayer_khronos_validation.so.xz > $L/libVkLayer_khronos_validation.so
LD_LIBRARY_PATH=$PWD/carry/tests/loader VK_LAYER_PATH=$L timeout 90 carry/tests/bin/multi 2>&1 | grep -E "^test |test result|panicked|left|right"
echo "== bench, at $SECONDS s"
timeout 150 carry/vk-sgmat bench --devices all --reps 7 2>&1 | grep -v "^\[" | tail -6
echo "done at $SECONDS s"
