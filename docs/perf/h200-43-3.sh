#!/bin/bash
# 43rd session, call 3 (issue 48): call 2 again with each preparation's pipelines counted
# (from a helper; taken from the pipeline cache by the driver, its creation feedback), to tell
# whether call 2's two slow GEMMs of the helper's second round (4.06 and 3.96 first/steady)
# were compiled in the process or created from the helper's cache. Cold (the driver's disk
# cache and ours off, a fresh cache directory each process).
# (1) `bench --first-runs 1`, the layer's four GEMMs at 512 tokens: helper three rounds, in
#     process once.
# (2) examples/prepare_in_parallel 512, with helpers and in process, once each.
# (3) the validation layer on a `gemm` through the helper (creation feedback now chained).
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
cold() { __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 150 "$@"; }
f() { # label args
  local label=$1; shift
  cold $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1 "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|\(([0-9.]+) TFLOP/s\)||; s|, first result [0-9.]+ ms||"
}
f "helper r1"; f "helper r2"; f "in process" --compile-in-process; f "helper r3"
echo "(1) done at $SECONDS s"
for mode in helper in-process; do
  arg=""; [ $mode = helper ] && arg=helper
  cold carry/examples/prepare_in_parallel 512 $arg 2>&1 | tail -2 | sed "s|^|[prepare_in_parallel $mode] |"
done
echo "(2) done at $SECONDS s"
t=carry/tests layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/
xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
__GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 120 \
  $B gemm 515 4000 4097 --types f16:f32 --alpha 2 --beta 0.5 --validation --no-pipeline-cache 2>&1 | grep -E "verify|pipelines|alid|rror|anic" | grep -v "predates\|spec states" | sed "s|^|[validation] |"
echo "all done at $SECONDS s"
