#!/bin/bash
# Issue 12 (stretch): grouped GEMMs whose group sizes the device holds (`--counts-on-device`:
# a table pass builds the tile table from u32 counts, then the one grouped dispatch). Checks
# first (every element of sampled rows of every group against the f64 reference), then the
# MoE layer and a small grouped GEMM timed three ways in one call: host sizes on the previous
# binary (carry/vk-sgmat-old, before the empty-row early return), host sizes on this binary,
# device counts on this binary.
B=carry/vk-sgmat
O=carry/vk-sgmat-old
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== checks, counts on the device"
R="--groups 700,0,1,1300,48 --repeat 1 --counts-on-device"
timeout 90 $B gemm 2049 1000 1031 $R --layout nt --types f16:f32 --beta 0.5 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nn --types f16:f32 --alpha 2 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nn --types f16:f16 --beta -1 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nt --types bf16:f32 --epilogue bias-col,relu --out bf16 2>&1 | grep grouped
timeout 90 $B gemm 2049 1000 1031 $R --layout nn --types f16:f32 --epilogue bias-row,silu --out f16 2>&1 | grep grouped
timeout 150 $B gemm 2049 1000 4096 $R --layout nt --types i8:i32 2>&1 | grep grouped
timeout 90 $B gemm 777 1000 1031 --groups 1,776 --repeat 1 --counts-on-device --types f16:f16 --beta -1 2>&1 | grep grouped
timeout 150 $B gemm 3996 14336 4096 --groups $G --repeat 1 --layout nt --types f16:f32 --counts-on-device --epilogue bias-col,silu --out f16 2>&1 | grep grouped
echo "== timing: old binary host sizes, new binary host sizes, new binary device counts"
S=16,16,16,16,16,16,16,16
for pass in prime measure; do
  N=2; [ $pass = measure ] && N=20
  for L in nn nt; do
    timeout 100 $O bench --groups $G --types f16:f32 --layout $L --reps $N 2>&1 | grep grouped | sed "s|^|$pass old |"
    timeout 100 $B bench --groups $G --types f16:f32 --layout $L --reps $N 2>&1 | grep grouped | sed "s|^|$pass new |"
    timeout 100 $B bench --groups $G --types f16:f32 --layout $L --reps $N --counts-on-device 2>&1 | grep grouped | sed "s|^|$pass counted |"
  done
  timeout 100 $O bench --groups $S --shapes 128x4096x4096 --types f16:f32 --reps $N 2>&1 | grep grouped | sed "s|^|$pass old |"
  timeout 100 $B bench --groups $S --shapes 128x4096x4096 --types f16:f32 --reps $N 2>&1 | grep grouped | sed "s|^|$pass new |"
  timeout 100 $B bench --groups $S --shapes 128x4096x4096 --types f16:f32 --reps $N --counts-on-device 2>&1 | grep grouped | sed "s|^|$pass counted |"
done
