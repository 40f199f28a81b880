#!/bin/bash
# Issue 49, call 3: 8-bit operands without matrix units multiplied by packed dot products
# (Load::Packed: four K-consecutive bytes to a shared-memory word, OpSDot/OpUDot), against
# call 2's widening (29.1 TOP/s, 0.79x our f32). f32 beside them in the same call for the ratio;
# first process (`--warm 2`, pipelines created here) and steady state (second process, from the
# pipeline cache); the 8-bit gemm checks, the forced-path and adopted-device test binaries
# under the validation layer.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for t in i8:i32 u8:u32; do
  timeout 120 $B bench --no-matrix-units --types $t --layout nn --shapes 4096x4096x4096 --warm 2 2>&1 | grep -vE "^device|^types" | sed "s|^|[first $t nn] |"
done
for round in 1 2; do
  for t in f32:f32 f16:f32 i8:i32 u8:u32; do
    timeout 90 $B bench --no-matrix-units --types $t --layout nn --shapes 4096x4096x4096 2>&1 | grep -E "^(f|i|u)[0-9]|rror" | sed "s|^|[r$round nn] |"
  done
done
for l in nt tn tt; do
  timeout 120 $B bench --no-matrix-units --types i8:i32 --layout $l --shapes 4096x4096x4096 2>&1 | grep -E "^i[0-9]|rror" | sed "s|^|[$l] |"
done
g() { timeout 100 $B gemm --no-matrix-units "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 1001 999 2063 --types i8:i32 --layout nt --alpha 2 --beta 1
g 1001 999 2063 --types i8:i32 --layout tn
g 1001 999 2063 --types u8:u32 --layout tt
g 4097 4095 4096 --types i8:i32 --layout nn
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for bin in without_matrix_units interop; do
  start=$SECONDS
  LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/$bin > /tmp/test.log 2>&1
  echo "$bin: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "^test .*FAILED|panicked" /tmp/test.log | head -12
done
echo "all done at $SECONDS s"
