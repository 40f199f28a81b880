#!/bin/bash
# Issues 46 and 48, 2026-11-27 (29th session), call 6. (1) The matrix-vector and fused tests on
# the GPU under the validation layer (its fused epilogue, 16-bit C). (2) `gemm` against the f64
# reference: f16 C and fused terms on the matrix-vector kernel. (3) Decode as an engine runs it:
# f16 -> f16, and f16 -> f32 with bias + SiLU stored f16, against the plain f32 C, by own timestamps (a fused epilogue takes no --stream) and as streams.
# (4) First runs in a cold process in the reverse order of h200-29-4/-5 (is the slow phase the
# third and fourth pipeline of a process, or these two kernels?).
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests; layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for name in gemv fused orphans; do
  LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/$name --skip every_kernel_variant > $OUT/test-$name.log 2>&1
  echo "test $name: rc $?, $(grep -E '^test result' $OUT/test-$name.log | tail -1)"
  grep -E "FAILED|panicked" $OUT/test-$name.log | head -5
done
g() { timeout 100 $B gemm "$@" --repeat 3 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 1 22016 4096 --layout nt --types f16
g 8 14336 4095 --layout nt --types bf16:f32 --out bf16 --epilogue bias-col,silu --beta 0.5
g 4097 3 4096 --layout nt --types f16:f32 --out f16 --epilogue bias-row,gelu
echo "gemm checks done at $SECONDS s"
S=1x22016x4096,1x4096x4096,8x22016x4096
b() { timeout 200 $B bench --layout nt --shapes $S --reps 50 "$@" 2>&1 | grep -E '^(f16|bf16)|rror|anic' | sed "s|^|[$*] |"; }
b --types f16:f32 --reps 2 --warm 0 > /dev/null
for pass in 1 2; do
  b --types f16:f32; b --types f16:f16; b --types f16:f32 --epilogue bias-col,silu --out f16
  b --types f16:f32 --stream; b --types f16:f16 --stream
done
echo "bench done at $SECONDS s"
export HOME=/tmp/h-rev; rm -rf $HOME; mkdir -p $HOME
$B bench --types f16:f16 --layout nt --shapes 512x4096x11008,512x22016x4096,512x12288x4096,512x4096x4096 --first-runs 1 --no-pipeline-cache 2>&1 | grep -E "first|rror" | sed "s|^|[reverse] |"
echo "all done at $SECONDS s"
