#!/bin/bash
# Issue 13, int8: the default copy of a column-major A at shorter K (1024, 2048) and N = 512
# (auto against in place), a priming pass first; then every layout's default at 4096^3 and
# 8192^3 and cuBLAS's int8 TN kernel for the table; the shorter-K defaults against the reference.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 50 > /dev/null 2>&1   # clocks up
S_TT=4096x512x1024,4096x1024x1024,4096x4096x1024,4096x4096x2048,1024x1024x1024,4096x512x2048
S_TN=4096x4096x1024,2048x2048x2048,1024x1024x1024
for pass in prime measure; do
  R=2; [ $pass != prime ] && R=20
  for LS in tt:$S_TT tn:$S_TN; do L=${LS%%:*}; S=${LS#*:}
    for r in off auto; do
      timeout 100 $B bench --types i8:i32 --shapes $S --layout $L --relayout $r --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass $r |"
    done
  done
  for L in nn nt tn tt; do
    timeout 100 $B bench --types i8:i32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass default |"
  done
  timeout 60 $B bench --types u8:u32 --shapes 4096x4096x4096 --layout nt --reps $R 2>&1 | grep -E "^u8" | sed "s|^|$pass default |"
  echo "$pass done at $SECONDS s"
done
timeout 90 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096,8192x8192x8192 --layout nt 2>/dev/null
echo "== defaults against the reference, every row"
for a in "4096 512 1024 --types i8:i32 --layout tt" "2048 2048 2048 --types i8:i32 --layout tn --beta -1" \
         "1031 1029 1500 --types u8:u32 --layout tt --c-layout t"; do
  timeout 60 $B gemm $a --repeat 5 2>&1 | grep -E "^gemm|verify|time"
done
echo "checked at $SECONDS s"
