#!/bin/bash
# Issue 13, int8 in every layout: operands copied into `nt` order (A row-major, B column-major,
# both K-contiguous: the order the int8 workgroup-scope kernel reads fastest) against read in
# place, forced on and off, a priming pass first; then the defaults checked against the
# reference (every row); cuBLAS's int8 TN kernel in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 50 > /dev/null 2>&1   # clocks up
S_NN=4096x4096x4096,1024x4096x4096,512x4096x4096,256x4096x4096,8192x8192x8192
S_TT=4096x4096x4096,4096x1024x4096,4096x512x4096,4096x256x4096
S_TN=4096x4096x4096,2048x2048x4096,1024x1024x4096,512x512x4096
for pass in prime measure; do
  R=2; [ $pass != prime ] && R=20
  for LS in nn:$S_NN tt:$S_TT tn:$S_TN; do L=${LS%%:*}; S=${LS#*:}
    for r in off on; do
      timeout 100 $B bench --types i8:i32 --shapes $S --layout $L --relayout $r --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass $r |"
    done
  done
  timeout 60 $B bench --types i8:i32 --shapes $S_TN --layout nt --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass nt |"
  echo "$pass done at $SECONDS s"
done
echo "== defaults against the reference, every row"
for a in "4096 4096 4096 --types i8:i32 --layout nn" "4096 4096 4096 --types i8:i32 --layout tt" \
         "4096 4096 4096 --types i8:i32 --layout tn" "4099 4097 4096 --types i8:i32 --layout tn --beta 2" \
         "1000 3001 4096 --types u8:u32 --layout tt" "4096 4096 4096 --types u8:u32 --layout nt" \
         "2048 2048 8192 --types i8:i32 --layout nn --c-layout t --alpha -1 --beta 1"; do
  timeout 90 $B gemm $a --repeat 5 2>&1 | grep -E "^gemm|verify|time"
done
echo "checked at $SECONDS s"
timeout 90 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt 2>/dev/null
