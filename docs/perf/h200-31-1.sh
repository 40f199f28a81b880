#!/bin/bash
# Issue 49, 2026-11-27 (31st session), call 1: every type on the kernels without matrix units
# (`--no-matrix-units`, ContextOptions::matrix_units off) on the H200. (1) cuBLAS SGEMM (no
# TF32: the CUDA cores' GEMM, the fair reference for a kernel without matrix units) and cuBLAS's
# int8 TN kernel at 4096^3; (2) vk-sgmat `bench` 4096^3 for f32, f16, bf16 into f32 and i8/u8,
# first a process that creates the pipelines (first-process figure, `--warm 2`), then a second
# one (steady state from the pipeline cache); (3) `gemm` against the f64 reference for each type
# pair, layouts, odd shapes, alpha/beta, an epilogue, groups; (4) the forced-path test binary
# under the validation layer.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
python3 scripts/cublas_reference.py --types f32:f32,f16:f32 --shapes 4096x4096x4096 2>&1 | tail -2
python3 scripts/cublas_reference.py --types f32:f32,i8:i32 --shapes 4096x4096x4096 --layout nt 2>&1 | tail -2
echo "cublas done at $SECONDS s"
for t in f32:f32 f16:f32 bf16:f32 i8:i32 u8:u32; do
  timeout 120 $B bench --no-matrix-units --types $t --layout nn --shapes 4096x4096x4096 --warm 2 2>&1 | grep -vE "^device|^types" | sed "s|^|[first $t nn] |"
done
echo "first processes done at $SECONDS s"
for round in 1 2; do
  for t in f32:f32 f16:f32 bf16:f32 i8:i32 u8:u32; do
    timeout 90 $B bench --no-matrix-units --types $t --layout nn --shapes 4096x4096x4096 2>&1 | grep -E "^(f|b|i|u)[0-9]|rror" | sed "s|^|[r$round nn] |"
  done
done
for t in f16:f32 i8:i32; do
  timeout 120 $B bench --no-matrix-units --types $t --layout nt --shapes 4096x4096x4096 2>&1 | grep -E "^(f|i)[0-9]|rror" | sed "s|^|[nt] |"
done
echo "timing done at $SECONDS s"
g() { timeout 100 $B gemm --no-matrix-units "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 1001 999 517 --types f16:f32 --layout tn --alpha 2 --beta 0.5
g 1001 999 517 --types f16:f16 --layout nt
g 1001 999 517 --types bf16:bf16 --layout tt --beta 1
g 1001 999 517 --types f16,f32:f32 --layout nn
g 1001 999 2063 --types i8:i32 --layout nt --alpha 2 --beta 1
g 1001 999 2063 --types u8:u32 --layout tn
g 4097 4095 4096 --types f32:f32 --layout nt
g 1024 4096 4096 --types f16:f32 --epilogue bias-col,gelu --out f16
g 256 4096 1024 --types f16:f32 --groups 100,0,37,119
echo "gemm checks done at $SECONDS s"
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
start=$SECONDS
LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/without_matrix_units > /tmp/test.log 2>&1
echo "without_matrix_units: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
grep -E "^test |panicked" /tmp/test.log | head -12
echo "all done at $SECONDS s"
