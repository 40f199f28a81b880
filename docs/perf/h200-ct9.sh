#!/bin/bash
# Issue 12/13: the f16 long-K lead and 64x64 _ct defaults, checked and timed in one call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 150 $B check --types f16:f16,f16:f32 --quick > $OUT/check.txt 2>&1; echo "check rc=$?"
grep -c ": ok$" $OUT/check.txt; grep -v ": ok$" $OUT/check.txt | grep -v "^\[" | tail -5
grep -o "\[wg_[a-z0-9_]*\]" $OUT/check.txt | sort | uniq -c
for S in "1024 1024 1024" "32768 1024 128" "4096 4096 4096"; do
  timeout 60 $B gemm $S --types f16:f16 --layout nt --alpha 2 --beta 0.5 --repeat 1 2>&1 | grep -E "scheme|verify" | cut -c1-150
done
timeout 100 python3 scripts/bmm_reference.py --batch 32 --types f16:f16 > $OUT/bmm.txt 2>&1
grep best $OUT/bmm.txt | python3 -c "import sys,json
for l in sys.stdin:
    d=json.loads(l); print('torch.bmm', d['types'], d['m'], d['n'], d['k'], round(d['median_ms'],4))"
for L in nn nt; do timeout 60 $B bench --batch 32 --types f16:f16 --layout $L --reps 3 > /dev/null 2>&1; done
for L in nn nt; do timeout 100 $B bench --batch 32 --types f16:f16 --layout $L --reps 20 2>&1 | grep -v "^\[" | grep -v "^device"; done
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.6 f16:1024x1024x1024) 2>&1 | grep "^ggml-vulkan"
timeout 60 python3 scripts/cublas_reference.py --types f16:f32,f16:f16 --shapes 1024x1024x1024,4096x4096x4096 --f32-out --layout nt > $OUT/c.jsonl 2>/dev/null
timeout 60 $B bench --types f16:f32 --types f16:f16 --shapes 1024x1024x1024,4096x4096x4096 --layout nt --reps 3 > /dev/null 2>&1
timeout 100 $B bench --types f16:f32 --types f16:f16 --shapes 1024x1024x1024,4096x4096x4096 --layout nt --reps 20 --cublas $OUT/c.jsonl 2>&1 | grep -v "^\["
