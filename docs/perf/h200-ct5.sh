#!/bin/bash
# Issue 12/13: K's whole steps after the loop unclamped; correctness over K = 1..4096 on the
# workgroup-scope defaults, then batched and grouped GEMMs against torch in one call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0; runs=0
g() { runs=$((runs+1)); if ! timeout 60 $B gemm "$@" --repeat 1 > $OUT/g.txt 2>&1; then fails=$((fails+1)); echo "FAIL: $*"; tail -3 $OUT/g.txt; fi; }
for K in 1 31 128 200 517 4095; do for L in nn nt tn tt; do
  g 1030 1540 $K --layout $L --beta 0.5 --scheme wg_t128_fr8x8_k32_u8_a0_ct
  g 1030 1540 $K --layout $L --c-layout t --scheme wg_t256_fr16x8_k64_u8_a0_ct
  g 1030 1540 $K --layout $L --types f16:f16 --alpha 2 --scheme wg_t256_fr16x16_k32_u8_a0_ct
done; done
g 2049 2047 200 --layout nt --epilogue bias-col,gelu --out f16
g 2049 2047 517 --layout tn --epilogue bias-row,silu --beta 0.5
g 4096 4096 4095 --layout nt --types bf16:f32
echo "forced gemm runs: $runs, failed: $fails"
echo "== batched"
timeout 120 python3 scripts/bmm_reference.py --batch 32 > $OUT/bmm.txt 2>&1
grep best $OUT/bmm.txt | python3 -c "import sys,json
for l in sys.stdin:
    d=json.loads(l); print('torch.bmm', d['types'], d['m'], d['n'], d['k'], round(d['median_ms'],4))"
for L in nn nt; do timeout 100 $B bench --batch 32 --types f16:f32 --types f16:f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"; done
echo "== grouped"
timeout 120 python3 scripts/grouped_reference.py > $OUT/grouped.txt 2>&1; cut -c1-200 $OUT/grouped.txt
timeout 100 $B bench --groups 1200,900,700,500,400,200,60,36 --types f16:f32 --types f16:f16 --layout nn --reps 20 2>&1 | grep -v "^\[" | grep grouped
timeout 100 $B bench --groups 1200,900,700,500,400,200,60,36 --types f16:f32 --layout nt --reps 20 2>&1 | grep -v "^\[" | grep grouped
