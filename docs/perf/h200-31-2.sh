#!/bin/bash
# Issue 49, call 2: call 1's 8-bit GEMMs failed before running (pipeline creation checked the
# 128x128 tile against the i8 config's element size, not the 32-bit shared layout the kernel
# without matrix units stages; lavapipe's 64x64 tile passed both). Fixed; the 8-bit rows again,
# with f32 beside them in the same call for the ratio, and the forced-path test binary.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for t in i8:i32 u8:u32; do
  timeout 120 $B bench --no-matrix-units --types $t --layout nn --shapes 4096x4096x4096 --warm 2 2>&1 | grep -vE "^device|^types" | sed "s|^|[first $t nn] |"
done
for round in 1 2; do
  for t in f32:f32 i8:i32 u8:u32; do
    timeout 90 $B bench --no-matrix-units --types $t --layout nn --shapes 4096x4096x4096 2>&1 | grep -E "^(f|i|u)[0-9]|rror" | sed "s|^|[r$round nn] |"
  done
done
timeout 120 $B bench --no-matrix-units --types i8:i32 --layout nt --shapes 4096x4096x4096 2>&1 | grep -E "^i[0-9]|rror" | sed "s|^|[nt] |"
g() { timeout 100 $B gemm --no-matrix-units "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 1001 999 2063 --types i8:i32 --layout nt --alpha 2 --beta 1
g 1001 999 2063 --types u8:u32 --layout tn
g 256 4096 1024 --types i8:i32 --groups 100,0,37,119
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/without_matrix_units > /tmp/test.log 2>&1
echo "without_matrix_units: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "^test |panicked" /tmp/test.log | head -12
echo "all done at $SECONDS s"
