#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 2: does the last, partial wave cost throughput? At
# 4096^3 the 128x256 and 256x128 tiles make 512 workgroups, one per SM at a time on 132 SMs:
# 3.88 waves, the fourth 88% full. 4224x4096 (`nn` lead, 128x256) and 4096x4224 (`nt` lead,
# 256x128) make 528 workgroups, exactly 4 waves; 4224x3072 / 3072x4224 make 396 (3 waves)
# against 3072x4096 / 4096x3072's 384 (2.91). Same schemes in place, by their own timestamps.
# SM clock and board power sampled every 100 ms during the 4096^3 `nn` run.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
NN=wg_t256_fr8x16_k64_u16_a0_g8_rf_ct
NT=wg_t256_fr16x8_k64_u16_a0_g8_rf_ct
SN=4096x4096x4096,4224x4096x4096,4096x3072x4096,4224x3072x4096
ST=4096x4096x4096,4096x4224x4096,3072x4096x4096,3072x4224x4096
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "verify|rror" | sed "s|^|[$*] |"; }
g 4224 4096 4096 --layout nn --relayout off --scheme $NN
timeout 60 $B bench --types f16:f32 --shapes $SN --layout nn --relayout off --scheme $NN --reps 2 --warm 0 > /dev/null 2>&1
timeout 60 $B bench --types f16:f32 --shapes $ST --layout nt --relayout off --scheme $NT --reps 2 --warm 0 > /dev/null 2>&1
echo "primed at $SECONDS s"
for pass in 1 2; do
  timeout 100 $B bench --types f16:f32 --shapes $SN --layout nn --relayout off --scheme $NN --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass nn |"
  timeout 100 $B bench --types f16:f32 --shapes $ST --layout nt --relayout off --scheme $NT --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass nt |"
done
nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 100 > /tmp/smi.txt &
P=$!
timeout 100 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --relayout off --scheme $NN --reps 200 --warm 2 2>&1 | grep -E '^f16' | sed "s|^|smi nn |"
kill $P; sort /tmp/smi.txt | uniq -c | sort -rn | head -12
echo "all done at $SECONDS s"
