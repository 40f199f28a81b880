#!/bin/bash
# Moved edge tiles, second form: tiles inside C run exactly as before (their starts visibly
# multiples of the tile); moved tiles run their own copy of the unclamped loops. Their store:
# through a clipped view (default) or (VK_SGMAT_EXP=2) through a layout from the tile's own
# corner, the shared rows at negative coordinates. Correctness of both, then timings.
B=carry/vk-sgmat
O=carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
fails=0; runs=0
g() { runs=$((runs+1)); if ! timeout 60 $B gemm "$@" --repeat 1 > $OUT/g.txt 2>&1; then fails=$((fails+1)); echo "FAIL: $*"; tail -3 $OUT/g.txt; fi; }
for e in 0 2; do
  export VK_SGMAT_EXP=$e
  for L in nn nt tn tt; do
    g 1030 1540 517 --layout $L --beta 0.5 --alpha 2 --scheme wg_t128_fr8x8_k32_u8_a0_ct
    g 1030 1540 1031 --layout $L --beta 0.5 --scheme wg_t256_fr8x16_k64_u8_a1_p2
    g 1030 1540 517 --layout $L --epilogue bias-col,gelu --out f16 --beta 0.5
  done
  g 4097 4099 4096 --layout nn --beta 1
  g 2049 2047 4096 --layout nt --types i8:i32 --beta 2
  g 1000 999 300 --layout tt --c-layout t --beta 0.5 --scheme wg_t128_fr8x8_k32_u8_a0
  g 2049 1000 1031 --groups 700,0,1,1300,48 --layout nt --beta 0.5 --alpha 2
  g 2049 1000 1031 --groups 700,0,1,1300,48 --layout nn --epilogue bias-row,silu --beta 1
  echo "variant $e: forced gemm runs: $runs, failed: $fails"
done
S=4096x4096x4096,4097x4097x4096,4000x4000x4000,2049x2049x2049,1000x1000x1000
G=1200,900,700,500,400,200,60,36
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for v in old clip shifted; do
    bin=$B; [ $v = old ] && bin=$O
    export VK_SGMAT_EXP=0; [ $v = shifted ] && export VK_SGMAT_EXP=2
    for L in nn nt; do
      timeout 100 $bin bench --shapes $S --types f16:f32 --layout $L --reps $R 2>&1 | grep "f16:f32 " | sed "s|^|$pass $v $L |"
      timeout 40 $bin bench --groups $G --types f16:f32 --layout $L --reps $R 2>&1 | grep grouped | sed "s|^|$pass $v $L |"
    done
  done
done
