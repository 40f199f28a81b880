#!/bin/bash
# Issue 17: where converting first starts to pay (f32 fast and f16 x f32, small and skinny shapes), one call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --types f32:f32 --mode fast --shapes 4096x4096x4096 --reps 3 > /dev/null 2>&1
S=256x256x256,512x512x512,768x768x768,1024x1024x1024,512x4096x4096,4096x512x4096,16x4096x4096,128x4096x4096
for C in first load; do
  timeout 150 $B bench --types f32:f32 --types f16,f32:f32 --mode fast --convert $C --shapes $S --reps 20 2>&1 | grep "f32:f32.*nn"
done
timeout 100 $B bench --types f16:f32 --shapes $S --reps 20 2>&1 | grep "f16:f32.*nn"
