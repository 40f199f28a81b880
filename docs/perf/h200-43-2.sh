#!/bin/bash
# 43rd session, call 2 (issue 48): pipelines compiled by a helper process (`PipelineCompiler`,
# the CLI's default on NVIDIA's driver: `HelperOnNvidia` of its own binary) against compiled in
# the process (`--compile-in-process`), cold (the driver's disk cache and ours off, a fresh
# cache directory each process), interleaved.
# (1) `bench --first-runs 1`, the layer's four GEMMs at 512 tokens (f16 -> f16, nt): preparation
#     and the first run against the steady state, two rounds each.
# (2) examples/prepare_in_parallel 512, in process and with helpers, two rounds each.
# (3) `gemm 4096 4096 4096` (f16 -> f32, checked) and `runtime` as a first process, wall time.
# (4) Checked under the validation layer with the helper: `gemm` at odd sizes on three types.
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
cold() { __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 150 "$@"; }
f() { # label args
  local label=$1; shift
  cold $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1 "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |"
}
for r in 1 2; do f "helper r$r"; f "in process r$r" --compile-in-process; done
echo "(1) done at $SECONDS s"
for r in 1 2; do
  for mode in helper in-process; do
    arg=""; [ $mode = helper ] && arg=helper
    cold carry/examples/prepare_in_parallel 512 $arg 2>&1 | tail -2 | sed "s|^|[prepare_in_parallel $mode r$r] |"
  done
done
echo "(2) done at $SECONDS s"
for mode in helper in-process; do
  arg=""; [ $mode = in-process ] && arg=--compile-in-process
  t0=$EPOCHREALTIME
  cold $B gemm 4096 4096 4096 --types f16:f32 $arg 2>&1 | grep -E "verify|time|pipelines|rror" | sed "s|^|[gemm 4096^3 $mode] |"
  t1=$EPOCHREALTIME; echo "[gemm 4096^3 $mode] wall $(awk "BEGIN{print $t1 - $t0}") s"
  t0=$EPOCHREALTIME
  cold $B runtime $arg > $OUT/runtime-$mode.txt 2>&1
  t1=$EPOCHREALTIME; echo "[runtime $mode] rc $?, wall $(awk "BEGIN{print $t1 - $t0}") s"
  grep -iE "layer|first|rror" $OUT/runtime-$mode.txt | head -12 | sed "s|^|[runtime $mode] |"
done
echo "(3) done at $SECONDS s"
t=carry/tests layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/
xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for ty in f16:f32 bf16:f16 f32:f32; do
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 120 \
    $B gemm 515 4000 4097 --types $ty --alpha 2 --beta 0.5 --validation --no-pipeline-cache 2>&1 | grep -E "verify|pipelines|alid|rror|anic" | sed "s|^|[validation $ty] |"
done
echo "all done at $SECONDS s"
