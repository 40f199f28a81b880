#!/bin/bash
# Issue 12: grouped GEMMs with fused epilogues on the H200. Checks first (every element of
# sampled rows of every group against the f64 reference: the workgroup-scope grouped kernels
# with a per-group column bias, a row bias, output casts; dequantised i8 groups), then the MoE
# layer with each expert's bias + SiLU stored as f16, against our plain grouped GEMM and a loop
# of torch.addmm + silu, in one call.
B=carry/vk-sgmat
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== grouped fused checks"
R="--groups 700,0,1,1300,48 --repeat 1"
timeout 90 $B gemm 2049 1000 1031 $R --layout nt --beta 0.5 --epilogue bias-col,gelu --out f16 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nn --alpha 2 --epilogue bias-row,silu 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nt --types bf16:f32 --epilogue bias-col,relu --out bf16 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nn --types f16:f16 --beta 1 --epilogue gelu-erf 2>&1 | grep grouped
timeout 150 $B gemm 2049 1000 4096 $R --layout nt --types i8:i32 --epilogue bias-col,silu --out f16 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nn --types u8:u32 --epilogue bias-row --out f32 2>&1 | grep grouped
timeout 150 $B gemm 4096 14336 4096 --groups $G --repeat 1 --layout nt --epilogue bias-col,silu --out f16 2>&1 | grep grouped
echo "== MoE layer: each expert's bias + SiLU -> f16, against plain grouped and torch.addmm + silu"
timeout 150 python3 carry/grouped_reference.py --types f16:f16 --epilogue bias-col,silu 2>&1 | grep '^{'
timeout 150 python3 carry/grouped_reference.py --types f16:f32 2>&1 | grep '^{'
for pass in prime measure; do
  N=2; [ $pass = measure ] && N=20
  for L in nn nt; do
    timeout 120 $B bench --groups $G --types f16:f32 --layout $L --reps $N 2>&1 | grep grouped | sed "s|^|$pass |"
    timeout 120 $B bench --groups $G --types f16:f32 --out f16 --epilogue bias-col,silu --layout $L --reps $N 2>&1 | grep grouped | sed "s|^|$pass |"
  done
done
