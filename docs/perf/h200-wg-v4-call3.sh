#!/bin/bash
# Issue 13, call 3: pipelines without CAPTURE_STATISTICS; the same tune in two fresh processes.
set -x
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.6 f16:4096x4096x4096) > $OUT/ggml.txt 2>&1
grep -E "ggml-vulkan f16" $OUT/ggml.txt
F=wg_t128_fr8x8_k32_u4,wg_t256_fr8x16_k32_u4,wg_t256_fr8x16_k32_u8,wg_t256_fr8x16_k64_u8
for run in 1 2; do
  timeout 200 $B tune 4096 4096 4096 --shape 16x16x16 --filter $F --reps 10 > $OUT/tune-nn-$run.txt 2>&1
  grep -v "^\[" $OUT/tune-nn-$run.txt | head -30
done
timeout 200 $B tune 4096 4096 4096 --layout nt --shape 16x16x16 --filter $F --reps 10 > $OUT/tune-nt.txt 2>&1
grep -v "^\[" $OUT/tune-nt.txt | head -30
