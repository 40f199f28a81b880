#!/bin/bash
# Issue 45, 2026-11-27 (30th session), call 2: the blocking call's overhead in h200-30-1 read
# 44-47 us for the binary before the change and 56-77 us after; here the whole `runtime` report
# of each, three times, interleaved (its breakdown splits a blocking call's cost). Then the host
# grouped and batched paths (staged through the pool since call 1) against the f64 reference,
# and the `api` tests bar the autotuner's (which compiles every candidate: minutes on NVIDIA).
NEW=$PWD/carry/vk-sgmat
OLD=$PWD/carry/old/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for round in 1 2 3; do
  for tag in old new; do
    B=$OLD; [ $tag = new ] && B=$NEW
    timeout 200 $B runtime 2>&1 | grep -vE "^device" | sed "s|^|[$tag r$round] |"
  done
done
echo "runtime done at $SECONDS s"
g() { timeout 100 $NEW gemm "$@" --repeat 3 2>&1 | grep -E "check|batch|grouped|verify|rror|anic|^ +[0-9]" | sed "s|^|[$*] |"; }
g 512 1024 2048 --batch 8
g 512 1024 2048 --batch 8 --shared-b --epilogue bias-col,relu --out f16
g 256 4096 1024 --groups 100,0,37,119 --epilogue bias-col,silu --out f16
g 256 4096 1024 --groups 100,0,37,119 --counts-on-device
g 1000 3000 500 --epilogue bias-row,gelu --out bf16 --types bf16:f32
echo "gemm checks done at $SECONDS s"
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/api --skip autotune --skip every_kernel_variant > /tmp/test.log 2>&1
echo "api: rc $?, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "^test .* (FAILED|ok)$|panicked" /tmp/test.log | head -20
echo "all done at $SECONDS s"
