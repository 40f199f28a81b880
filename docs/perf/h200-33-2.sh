#!/bin/bash
# Issue 49, 2026-11-27 (33rd session), call 2: kernels with sizes built in are now tested on
# their own pipeline at their own N and K (h200-33-1 compiled a twin without them: +12.6 s at
# 4096^3 in a first process). (1) The self-test and fused test binaries under the validation
# layer (the injected fault now also on a kernel with sizes built in); (2) first and second
# processes with the driver's shader disk cache off, self-test on and off, f16 at 512x4096x4096
# and 4096^3 and i8 at 4096^3; (3) `check --types f16:f32` for two minutes with the self-test
# on, then `info`'s verdicts.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for bin in self_test fused; do
  start=$SECONDS
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/$bin --skip spirv_val > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|Check|left|right" /tmp/test.log | head -6
done
export __GL_SHADER_DISK_CACHE=0
TIMEFORMAT="wall %R s"
for run in "512 4096 4096 f16:f32" "4096 4096 4096 f16:f32" "4096 4096 4096 i8:i32"; do
  set -- $run
  for st in on off; do
    d=/tmp/xdg-${st}-$1x$2x$3-${4/:/}
    flag=""; [ $st = off ] && flag=--no-self-test
    for proc in first second; do
      { time XDG_CACHE_HOME=$d timeout 120 $B gemm $1 $2 $3 --types $4 --layout nt --repeat 20 $flag 2>&1 | grep -E "verify|time|rror" | sed "s|^|[$run self-test $st, $proc process] |"; } 2>&1
    done
  done
done
unset __GL_SHADER_DISK_CACHE
start=$SECONDS
XDG_CACHE_HOME=/tmp/xdg-check timeout 120 $B check --types f16:f32 > /tmp/check.log 2>&1
echo "check: rc $?, $((SECONDS - start)) s"; grep -vc ": ok" /tmp/check.log; tail -2 /tmp/check.log
XDG_CACHE_HOME=/tmp/xdg-check $B info | grep -E "self-test|dropped"
echo "all done at $SECONDS s"
