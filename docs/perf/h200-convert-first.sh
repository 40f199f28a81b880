#!/bin/bash
# Issue 17: f32 operands rounded first (a narrowing pass, then the 16-bit kernels) against
# rounding as loaded, f16 x f16 -> f32 beside them, one call; then GPU checks of the new path.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --types f32:f32 --mode fast --shapes 4096x4096x4096 --reps 3 > /dev/null 2>&1
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,4096x4096x256
echo "== auto"
timeout 200 $B bench --types f16:f32 --types f32:f32 --types f16,f32:f32 --types f32,f16:f32 --mode fast --shapes $S --reps 20 2>&1 | grep -v "^\["
echo "== as loaded"
timeout 150 $B bench --types f32:f32 --types f16,f32:f32 --mode fast --convert load --shapes $S --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"
echo "== bf16"
timeout 100 $B bench --types f32:f32 --mode fast-bf16 --shapes 4096x4096x4096,2048x2048x2048 --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"
timeout 100 $B bench --types f32:f32 --mode fast-bf16 --convert load --shapes 4096x4096x4096,2048x2048x2048 --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"
echo "== checks"
for args in "4096 4096 4096 --types f32:f32 --mode fast" \
  "4099 4097 1029 --types f16,f32:f32 --layout tt --c-layout t" \
  "2047 3001 777 --types f32,bf16:f32 --layout nt --beta 0.5" \
  "3000 2000 1001 --types f32:f32 --mode fast-bf16 --layout tn" \
  "1025 1031 3 --types f32:f32 --mode fast --layout nt --convert first" \
  "1 5000 77 --types f32:f32 --mode fast --convert first" \
  "2053 2049 4097 --types f16,f32:f16 --layout tn --convert first --alpha -0.5 --beta 2"; do
  timeout 60 $B gemm $args --repeat 3 2>&1 | grep -E "^gemm|^verify|^time|rror" | sed "s/^/[$args] /"
done
timeout 200 $B check --quick --types f32:f32 --types f16,f32:f32 --types f32,bf16:f32 2>&1 | tail -4
