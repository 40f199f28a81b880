#!/bin/bash
# Issue 13/12 after tiles computed transposed: which scheme `bench nn` runs, _ct schemes with
# grouped raster tuned, f16->f16 against cuBLAS, batched and grouped GEMMs against torch.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B gemm 4096 4096 4096 --layout nn --repeat 50 2>&1 | grep -E "scheme|time"
for i in 1 2; do timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 20 2>&1 | grep "f16:f32 *nn"; done
timeout 60 $B tune 4096 4096 4096 --layout nn --shape 16x16x16 --filter wg_t128_fr8x8_k32_u8_a0 --reps 20 2>&1 | grep wg_
F=_a0_ct,_a0_g8_ct
for L in nn nt; do timeout 120 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter $F --reps 1 > /dev/null 2>&1; done
for L in nn nt; do echo "== tune 4096 $L $F"; timeout 120 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter $F --reps 5 2>&1 | grep -v "^\[" | grep wg_ | head -6; done
echo "== f16->f16"
timeout 120 python3 scripts/cublas_reference.py --types f16:f16 --shapes 4096x4096x4096,8192x8192x8192 --layout nn > $OUT/cublas16.jsonl 2> $OUT/cublas16.err
for L in nn nt; do timeout 60 $B bench --types f16:f16 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 3 > /dev/null 2>&1; done
for L in nn nt; do timeout 100 $B bench --types f16:f16 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 --cublas $OUT/cublas16.jsonl 2>&1 | grep -v "^\[" | grep "f16:f16"; done
echo "== batched"
timeout 120 python3 scripts/bmm_reference.py --batch 32 > $OUT/bmm.txt 2>&1; cat $OUT/bmm.txt | tail -12
for L in nn nt; do timeout 100 $B bench --batch 32 --types f16:f32 --types f16:f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"; done
echo "== grouped"
timeout 120 python3 scripts/grouped_reference.py > $OUT/grouped.txt 2>&1; tail -6 $OUT/grouped.txt
for L in nn nt; do timeout 100 $B bench --groups 1200,900,700,500,400,200,60,36 --types f16:f32 --types f16:f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep grouped; done
