#!/bin/bash
# Every test binary of scripts/gpu-test-bundle.sh on the GPU machine, validation on (the
# bundle's layer and loader), each under its own time limit, JOBS binaries at a time; a summary
# line per binary. Run from the checkout's root with carry [".gl","carry"] after
# `scripts/gpu-test-bundle.sh`:
#   export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
#   for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig; bash docs/perf/gpu-tests.sh 60 4 | tee $OUT/tests.txt
# Tests that need spirv-tools (the kernels' SPIR-V checks) fail there with a message saying so.
limit=${1:-60}
jobs=${2:-1}
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
one() {
  local bin=$1 name start rc summary
  name=$(basename "$bin")
  start=$SECONDS
  LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout "$limit" "$bin" > "$OUT/$name.log" 2>&1
  rc=$?
  summary=$(grep -E "^test result" "$OUT/$name.log" | tail -1)
  echo "$name: rc $rc, $((SECONDS - start)) s, ${summary:-no summary (timed out or crashed)}"
  grep -E "^test .* FAILED$" "$OUT/$name.log" | head -5
}
export -f one
export limit t layer OUT
ls "$t"/bin/* | xargs -P "$jobs" -I{} bash -c 'one {}'
