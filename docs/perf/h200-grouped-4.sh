#!/bin/bash
# Issue 12: grouped fused checks the first call (h200-grouped-3) missed: bf16 stores (the
# binary's type list lacked them) and the MoE layer itself (its rows sum to 3996, not 4096);
# the w8a8 MoE layer (i8 experts, each expert's channel scales, per-token scales, f16 out).
B=carry/vk-sgmat
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
R="--groups 700,0,1,1300,48 --repeat 1"
timeout 90 $B gemm 2049 1000 1031 $R --layout nt --types bf16:f32 --epilogue bias-col,relu --out bf16 2>&1 | grep -i "grouped\|error\|vk-sgmat:"
timeout 90 $B gemm 2049 1000 1031 $R --layout nn --epilogue bias-col,gelu --out bf16 2>&1 | grep -i "grouped\|error\|vk-sgmat:"
for L in nn nt; do
  timeout 150 $B gemm 3996 14336 4096 --groups $G --repeat 1 --layout $L --epilogue bias-col,silu --out f16 2>&1 | grep -i "grouped\|error\|vk-sgmat:"
  timeout 150 $B gemm 3996 14336 4096 --groups $G --repeat 1 --layout $L --types i8:i32 --epilogue bias-col,silu --out f16 2>&1 | grep -i "grouped\|error\|vk-sgmat:"
done
for pass in prime measure; do
  N=2; [ $pass = measure ] && N=20
  timeout 120 $B bench --groups $G --types i8:i32 --layout nt --reps $N 2>&1 | grep grouped | sed "s|^|$pass |"
  timeout 120 $B bench --groups $G --types i8:i32 --out f16 --epilogue none --layout nt --reps $N 2>&1 | grep grouped | sed "s|^|$pass |"
done
