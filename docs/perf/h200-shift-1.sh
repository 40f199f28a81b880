#!/bin/bash
# Issue 13 (and 12): workgroup-scope tiles that would cross C's last row or column move back
# inside C and run unclamped, storing through a view clipped to the rows and columns they own.
# Part 1: correctness on edge shapes, every layout, beta, fused beta, grouped, every tile form.
# Part 2: the previous binary (carry/vk-sgmat-old) against the new one, same call.
B=carry/vk-sgmat
O=carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
fails=0; runs=0
g() { runs=$((runs+1)); if ! timeout 60 $B gemm "$@" --repeat 1 > $OUT/g.txt 2>&1; then fails=$((fails+1)); echo "FAIL: $*"; tail -3 $OUT/g.txt; fi; }
for L in nn nt tn tt; do
  g 1030 1540 517 --layout $L --beta 0.5 --alpha 2 --scheme wg_t128_fr8x8_k32_u8_a0_ct
  g 1030 1540 4095 --layout $L --c-layout t --scheme wg_t256_fr16x8_k64_u8_a0_ct
  g 1030 1540 200 --layout $L --beta 1 --scheme wg_t128_fr8x8_k32_u8_a0
  g 1030 1540 1031 --layout $L --beta 0.5 --scheme wg_t256_fr8x16_k64_u8_a0
  g 1030 1540 1031 --layout $L --beta 0.5 --scheme wg_t256_fr8x16_k64_u8_a1_p2
  g 1030 1540 517 --layout $L --types f16:f16 --beta -1 --scheme wg_t256_fr16x16_k32_u8_a0_ct
  g 1030 1540 517 --layout $L --epilogue bias-col,gelu --out f16 --beta 0.5 --scheme wg_t128_fr8x8_k32_u8_a0_ct
  g 1030 1540 517 --layout $L --epilogue bias-row,silu --beta 1 --scheme wg_t128_fr8x8_k32_u8_a0
done
g 4097 4097 4096 --layout nt
g 4097 4099 4096 --layout nn --beta 1
g 4099 4097 4096 --layout nt --types bf16:f32 --epilogue bias-col,gelu --out f16 --beta 0.5
g 2049 2047 4096 --layout nt --types i8:i32 --beta 2
g 129 130 300 --layout tt --beta 0.5 --scheme wg_t128_fr8x8_k32_u8_a0_ct
g 127 1000 300 --layout nn --beta 0.5 --scheme wg_t128_fr8x8_k32_u8_a0_ct
g 2049 1000 1031 --groups 700,0,1,1300,48 --layout nt --beta 0.5 --alpha 2
g 2049 1000 1031 --groups 700,0,1,1300,48 --layout nn --epilogue bias-col,gelu --out f16 --beta 0.5
g 2049 1000 1031 --groups 48,1,1300,0,700 --layout tn --types f16:f16 --beta 1
g 3996 14336 4096 --groups 1200,900,700,500,400,200,60,36 --layout nt
echo "forced gemm runs: $runs, failed: $fails"
echo "== timings: old then new binary, each primed first"
S=4096x4096x4096,4097x4097x4096,4000x4000x4000,3000x5000x4096,2049x2049x2049,1000x1000x1000
G=1200,900,700,500,400,200,60,36
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for bin in $O $B; do
    for L in nn nt; do
      timeout 150 $bin bench --shapes $S --types f16:f32 --layout $L --reps $R 2>&1 | grep -v "^\[" | grep -v "^device" | sed "s|^|$pass $(basename $bin) $L |"
      timeout 60 $bin bench --groups $G --types f16:f32 --layout $L --reps $R 2>&1 | grep grouped | sed "s|^|$pass $(basename $bin) $L |"
    done
  done
done
