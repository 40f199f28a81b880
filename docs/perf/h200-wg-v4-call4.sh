#!/bin/bash
# Issue 13, call 4: every layout, two candidate kernels, first a priming process (fresh pipelines
# run slowly in the process that compiles them), then the measuring one; ggml in the same call.
set -x
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv
tar xJf carry/ggml.tar.xz -C /tmp
F=wg_t128_fr8x8_k32_u4,wg_t256_fr8x16_k64_u8
for L in nn nt tn tt; do
  timeout 75 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter $F --reps 3 > $OUT/prime-$L.txt 2>&1
done
for L in nn nt tn tt; do
  timeout 75 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter $F --reps 10 > $OUT/tune-$L.txt 2>&1
  grep -v "^\[" $OUT/tune-$L.txt | head -14
done
(cd /tmp/ggml && timeout 90 ./mm_bench --min-time 0.6 f16:4096x4096x4096 f16:2048x2048x2048 f16:4096x4096x256 bf16:8192x8192x8192) > $OUT/ggml.txt 2>&1
grep -E "ggml-vulkan" $OUT/ggml.txt
