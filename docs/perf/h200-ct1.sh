#!/bin/bash
# Issue 13: tiles computed transposed (_ct) against the same tiles as they are, every layout,
# a priming process first; ggml in the same call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
F=wg_t128_fr8x8_k32_u8_a0,wg_t256_fr8x16_k64_u8_a0,wg_t256_fr16x8_k64_u8_a0
H=wg_t256_fr16x16_k32_u8_a0,wg_t128_fr8x8_k32_u8_a0
for L in nn nt tn tt; do timeout 60 $B tune 4096 4096 4096 --layout $L --shape 16x16x16 --filter $F --reps 2 > /dev/null 2>&1; done
timeout 60 $B tune 4096 4096 4096 --types f16:f16 --layout nn --shape 16x16x16 --filter $H --reps 2 > /dev/null 2>&1
t() { echo "== $*"; timeout 90 $B tune "$@" --shape 16x16x16 2>&1 | grep -v "^\[" | grep -E "wg_|FAIL|rror" | head -8; }
for L in nn nt tn tt; do t 4096 4096 4096 --layout $L --filter $F --reps 10; done
t 8192 8192 8192 --layout nt --filter $F --reps 5
t 8192 8192 8192 --layout nn --filter $F --reps 5
t 2048 2048 2048 --layout nt --filter $F --reps 10
t 4096 4096 256 --layout nt --filter $F --reps 10
t 4096 4096 256 --layout nn --filter $F --reps 10
t 4096 4096 4096 --types f16:f16 --layout nn --filter $H --reps 10
t 4096 4096 4096 --types f16:f16 --layout nt --filter $H --reps 10
t 8192 8192 8192 --types bf16:f32 --layout nt --filter $F --reps 5
(cd /tmp/ggml && timeout 90 ./mm_bench --min-time 0.6 f16:2048x2048x2048 f16:4096x4096x4096 f16:4096x4096x256 bf16:8192x8192x8192) > $OUT/ggml.txt 2>&1
grep -E "^ggml-vulkan" $OUT/ggml.txt
