#!/bin/bash
# Issue 13: fused epilogues on the new defaults (verified), every _ct scheme tuned at 4096^3
# nn/nt, then the peers table (cuBLAS, ggml-vulkan, vk-sgmat every layout) in one call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0; runs=0
for L in nn nt tn tt; do
  for E in "--epilogue bias-col,gelu --out f16" "--epilogue bias-row,silu --beta 0.5" "--epilogue bias-col --out bf16"; do
    runs=$((runs+1))
    if ! timeout 60 $B gemm 2049 2047 513 --layout $L $E --repeat 1 > $OUT/f.txt 2>&1; then fails=$((fails+1)); echo "FAIL $L $E"; tail -3 $OUT/f.txt; fi
  done
done
grep -o "wg_[a-z0-9_]*" $OUT/f.txt | head -2
echo "fused default runs: $runs, failed: $fails"
for L in nn nt; do timeout 150 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter _ct --reps 1 > /dev/null 2>&1; done
for L in nn nt; do echo "== tune 4096 $L _ct"; timeout 150 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter _ct --reps 5 2>&1 | grep -v "^\[" | grep wg_ | head -8; done
S=2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x4096x256
timeout 200 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > $OUT/cublas.jsonl 2> $OUT/cublas.err
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && timeout 150 ./mm_bench --min-time 0.6 f16:2048x2048x2048 f16:4096x4096x4096 f16:8192x8192x8192 f16:4096x4096x256 bf16:4096x4096x4096 bf16:8192x8192x8192) > $OUT/ggml.txt 2>&1
python3 carry/ggml_to_jsonl.py < $OUT/ggml.txt > $OUT/ggml.jsonl
grep -E "^ggml-vulkan" $OUT/ggml.txt
for L in nt nn tn tt; do timeout 60 $B bench --types f16:f32 --types bf16:f32 --shapes 4096x4096x4096,4096x4096x256 --layout $L --reps 3 > /dev/null 2>&1; done
timeout 150 $B bench --types f16:f32 --types bf16:f32 --shapes $S --layout nt --reps 20 --cublas $OUT/cublas.jsonl --peer $OUT/ggml.jsonl 2>&1 | grep -v "^\["
for L in nn tn tt; do
  timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 --cublas $OUT/cublas.jsonl --peer $OUT/ggml.jsonl 2>&1 | grep -v "^\[" | grep -v "^device\|^types"
done
