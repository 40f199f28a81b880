#!/bin/bash
# Issue 13 (and 12): workgroup-scope tiles on C's edge store element by element through the
# per-element operation (writing what lies inside C) instead of a clamped tensor store.
# Correctness on edge shapes first, then timings against the previous binary, same call.
B=carry/vk-sgmat
O=carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
fails=0; runs=0
g() { runs=$((runs+1)); if ! timeout 60 $B gemm "$@" --repeat 1 > $OUT/g.txt 2>&1; then fails=$((fails+1)); echo "FAIL: $*"; tail -3 $OUT/g.txt; fi; }
for L in nn nt tn tt; do
  g 1030 1540 517 --layout $L --beta 0.5 --alpha 2 --scheme wg_t128_fr8x8_k32_u8_a0_ct
  g 1030 1540 1031 --layout $L --beta 0.5 --scheme wg_t256_fr8x16_k64_u8_a0
  g 1030 1540 517 --layout $L --epilogue bias-col,gelu --out f16 --beta 0.5
  g 1030 1540 517 --layout $L --types f16:f16 --beta -1
done
g 4097 4099 4096 --layout nn --beta 1
g 4099 4097 4096 --layout nt --types bf16:f32 --epilogue bias-row,silu --out bf16
g 2049 2047 4096 --layout nt --types i8:i32 --beta 2
g 1000 999 300 --layout tt --c-layout t --beta 0.5
g 77 1000 300 --layout nn --beta 0.5 --scheme wg_t128_fr8x8_k32_u8_a0_ct
g 2049 1000 1031 --groups 700,0,1,1300,48 --layout nt --beta 0.5 --alpha 2
g 2049 1000 1031 --groups 700,0,1,1300,48 --layout nn --epilogue bias-col,silu --out f16 --beta 1
g 2049 1000 1031 --groups 700,0,1,1300,48 --layout nn --types f16:f16
echo "forced gemm runs: $runs, failed: $fails"
S=4096x4096x4096,4097x4097x4096,4000x4000x4000,2049x2049x2049,1000x1000x1000
G=1200,900,700,500,400,200,60,36
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for v in old new; do
    bin=$B; [ $v = old ] && bin=$O
    for L in nn nt; do
      timeout 120 $bin bench --shapes $S --types f16:f32 --layout $L --reps $R 2>&1 | grep "f16:f32 " | sed "s|^|$pass $v $L |"
      timeout 50 $bin bench --groups $G --types f16:f32 --types f16:f16 --layout $L --reps $R 2>&1 | grep grouped | sed "s|^|$pass $v $L |"
    done
  done
done
