#!/bin/bash
# Issue 13, int8 in every layout, the defaults: each 8-bit copy on its own (A also for the
# subgroup-scope kernel, B only for the workgroup-scope one), against in place (off) and every
# copy forced (on); a priming pass first; then the defaults against the reference (every row).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 50 > /dev/null 2>&1   # clocks up
S_NN=4096x4096x4000,4096x11008x4096,1024x1024x4096
S_TT=4096x512x4096,4096x256x4096,4096x4096x4000,4096x11008x4096,1024x1024x4096
S_TN=1024x1024x4096,512x512x4096,4096x4096x4000,4096x11008x4096
for pass in prime measure; do
  R=2; [ $pass != prime ] && R=20
  for LS in nn:$S_NN tt:$S_TT tn:$S_TN; do L=${LS%%:*}; S=${LS#*:}
    for r in off auto on; do
      timeout 100 $B bench --types i8:i32 --shapes $S --layout $L --relayout $r --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass $r |"
    done
  done
  timeout 60 $B bench --types i8:i32 --shapes 4096x11008x4096,1024x1024x4096 --layout nt --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass nt |"
  echo "$pass done at $SECONDS s"
done
echo "== defaults against the reference, every row"
for a in "1024 1024 4096 --types i8:i32 --layout tn" "4096 4096 4000 --types i8:i32 --layout tt --beta 3" \
         "513 515 4097 --types i8:i32 --layout tn --c-layout t" "777 1500 5000 --types u8:u32 --layout tn" \
         "4096 11008 4096 --types i8:i32 --layout tn" "4096 256 4096 --types u8:u32 --layout tt --alpha 2"; do
  timeout 90 $B gemm $a --repeat 5 2>&1 | grep -E "^gemm|verify|time"
done
echo "checked at $SECONDS s"
