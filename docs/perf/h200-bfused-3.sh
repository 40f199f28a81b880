#!/bin/bash
# Issue 12: the 64x64 tile for a 16-bit C at short K (preferred_short_k_schemes), checked and
# timed against torch.bmm in one call; then `check` on the fused batches.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== checks on the new default"
while read -r ARGS; do
  echo "-- gemm $ARGS"
  timeout 60 $B gemm $ARGS --repeat 1 2>&1 | grep -v "^\[" | tail -1 | cut -c1-200
done <<'LIST'
1023 1025 127 --batch 9 --out f16 --layout tt --epilogue bias-col,gelu --alpha 2 --beta 0.5
1000 999 64 --batch 5 --types f16:f16 --layout nt --beta 1
4097 4095 100 --types f16:f16 --layout tn
3001 2999 128 --out bf16 --types bf16:f32 --epilogue bias-row,relu
LIST
echo "== torch.bmm"
timeout 100 python3 carry/bmm_reference.py --batch 32 --types f16:f16,f16:f32 2>&1 | grep best
timeout 150 python3 carry/bmm_reference.py --batch 256 --types f16:f16,f16:f32 2>&1 | grep best
echo "== ours"
for L in nn nt; do timeout 60 $B bench --batch 32 --types f16:f32 --out f16 --layout $L --reps 3 > /dev/null 2>&1; done
for L in nn nt; do
  timeout 120 $B bench --batch 32 --types f16:f32 --out f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"
  timeout 120 $B bench --batch 32 --types f16:f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device\|batch "
  timeout 120 $B bench --batch 32 --types f16:f32 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device\|batch "
  timeout 150 $B bench --batch 256 --types f16:f32 --out f16 --layout $L --reps 10 2>&1 | grep -v "^\[" | grep -v "^device\|batch "
done
echo "== check"
timeout 200 $B check --quick --types f16:f32,f16:f16 > $OUT/check.txt 2>&1; echo "check rc=$?"
grep -c ": ok$" $OUT/check.txt; grep -E "batch .*gelu|FAIL|passed" $OUT/check.txt | grep -v "^\[" | tail -8
