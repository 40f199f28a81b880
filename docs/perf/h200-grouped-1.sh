#!/bin/bash
# Issue 12: grouped GEMMs (mixture of experts) as one dispatch, checked and timed against a loop
# of torch.mm in the same call; issue 13: the 64x64 tile in 128-byte K steps at 1024^3 against
# ggml-vulkan, and `check` on the new defaults.
B=carry/vk-sgmat
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== grouped checks (sampled rows of every group against the f64 reference)"
while read -r ARGS; do
  echo "-- gemm $ARGS"
  timeout 90 $B gemm $ARGS --repeat 1 2>&1 | grep -v "^\[" | tail -1
done <<LIST
4096 14336 4096 --groups $G
4096 14336 4096 --groups $G --layout nt --types f16:f16
2049 1000 1031 --groups 700,0,1,1300,48 --layout nt --beta 0.5 --alpha 2
2049 1000 1031 --groups 700,0,1,1300,48 --types bf16:f32 --beta 1
2049 1000 1024 --groups 700,0,1,1300,48 --types i8:i32 --layout nt
2049 1000 1031 --groups 700,0,1,1300,48 --types f32:f32 --mode fast --layout nt
777 333 4096 --groups 1,776 --types f16:f16 --beta -1
LIST
echo "== torch.mm loop"
timeout 150 python3 carry/grouped_reference.py 2>&1 | grep '^{' | tee $OUT/grouped.jsonl
echo "== ours (a priming process, then the measured one)"
for pass in prime measure; do
  for L in nn nt; do
    R=2; [ $pass = measure ] && R=20
    timeout 120 $B bench --groups $G --types f16:f32 --types f16:f16 --layout $L --reps $R 2>&1 | grep -v "^\[" | grep grouped
  done
done
echo "== 1024^3 against ggml-vulkan"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.6 f16:1024x1024x1024 bf16:1024x1024x1024 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
for pass in prime measure; do
  for L in nn nt tn tt; do
    R=3; [ $pass = measure ] && R=30
    timeout 60 $B bench --types f16:f32 --types bf16:f32 --types f16:f16 --shapes 1024x1024x1024,1024x2048x1024,2048x1024x1024 --layout $L --reps $R --peer /tmp/ggml.jsonl 2>&1 | grep -v '^\[' | grep -v '^device' | grep -v '^types' | sed "s/^/$pass /"
  done
done
echo "== check"
timeout 200 $B check --quick --types f16:f32,f16:f16 2>&1 | grep -v '^\[' | tail -8
