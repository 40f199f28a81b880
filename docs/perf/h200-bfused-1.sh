#!/bin/bash
# Issue 12: batched GEMMs with a fused epilogue (f16 out from f32 sums, as torch.bmm stores it),
# checked on the H200 and timed against torch.bmm in the same call; batch 32 and 256.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 $B bench --shapes 4096x4096x4096 --reps 100 > /dev/null 2>&1   # clocks up
echo "== checks (every sampled row against the f64 reference)"
while read -r ARGS; do
  echo "-- gemm $ARGS"
  timeout 90 $B gemm $ARGS --repeat 1 2>&1 | grep -v "^\[" | tail -1
done <<'LIST'
1024 1024 128 --batch 32 --out f16
2048 128 2048 --batch 32 --out f16 --layout nt --epilogue bias-col,gelu --beta 0.5
1023 1025 129 --batch 7 --out f16 --layout tt --epilogue bias-row,silu --alpha 2
128 128 64 --batch 70000 --out f16 --layout nt
2049 2047 127 --batch 3 --types bf16:f32 --epilogue relu --layout tn --shared-b
4097 4095 4096 --batch 2 --out f16 --epilogue bias-col,gelu-erf --beta 1
LIST
echo "== torch.bmm"
timeout 150 python3 carry/bmm_reference.py --batch 32 --types f16:f16,f16:f32 > $OUT/bmm32.jsonl 2>&1
timeout 150 python3 carry/bmm_reference.py --batch 256 --types f16:f16,f16:f32 > $OUT/bmm256.jsonl 2>&1
cat $OUT/bmm32.jsonl $OUT/bmm256.jsonl | grep best
echo "== ours"
for L in nn nt; do timeout 60 $B bench --batch 32 --types f16:f32 --out f16 --layout $L --reps 3 > /dev/null 2>&1; done
for L in nn nt; do
  timeout 120 $B bench --batch 32 --types f16:f32 --out f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"
  timeout 120 $B bench --batch 32 --types f16:f32 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device\|batch "
  timeout 120 $B bench --batch 32 --types f16:f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device\|batch "
  timeout 150 $B bench --batch 256 --types f16:f32 --out f16 --layout $L --reps 10 2>&1 | grep -v "^\[" | grep -v "^device\|batch "
  timeout 120 $B bench --batch 256 --types f16:f32 --shapes 128x128x64,1024x1024x128,2048x128x2048 --layout $L --reps 10 2>&1 | grep -v "^\[" | grep -v "^device\|batch "
done
