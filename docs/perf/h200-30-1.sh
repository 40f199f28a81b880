#!/bin/bash
# Issue 45, 2026-11-27 (30th session), call 1: the one-operation API (this session's binary,
# carry/vk-sgmat) against the binary before it (999407c, carry/old/vk-sgmat), in one call:
# (1) `bench` 4096^3 f16 -> f32 in `nn` and `nt`, by own timestamps and as a stream, and the
# `runtime` command's host time per enqueued GEMM, each binary twice, interleaved, after one
# warming run each (pipelines from the cache); (2) `gemm` against the f64 reference through the
# new API's paths; (3) the test binaries of the new API under the validation layer.
NEW=$PWD/carry/vk-sgmat
OLD=$PWD/carry/old/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for B in $OLD $NEW; do
  for l in nn nt; do timeout 90 $B bench --types f16:f32 --layout $l --shapes 4096x4096x4096 --warm 1 >/dev/null 2>&1; done
done
echo "warmed at $SECONDS s"
for round in 1 2; do
  for tag in old new; do
    B=$OLD; [ $tag = new ] && B=$NEW
    for l in nn nt; do
      timeout 90 $B bench --types f16:f32 --layout $l --shapes 4096x4096x4096 2>&1 | grep -E "^f16|rror" | sed "s|^|[$tag r$round $l] |"
      timeout 90 $B bench --types f16:f32 --layout $l --shapes 4096x4096x4096 --stream 2>&1 | grep -E "^f16|rror" | sed "s|^|[$tag r$round $l stream] |"
    done
    timeout 200 $B runtime 2>&1 | grep -E "^runtime|host time|rror|FAIL" | sed "s|^|[$tag r$round] |"
  done
done
echo "timing done at $SECONDS s"
g() { timeout 100 $NEW gemm "$@" --repeat 3 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4096 4096 4096
g 4097 4095 4096 --layout nt --alpha 2 --beta 0.5
g 1 22016 4096 --layout nt
g 8 4096 4096 --layout nt --types bf16:f32 --beta 1
g 1024 4096 4096 --epilogue bias-col,gelu --out f16
g 512 1024 2048 --batch 8
g 256 4096 1024 --groups 100,0,37,119 --epilogue bias-col,silu --out f16
g 256 4096 1024 --groups 100,0,37,119 --counts-on-device
g 2048 2048 2048 --types i8:i32 --layout tn --alpha 2 --beta 1
echo "gemm checks done at $SECONDS s"
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for bin in $t/bin/*; do
  start=$SECONDS
  LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 120 $bin --skip every_kernel_variant > /tmp/test.log 2>&1
  rc=$?
  echo "$(basename $bin): rc $rc, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "^test .* FAILED$|panicked" /tmp/test.log | head -5
done
echo "all done at $SECONDS s"
