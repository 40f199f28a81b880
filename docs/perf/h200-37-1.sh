#!/bin/bash
# 37th session, call 1. Issue 47 prefill: where the time of a quantized prefill goes. Each
# dispatch timed apart (`bench --trace`: the dequantizing pass, then the GEMM on the copy)
# beside our f16 weights at the same shapes, with the SM clock and board power sampled every
# 100 ms; then issue 46's grouped MoE in `nt` on the default scheme and on forced 128x128 tiles.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
S=512x22016x4096,2048x22016x4096
smi() { nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_throttle_reasons.active --format=csv,noheader,nounits -lms 100 > /tmp/smi-$1.csv & echo $!; }
summ() { awk -F', ' -v l="$1" '{n++; c+=$1; p+=$2; if ($3 != "0x0000000000000000" && $3 != "0x0000000000000001") t++} END {printf "[smi %s] samples %d, mean SM clock %.0f MHz, mean power %.0f W, throttled %d\n", l, n, c/n, p/n, t}' /tmp/smi-$1.csv; }
run() { # label args
  local label=$1; shift
  for pass in 1 2; do
    if [ $pass = 2 ]; then pid=$(smi "$label"); fi
    timeout 150 $B bench "$@" --stream --reps 30 --warm 0.5 --trace > /tmp/b.txt 2>&1
    if [ $pass = 2 ]; then kill $pid; grep -vE "^$" /tmp/b.txt | grep -E "[0-9]x[0-9]|rror|anic|median|dispatch|us" | head -30 | sed "s|^|[$label] |"; summ "$label"; fi
  done
}
run "f16 weights" --types f16:f32 --layout nt --shapes $S
for q in q4_K q8_0; do
  run "$q" --types f16:f32 --weights $q --shapes $S
done
G=1200,900,700,500,400,200,60,36
moe() { # label args
  local label=$1; shift
  for pass in 1 2; do
    timeout 120 $B bench --groups $G --types f16:f32 --reps 20 "$@" > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "grouped|rror|anic|ms" /tmp/b.txt | head -5 | sed "s|^|[$label] |"
  done
}
moe "moe nt default" --layout nt
moe "moe nn default" --layout nn
for s in wg_t128_fr8x8_k32_u8_a0_g8_ct wg_t128_fr4x4_k64_u2_ct wg_t128_fr8x8_k64_u8_a0_ct; do
  moe "moe nt $s" --layout nt --scheme $s
done
echo "all done at $SECONDS s"
