#!/bin/bash
# Issue 46, 2026-11-27 (29th session), call 7: the model sweeps (`vk-sgmat bench --model`,
# f16 -> f32, weights N x K, as streams) of a Llama-7B and a Llama-3-8B layer at 1..2048 tokens,
# against ggml-vulkan (mm_bench with the weights as A, its fast orientation, reported tokens
# first) and cuBLAS (torch.mm, f32 out), all in this call; and `gemm` against the reference on
# fused terms over the matrix-vector kernel (the CLI path that panicked in h200-29-6).
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 3 2>&1 | grep -E "PASS|FAIL|rror|anic" | sed "s|^|[$*] |"; }
g 8 14336 4095 --layout nt --types bf16:f32 --out bf16 --epilogue bias-col,silu --beta 0.5
g 4097 3 4096 --layout nt --types f16:f32 --out f16 --epilogue bias-row,gelu
tar xJf carry/ggml.tar.xz -C /tmp
for model in llama-7b llama-3-8b; do
  case $model in
    llama-7b) W="12288x4096 4096x4096 22016x4096 4096x11008";;
    llama-3-8b) W="6144x4096 4096x4096 28672x4096 4096x14336";;
  esac
  G=""; C=""
  for t in 1 8 32 128 512 2048; do for w in $W; do
    n=${w%x*}; k=${w#*x}; G="$G f16:${n}x${t}x${k}"; C="$C,${t}x${n}x${k}"
  done; done
  (cd /tmp/ggml && ./mm_bench --min-time 0.3 $G 2>&1) | tee /tmp/ggml-$model.txt | python3 carry/scripts/ggml_to_jsonl.py --tokens-first > /tmp/ggml-$model.jsonl
  grep -E "^ggml-vulkan" /tmp/ggml-$model.txt | sed "s|^|[$model] |"
  PYTHONUNBUFFERED=1 timeout 200 python3 carry/scripts/cublas_reference.py --types f16:f32 --layout nt --f32-out --shapes ${C#,} > /tmp/cublas-$model.jsonl 2>/dev/null
  echo "[$model] peers done at $SECONDS s"
  timeout 300 $B bench --types f16:f32 --model $model --stream --reps 30 --peer /tmp/ggml-$model.jsonl --cublas /tmp/cublas-$model.jsonl 2>&1 | grep -vE "^\s*$" | sed "s|^|[$model] |"
  echo "[$model] done at $SECONDS s"
done
cp /tmp/ggml-*.jsonl /tmp/cublas-*.jsonl $OUT/ 2>/dev/null
echo "all done at $SECONDS s"
