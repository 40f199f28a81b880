#!/bin/bash
# Issue 49, 2026-11-27 (33rd session), call 1: the driver self-test on NVIDIA. (1) The
# self-test, fused and batched-fused test binaries under the validation layer (a fault injected
# into the f16 -> f32 config, caught on this driver's kernels); (2) what the self-test costs a
# first process: `gemm` with the driver's shader disk cache off and our caches in a fresh
# directory, with and without the self-test, then a second process on the kept verdicts and
# pipelines; (3) `check` with the self-test on, then `info`'s verdicts (nothing may be dropped).
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for bin in self_test fused batched_fused; do
  start=$SECONDS
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/$bin --skip spirv_val > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|Check|left|right" /tmp/test.log | head -6
done
export __GL_SHADER_DISK_CACHE=0
TIMEFORMAT="wall %R s"
for shape in "512 4096 4096" "4096 4096 4096"; do
  for st in on off; do
    d=/tmp/xdg-${st}-${shape// /x}
    flag=""; [ $st = off ] && flag=--no-self-test
    for proc in first second; do
      { time XDG_CACHE_HOME=$d timeout 120 $B gemm $shape --types f16:f32 --layout nt --repeat 20 $flag 2>&1 | grep -E "^gemm|verify|time|rror" | sed "s|^|[$shape self-test $st, $proc process] |"; } 2>&1
    done
  done
done
unset __GL_SHADER_DISK_CACHE
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-check timeout 300 $B check > /tmp/check.log 2>&1
echo "check: rc $?, $((SECONDS - start)) s"; tail -4 /tmp/check.log
XDG_CACHE_HOME=/tmp/xdg-check $B info | grep -E "self-test|dropped|->"
ls -la /tmp/xdg-check/vk-sgmat/
echo "all done at $SECONDS s"
