#!/bin/bash
# Issue 13: the peers table after relayout (defaults: `--relayout auto`), one call: cuBLAS
# (f32 out, the faster of its layouts is taken by the script's --layout nt), ggml-vulkan's
# mm_bench (coopmat2), vk-sgmat bench in every layout.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 3 > /dev/null 2>&1
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
timeout 200 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > $OUT/cublas.jsonl 2> $OUT/cublas.err
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && timeout 150 ./mm_bench --min-time 0.6 f16:1024x1024x1024 f16:2048x2048x2048 f16:4096x4096x4096 f16:8192x8192x8192 f16:4096x11008x4096 f16:16x4096x4096 f16:4096x4096x256 bf16:4096x4096x4096 bf16:8192x8192x8192) > $OUT/ggml.txt 2>&1
python3 carry/ggml_to_jsonl.py < $OUT/ggml.txt > $OUT/ggml.jsonl
grep -E "^ggml-vulkan" $OUT/ggml.txt
for L in nt nn tn tt; do
  echo "== $L"
  timeout 120 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 --cublas $OUT/cublas.jsonl --peer $OUT/ggml.jsonl 2>&1 | grep -v "^\[" | grep -v "^device"
  timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 --cublas $OUT/cublas.jsonl --peer $OUT/ggml.jsonl 2>&1 | grep -v "^\[" | grep -v "^device\|^types"
done
