#!/bin/bash
# Moved edge tiles (clipped store), timings against the previous binary, one call.
B=carry/vk-sgmat
O=carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=4096x4096x4096,4097x4097x4096,4000x4000x4000,2049x2049x2049,1000x1000x1000
G=1200,900,700,500,400,200,60,36
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for v in old new; do
    bin=$B; [ $v = old ] && bin=$O
    for L in nn nt; do
      t0=$(date +%s)
      timeout 140 $bin bench --shapes $S --types f16:f32 --layout $L --reps $R 2>&1 | grep "f16:f32 " | sed "s|^|$pass $v $L |"
      timeout 50 $bin bench --groups $G --types f16:f32 --layout $L --reps $R 2>&1 | grep grouped | sed "s|^|$pass $v $L |"
      echo "$pass $v $L took $(( $(date +%s) - t0 )) s"
    done
  done
done
