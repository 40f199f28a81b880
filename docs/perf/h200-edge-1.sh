#!/bin/bash
# Issues 12 and 13 (not kept: see docs/performance.md): workgroup-scope tiles on C's edge run the loop of whole iterations (clamped)
# instead of one K step at a time. Checked first, then timed against the binary before the
# change (carry/vk-sgmat-old: grouped in one dispatch, edge tiles step by step) in this call.
NEW=carry/vk-sgmat; OLD=carry/vk-sgmat-old
G=1200,900,700,500,400,200,60,36
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $NEW bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== checks, new binary (sampled rows against the f64 reference)"
while read -r ARGS; do
  echo "-- gemm $ARGS"
  timeout 90 $NEW gemm $ARGS --repeat 1 2>&1 | grep -v "^\[" | grep -E "check|FAIL|error|grouped" | tail -2
done <<LIST
4097 4095 4096 --layout nn
4097 4095 4096 --layout nt --beta 0.5
4097 4095 4096 --layout tn --alpha -2
4097 4095 4096 --layout tt --c-layout t
2049 1023 517 --layout nt --types f16:f16 --beta 1
3001 2999 1025 --layout tt --types bf16:f32
4099 4097 4096 --layout nt --types i8:i32 --beta 2
1025 1031 1029 --epilogue bias-col,gelu --out f16 --layout nt
1000 1000 1000 --layout nn
1 77 3 --layout nt
4096 14336 4096 --groups $G,100 --layout nt
3996 14336 4096 --groups $G
2049 1000 1031 --groups 700,0,1,1300,48 --layout nt --beta 0.5 --alpha 2 --types f16:f16
LIST
echo "== grouped, old then new (a priming process each, then the measured one)"
for BIN in $OLD $NEW; do
  for pass in prime measure; do
    R=2; [ $pass = measure ] && R=20
    for L in nn nt; do
      timeout 120 $BIN bench --groups $G --types f16:f32 --types f16:f16 --layout $L --reps $R 2>&1 | grep grouped | sed "s|^|$BIN $pass |"
    done
  done
done
for S in wg_t128_fr8x8_k32_u8_a0_ct wg_t128_fr8x8_k32_u8_a0_ct wg_t256_fr16x8_k64_u8_a0_ct; do
  timeout 90 $NEW gemm 3996 14336 4096 --groups $G --layout nt --scheme $S --repeat 20 2>&1 | grep grouped | sed "s|^|forced $S |"
done
echo "== edges of single GEMMs, old then new"
SH=4097x4097x4096,2049x2049x2049,1000x1000x1000,4095x4095x4095,4096x4096x4096
for BIN in $OLD $NEW; do
  for pass in prime measure; do
    R=3; [ $pass = measure ] && R=20
    for L in nn nt; do
      timeout 100 $BIN bench --types f16:f32 --shapes $SH --layout $L --reps $R 2>&1 | grep -v '^\[' | grep -v '^device\|^types' | sed "s|^|$BIN $pass |"
    done
  done
done
