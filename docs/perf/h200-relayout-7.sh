#!/bin/bash
# Issues 13 and 17: after the review (the converting passes share their store), the f32 and
# mixed pairs through `check --quick` (converted first: rounded, relaid and planes in the fast
# order), forced relaid runs, and the accurate/fast/mixed speeds at 4096^3 against f16 and SGEMM.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 3 > /dev/null 2>&1
timeout 100 python3 carry/sgemm_error.py --shapes 4096x4096x4096 2>&1 | tail -1
for L in nn nt; do
  timeout 100 $B bench --types f16:f32 --types f32:f32 --types f16,f32:f32 --mode fast --shapes 4096x4096x4096 --layout $L --reps 10 2>&1 | grep -v "^\[" | grep -v "^device"
  timeout 60 $B bench --types f32:f32 --mode accurate --shapes 4096x4096x4096 --layout $L --reps 10 2>&1 | grep -v "^\[" | grep -v "^device\|^types"
done
for args in "2049 1023 517 --layout nn --relayout on --types f16:f32 --beta 0.5" "2049 1023 517 --layout nt --relayout on --types f32:f32 --mode fast --convert first" \
  "1000 999 1001 --layout tt --types f32:f32 --c-layout t --alpha -1" "4096 4096 4096 --layout nn --types f32:f32"; do
  timeout 60 $B gemm $args --repeat 2 2>&1 | grep -E "^gemm|^verify" | tr '\n' ' ' | cut -c1-300; echo
done
timeout 280 $B check --quick --types f32:f32 --types f16,f32:f32 > $OUT/check.txt 2>&1; echo "check rc $?"
grep -c ": ok" $OUT/check.txt; grep -c "FAIL" $OUT/check.txt; tail -6 $OUT/check.txt
