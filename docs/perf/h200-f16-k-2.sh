#!/bin/bash
# Issue 13: the leads at a K that is not a whole number of their iterations but at least eight
# of them (16-bit operands). The previous binary (vk-sgmat-prev) against this one, default
# plans, a priming pass first; `tune` for the f16-result 256x256 lead at such K; then the new
# defaults against the reference (every row).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 40 carry/vk-sgmat bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
for pass in prime measure; do
  R=2; [ $pass != prime ] && R=20
  for b in vk-sgmat-prev vk-sgmat; do
    timeout 60 carry/$b bench --types f16:f32 --shapes 4096x4096x11008,4096x4096x5000,4096x11008x11008 --layout nt --reps $R 2>&1 | grep -E "^f16" | sed "s|^|$pass $b |"
    timeout 60 carry/$b bench --types f16:f16 --shapes 4096x4096x4100,4096x4096x2100 --layout nn --reps $R 2>&1 | grep -E "^f16" | sed "s|^|$pass $b |"
  done
  echo "$pass done at $SECONDS s"
done
timeout 60 carry/vk-sgmat tune 4096 4096 4100 --types f16:f16 --shape 16x16x16 --layout nn --filter wg_t256_fr16x16_k32_u8_a0_ct,wg_t128_fr8x8_k32_u8_a0 --reps 10 2>&1 | grep -E "wg_"
echo "== new defaults against the reference, every row"
for a in "4096 4096 11008 --layout nt" "4097 4095 5000 --types bf16:f32 --layout nt --beta 2" \
         "4096 4096 4100 --types f16:f16 --layout nn" "3001 2999 2100 --types f16:f16 --layout tt --c-layout t --alpha 0.5"; do
  timeout 60 carry/vk-sgmat gemm $a --repeat 5 2>&1 | grep -E "^gemm|verify|time"
done
echo "checked at $SECONDS s"
