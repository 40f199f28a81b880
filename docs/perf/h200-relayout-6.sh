#!/bin/bash
# Issue 17: the accurate split's planes written in the order A column-major, B row-major (an
# operand with K along its rows split transposed), now the default where f32 operands are
# converted first: speed in every layout and size against the split as loaded and cuBLAS SGEMM,
# errors against SGEMM's, checks on the H200, one call.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 3 > /dev/null 2>&1
echo "== sgemm (error, speed)"
timeout 120 python3 carry/sgemm_error.py --shapes 1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192 2>&1 | tail -4
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096
for L in nn nt tn tt; do
  echo "== accurate auto $L"
  timeout 120 $B bench --types f32:f32 --mode accurate --shapes $S --layout $L --reps 10 2>&1 | grep -v "^\[" | grep -v "^device"
done
echo "== accurate as loaded nn"
timeout 120 $B bench --types f32:f32 --mode accurate --convert load --shapes $S --layout nn --reps 10 2>&1 | grep -v "^\[" | grep -v "^device"
echo "== errors and checks (every row against the f64 reference)"
fails=0; runs=0
for args in "4096 4096 4096" "4096 4096 4096 --layout nt" "4096 4096 4096 --layout tt" "4096 4096 4096 --convert load" \
  "4099 4097 1029 --layout nt --c-layout t" "4099 4097 1029 --layout tn" "2049 3001 777 --layout tt --beta 0.5 --alpha -2" \
  "2047 1025 4096 --layout nn" "1025 1031 3 --convert first" "1 5000 77 --convert first --layout nt" \
  "3000 2000 1000 --epilogue bias-col,gelu" "2048 2048 2048 --layout nt --c-layout t --beta 1"; do
  runs=$((runs+1))
  if ! timeout 90 $B gemm $args --types f32:f32 --repeat 3 > $OUT/g.txt 2>&1; then fails=$((fails+1)); echo "FAIL $args"; fi
  grep -E "^gemm|^verify|^time|rror" $OUT/g.txt | sed "s/^/[$args] /"
done
echo "accurate runs: $runs, failed: $fails"
