#!/bin/bash
# Issue 13: does one copy pay at K = 1024 and 1536 (the default leaves those in place)? `nn` and
# `tt`, the copy forced on and off, interleaved, a priming pass first.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=4096x4096x1024,4096x4096x1536,8192x8192x1024,4096x11008x1024,4096x4096x512
for pass in prime measure measure2; do
  R=2; [ $pass != prime ] && R=20
  for L in nn tt; do
    for r in off on; do
      timeout 60 $B bench --types f16:f32 --shapes $S --layout $L --relayout $r --reps $R 2>&1 | grep -E "^f16" | sed "s|^|$pass $r |"
    done
  done
done
