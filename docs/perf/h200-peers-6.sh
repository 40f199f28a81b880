#!/bin/bash
# Issue 13, 2026-11-26, call 8: the peers table with this session's final binary (the 128x128
# tile's grouped raster, two copies for `nt` where one side is long, int8 from K = 512), one
# call: ggml-vulkan's mm_bench (coopmat2), cuBLAS torch.mm(out_dtype=float32) and its int8 TN
# kernel (torch._int_mm, B column-major), vk-sgmat bench in `nn` and `nt` (a priming process
# first), every layout at 4096^3.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 90 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096,8192x8192x8192 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for pass in prime measure; do
  R=3; [ $pass = measure ] && R=20
  for L in nn nt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps $R --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -v '^\[' | grep -v '^device' | sed "s|^|$pass |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps $R --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -v '^\[' | grep -v '^device\|^types' | sed "s|^|$pass |"
  done
  for L in tn tt; do
    timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $L --reps $R --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$pass |"
  done
  timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096,8192x8192x8192 --layout nt --reps $R --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|$pass |"
  for L in nn tt tn; do
    timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout $L --reps $R --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|$pass |"
  done
  echo "$pass done at $SECONDS s"
done
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 f16:8192x8192x8192 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
echo "all done at $SECONDS s"
