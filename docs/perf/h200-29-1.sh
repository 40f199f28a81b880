#!/bin/bash
# Issues 50 and 46, 2026-11-27 (29th session), call 1. (1) The dropped-stream tests (issue 50),
# the streams tests and the matrix-vector tests on the GPU under the validation layer. (2) `gemm`
# against the f64 reference on the matrix-vector kernel (decode's shapes, both orientations,
# f16/bf16/f32, alpha/beta). (3) Decode, f16 weights N x K (layout nt), f32 results: vk-sgmat
# with the matrix-vector kernel and without it (the GEMM path of before), own timestamps and as
# a stream; ggml-vulkan's mul_mat_vec (mm_bench TYPE:NxTOKENSxK); cuBLAS (torch.mm, f32 out).
# Run from the checkout's root with carry [".gl", "carry"].
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests; layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for name in orphans streams gemv; do
  LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 150 $t/bin/$name --skip every_kernel_variant > $OUT/test-$name.log 2>&1
  echo "test $name: rc $?, $(grep -E '^test result' $OUT/test-$name.log | tail -1)"
  grep -E "FAILED|panicked" $OUT/test-$name.log | head -5
done
echo "tests done at $SECONDS s"
g() { timeout 100 $B gemm "$@" --repeat 3 2>&1 | grep -E "scheme|verify|time|rror|anic" | sed "s|^|[$*] |"; }
g 1 22016 4096 --layout nt
g 8 22016 4096 --layout nt --types bf16:f32 --alpha 2 --beta 0.5
g 4099 3 4097 --layout nt --types f32:f32 --beta 1
g 1 4096 11008 --layout nt --c-layout t
g 7 14336 4095 --layout nt --types f16:f32 --alpha -1
echo "gemm checks done at $SECONDS s"
S=1x4096x4096,1x22016x4096,8x22016x4096,1x14336x4096,1x4096x14336,8x4096x4096,1x28672x4096,1x4096x11008
b() { timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --reps 50 "$@" 2>&1 | grep -E '^f16|rror|anic' | sed "s|^|[$*] |"; }
b --matrix-vector off --reps 5 --warm 0 > /dev/null   # compile the GEMM path's pipelines first
for pass in 1 2; do b; b --stream; b --matrix-vector off; b --matrix-vector off --stream; done
timeout 100 $B bench --types bf16:f32,f32:f32 --mode exact --layout nt --shapes 1x22016x4096,1x4096x4096 --stream --reps 50 2>&1 | grep -E '^(bf16|f32)|rror'
echo "bench done at $SECONDS s"
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && ./mm_bench --check f16:22016x1x4096 f16:4099x3x4097 2>&1 | grep -E "ggml-vulkan|PASS|FAIL|coopmat" | head -5
 ./mm_bench --min-time 0.6 f16:4096x1x4096 f16:22016x1x4096 f16:22016x8x4096 f16:14336x1x4096 f16:4096x1x14336 f16:4096x8x4096 f16:28672x1x4096 f16:4096x1x11008 2>&1 | grep -E "^ggml-vulkan|rror")
echo "ggml done at $SECONDS s"
PYTHONUNBUFFERED=1 timeout 120 python3 scripts/cublas_reference.py --types f16:f32 --layout nt --f32-out --shapes $S 2>&1 | tail -8
echo "all done at $SECONDS s"
