#!/bin/bash
# Issue 13, 2026-11-26, call 1.
# (1) int8 with K from 1024 to 2047, `nt`: do the K-contiguous workgroup-scope tiles (shorter
#     iterations than the 2048-deep rule allows) beat the subgroup-scope default there?
# (2) Tails: the f16 defaults and ggml-vulkan at shapes whose tile counts fill whole waves
#     (N = 4224, 8448) beside their power-of-two neighbours, to size what any tail fix could give.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
FI=wg_t128_fr8x8_k64_u8_a0_ct,wg_t128_fr8x8_k64_u4_ct,wg_t128_fr8x8_k64_u2_ct,wg_t128_fr4x4_k128_u2_ct,wg_t128_fr4x4_k64_u2_ct,wg_t128_fr8x8_k128_u2_ct,sg1x4_fr8x2_k64_s32
timeout 120 $B tune 2048 2048 1024 --types i8:i32 --shape 16x16x32 --layout nt --filter $FI --reps 1 > /dev/null 2>&1
echo "prime done at $SECONDS s"
for S in 4096x4096x1024 4096x4096x1536 4096x4096x2000 2048x2048x1024 2048x2048x1536 1024x1024x1024 1024x1024x1536 4096x11008x1024 8192x8192x1024; do
  read M N K <<< "${S//x/ }"
  echo "== i8:i32 $S nt"
  timeout 100 $B tune $M $N $K --types i8:i32 --shape 16x16x32 --layout nt --filter $FI --reps 10 2>&1 | grep -E "wg_|sg1x4"
done
echo "int8 done at $SECONDS s"
W=2048x2048x2048,2048x4096x2048,2048x4224x2048,4096x4096x4096,4096x4224x4096,4096x8192x4096,4096x8448x4096,4096x11008x4096
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $W | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
for pass in prime measure; do
  R=3; [ $pass = measure ] && R=20
  for L in nt nn; do
    timeout 100 $B bench --types f16:f32 --shapes $W --layout $L --reps $R --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$pass |"
  done
done
echo "all done at $SECONDS s"
