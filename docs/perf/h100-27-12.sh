#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 12: the peers table with the final binary (sizes
# built into the workgroup-scope kernel from M*N*K of 2048^3 on), trimmed to this session's
# last device minutes: peers.sh's commands, each point by its own timestamps only (no stream
# pass), cuBLAS at 4096^3 (f16 -> f32, bf16 -> f32 and i8 TN) only.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.3 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 100 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 60 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for L in nn nt tn tt; do timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096,4096x4096x256 --layout $L --reps 3 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for L in nn nt; do
  timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16|^device' | sed "s|^|own |"
  timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|own |"
done
for L in tn tt; do
  timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $L --reps 20 --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|own |"
done
timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 20 --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|own |"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.3 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
echo "all done at $SECONDS s"
