#!/bin/bash
# Issue 13, 2026-11-26, call 3. (A) int8 with K from 512 to 2047 now takes the K-contiguous
# workgroup-scope tiles (three lists by iteration depth): the previous binary (vk-sgmat-prev)
# and this one, default plans, every layout, a priming pass first. (B) the new paths against the
# f64 reference, every row. (C) grouped rasters on the 128x128 tile in `tn` and `nn` with every
# pipeline primed first (call 2 measured the first shape in the process that compiled them).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 carry/vk-sgmat bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 50 > /dev/null 2>&1   # clocks up
S=4096x4096x512,4096x4096x1024,4096x4096x1536,2048x2048x1024,1024x1024x1024,1024x1024x512,4096x11008x1024
for pass in prime measure; do
  R=2; [ $pass != prime ] && R=20
  for L in nt nn tt tn; do
    for b in vk-sgmat-prev vk-sgmat; do
      timeout 100 carry/$b bench --types i8:i32 --shapes $S --layout $L --reps $R 2>&1 | grep -E "^i8" | sed "s|^|$pass $b |"
    done
  done
  echo "$pass done at $SECONDS s"
done
echo "== new defaults against the reference, every row"
for a in "4096 4096 1024 --types i8:i32 --layout nt" "4097 4095 1000 --types i8:i32 --layout nt --beta 2" \
         "1024 1024 1536 --types u8:u32 --layout nt" "1000 1000 700 --types i8:i32 --layout nt --alpha -1 --beta 1" \
         "2048 2048 1024 --types i8:i32 --layout nn" "3000 2000 1500 --types i8:i32 --layout tn --c-layout t" \
         "4096 4096 1024 --types u8:u32 --layout tt --alpha 3" "513 515 600 --types i8:i32 --layout nt --c-layout t"; do
  timeout 90 carry/vk-sgmat gemm $a --repeat 5 2>&1 | grep -E "^gemm|verify|time|error|Error"
done
echo "checked at $SECONDS s"
E=carry/vk-sgmat-exp
SQ=wg_t128_fr8x8_k32_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0_g4_ct,wg_t128_fr8x8_k32_u8_a0_g8_ct,wg_t128_fr8x8_k32_u8_a0_g16_ct
for L in tn nn; do timeout 100 $E tune 2048 2048 2048 --layout $L --shape 16x16x16 --filter $SQ --reps 1 > /dev/null 2>&1; done
for c in tn:4096x4096x4096 nn:4096x4096x4096 tn:8192x8192x8192 tn:4096x11008x4096 tn:2048x2048x2048 tn:4096x4096x4096; do IFS=: read L S <<< "$c"
  read M N K <<< "${S//x/ }"
  echo "== f16:f32 $S $L"
  timeout 60 $E tune $M $N $K --layout $L --shape 16x16x16 --filter $SQ --reps 20 2>&1 | grep -E "^16x16x16" | awk '{print "   ", $3, $(NF-1), $NF}'
done
echo "all done at $SECONDS s"
