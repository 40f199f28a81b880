#!/bin/bash
# Issue 13: operands copied into the order the workgroup-scope kernel reads fastest (A
# column-major, B row-major) before the GEMM (`--relayout on`) against reading them in place
# (`--relayout off`), every layout, f16->f32 and bf16->f32; f32 fast converted first; ggml-vulkan
# in the same call. Calibrates plan::relayout_pays.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 3 > /dev/null 2>&1
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && timeout 120 ./mm_bench --min-time 0.6 f16:1024x1024x1024 f16:2048x2048x2048 f16:4096x4096x4096 f16:8192x8192x8192 f16:4096x11008x4096 f16:4096x4096x256 bf16:4096x4096x4096 bf16:8192x8192x8192) > $OUT/ggml.txt 2>&1
python3 carry/ggml_to_jsonl.py < $OUT/ggml.txt > $OUT/ggml.jsonl
grep -E "^ggml-vulkan" $OUT/ggml.txt
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,4096x4096x256
for L in nn tt nt tn; do
  for R in off on; do
    echo "== f16:f32 $L relayout $R"
    timeout 150 $B bench --types f16:f32 --shapes $S --layout $L --relayout $R --reps 10 --peer $OUT/ggml.jsonl 2>&1 | grep -v "^\[" | grep -v "^device"
  done
done
for L in nn tt nt; do
  for R in off on; do
    echo "== bf16:f32 $L relayout $R"
    timeout 100 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --relayout $R --reps 10 --peer $OUT/ggml.jsonl 2>&1 | grep -v "^\[" | grep -v "^device\|^types"
  done
done
for L in nn nt tt; do
  for R in off on; do
    echo "== f32 fast first $L relayout $R"
    timeout 100 $B bench --types f32:f32 --mode fast --convert first --shapes 4096x4096x4096 --layout $L --relayout $R --reps 10 2>&1 | grep -v "^\[" | grep -v "^device\|^types"
  done
done
