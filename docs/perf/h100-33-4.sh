#!/bin/bash
# Issue 49, 2026-11-27 (33rd session), call 4 (it ran on an H100): after the review (a sparse A keeps a long K into
# a 16-bit C exact; the test's plan must run the family it tests). (1) The self-test, fused and
# small-devices test binaries under the validation layer (small devices: 16-bit storage taken
# away on this driver); (2) `gemm` into a 16-bit C with sizes built in past K = 2048 (f16 -> f16
# 4096³, bf16 -> bf16 4096x4096x8192); (3) `check` for four minutes with the self-test on, then
# `info`'s verdicts.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for bin in self_test fused small_devices; do
  start=$SECONDS
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/$bin --skip spirv_val > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|Check|left|right|ERROR" /tmp/test.log | head -6
done
for run in "4096 4096 4096 f16:f16 nt" "4096 4096 8192 bf16:bf16 nt"; do
  set -- $run
  XDG_CACHE_HOME=/tmp/xdg-check timeout 120 $B gemm $1 $2 $3 --types $4 --layout $5 --repeat 10 2>&1 | grep -E "^gemm|verify|self-test|time|rror" | sed "s|^|[$run] |"
done
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-check timeout 240 $B check > /tmp/check.log 2>&1
echo "check: rc $?, $((SECONDS - start)) s"; grep -E "FAIL|rror" /tmp/check.log | head -5; tail -2 /tmp/check.log
XDG_CACHE_HOME=/tmp/xdg-check $B info | grep -E "self-test|dropped"
echo "all done at $SECONDS s"
