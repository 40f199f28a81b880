#!/bin/bash
# 40th session, call 4. Issue 47: rows of quantized weights per workgroup of decode's 8-bit
# kernel (`--gemv-cols`; the default 4 for one token is the dense kernel's, measured on f16
# activations before the 8-bit path, docs/perf/h200-32-4.txt) swept for one token with
# 16-byte loads in place: q4_K, q5_K, q6_K, q8_0, q2_K, q4_0, one token of 22016x4096 and of
# 14336x4096. Carry: carry/vk-sgmat (this session's release binary).
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=1x22016x4096,1x14336x4096
for q in q4_K q5_K q6_K q8_0 q2_K q4_0; do
  for cols in 2 4 8; do
    for pass in 1 2; do
      timeout 60 $B bench --types f16:f32 --weights $q --shapes $S --stream --reps 50 --warm 0.3 --gemv-cols $cols > /tmp/b.txt 2>&1
    done
    grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$q cols $cols] |"
  done
  echo "$q at $SECONDS s"
done
