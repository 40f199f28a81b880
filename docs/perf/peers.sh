#!/bin/bash
# The peers table of issue 13 in one call: ggml-vulkan's `mm_bench` (coopmat2), cuBLAS
# (`torch.mm(out_dtype=float32)`; int8 `torch._int_mm` with B column-major, its TN kernel) and
# `vk-sgmat bench --cublas --peer` in `nn` and `nt` (and `tn`, `tt` at 4096^3), each point by
# its own timestamps and as a stream, after a priming process; ggml's 2048^3, 4096^3 and
# 4096x4096x256 again at the end. Sourced by the h200-*.sh scripts after their own steps, with
# B (the vk-sgmat binary) set and ggml.tar.xz unpacked into /tmp/ggml.
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 60 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for L in nn nt tn tt; do timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096,4096x4096x256 --layout $L --reps 3 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for how in "own" "stream --stream"; do read name flags <<< "$how"
  for L in nn nt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16|^device' | sed "s|^|$name |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|$name |"
  done
  for L in tn tt; do
    timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$name |"
  done
done
timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 20 --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|own |"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 f16:4096x4096x256 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
