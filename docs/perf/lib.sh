#!/bin/bash
# What the device calls' scripts share (issue 45: the 41st and 42nd sessions' scripts repeated
# it). Source it from a script run in the repository root on the device machine, the release
# binaries and test binaries carried under carry/ (docs/perf/JOURNAL.md, "Reproduce"):
#   source docs/perf/lib.sh
# Scripts from before a function was added keep their own copies: they are the record of what
# ran.

B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-before

# The GPU, its driver and its top SM clock.
gpu_line() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
}

# The named test binaries (carry/tests/bin) under the Khronos validation layer, each line a
# binary's result and any failure or validation message; the tests that need spirv-val skipped.
validation_tests() {
  local t=carry/tests layer=/tmp/vk-sgmat-layer start=$SECONDS
  mkdir -p $layer && cp $t/layer/*.json $layer/
  xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
  for bin in "$@"; do
    XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 \
      $t/bin/$bin --skip spirv_val --skip validates > /tmp/test.log 2>&1
    echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
    grep -E "panicked|FAILED|bound|ERROR|WARN" /tmp/test.log | head -6
  done
}

# ggml-vulkan's mm_bench (../shared/anchors/ggml, carried as carry/ggml.tar.xz) on its
# arguments, each result line labelled [ggml].
ggml() {
  mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
  timeout 200 /tmp/g/ggml/mm_bench "$@" 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
}

# `bench` as streams in two processes, the second's result lines labelled: the first creates
# the pipelines (which run slowly at first on NVIDIA's driver). Usage: bench2 LABEL BINARY ARGS...
bench2() {
  local label=$1 bin=$2
  shift 2
  for pass in 1 2; do
    timeout 60 $bin bench "$@" --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|nt |nn |rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}

# Runs a command as a cold first process meets it: the driver's disk cache off, a fresh cache
# directory for ours (pipelines, self-test verdicts).
cold() {
  __GL_SHADER_DISK_CACHE=0 XDG_CACHE_HOME=$(mktemp -d) timeout 150 "$@"
}

# `bench --first-runs 1` on the shapes in $S (f16 -> f16, nt), cold, our pipeline cache off,
# each line labelled and shortened to the preparation, first run, steady state and pipelines.
# Usage: first_runs LABEL ARGS...
first_runs() {
  local label=$1
  shift
  cold $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1 "$@" 2>&1 | grep -E "first|rror|anic" | sed -E "s|^|[$label] |; s|\(([0-9.]+) TFLOP/s\)||; s|, first result [0-9.]+ ms||; s|, within 5% from.*; ([0-9]+) runs;|;|"
}
