#!/bin/bash
# Issues 12 and 13, this session's final binary in one call: grouped GEMMs (one dispatch; f32
# results in `nt` on the 128x128 tile) against a loop of torch.mm, and the peers table
# (ggml-vulkan coopmat2, cuBLAS) in `nn` and `nt`.
B=carry/vk-sgmat
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== grouped checks"
timeout 150 $B gemm 2049 1000 4096 --groups 700,0,1,1300,48 --types i8:i32 --layout nt --repeat 1 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 --groups 700,0,1,1300,48 --layout nt --beta 0.5 --repeat 1 2>&1 | grep grouped
echo "== grouped against the torch.mm loop"
timeout 150 python3 carry/grouped_reference.py 2>&1 | grep '^{'
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for L in nn nt; do
    timeout 120 $B bench --groups $G --types f16:f32 --types f16:f16 --layout $L --reps $R 2>&1 | grep grouped | sed "s|^|$pass |"
  done
done
echo "== peers"
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S,8192x8192x8192 --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
for pass in prime measure; do
  R=3; [ $pass = measure ] && R=20
  for L in nn nt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps $R --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -v '^\[' | grep -v '^device' | sed "s|^|$pass |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps $R --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -v '^\[' | grep -v '^device\|^types' | sed "s|^|$pass |"
  done
done
