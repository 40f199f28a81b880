#!/bin/bash
# Issue 13: correctness of the copy in registers, this session's final binary: `vk-sgmat check
# --quick` (its relaid cases among them), then 8192^3 `nt` (two copies) against the reference.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 $B check --quick --types f16:f32 --types bf16:f32 --types f16:f16 > $OUT/check.txt 2>&1
echo "cases ok: $(grep -c ': ok$' $OUT/check.txt), relaid ok: $(grep ', relaid' $OUT/check.txt | grep -c ': ok$')"
echo "lines not ok:"; grep '^\[' $OUT/check.txt | grep -v ': ok$' | head -20
tail -2 $OUT/check.txt
timeout 250 $B gemm 8192 8192 8192 --layout nt --repeat 3 2>&1 | grep -E "^gemm|verify|time"
