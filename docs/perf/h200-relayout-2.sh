#!/bin/bash
# Issue 13: correctness of the relaid GEMMs on the H200 (forced, every layout of A, B and C,
# every 16-bit pair, f32 fast and mixed converted first, a fused epilogue; the defaults where
# they relay), then `check --quick` with its relaid rows.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
fails=0; runs=0
run() {
  runs=$((runs+1))
  if ! timeout 60 $B gemm "$@" > $OUT/g.txt 2>&1; then fails=$((fails+1)); echo "FAIL $*"; tail -3 $OUT/g.txt; fi
  grep -E "^gemm|^verify" $OUT/g.txt | tr '\n' ' ' | cut -c1-330; echo
}
for L in nn nt tn tt; do
  for T in f16:f32 bf16:f32 f16:f16; do
    for C in n t; do run 2049 1023 517 --layout $L --c-layout $C --types $T --relayout on --alpha 2 --beta 0.5 --repeat 1; done
  done
  run 2049 1023 517 --layout $L --types f32:f32 --mode fast --convert first --relayout on --repeat 1
  run 1000 999 1001 --layout $L --types f16,f32:f32 --convert first --relayout on --beta -1 --repeat 1
  run 1025 513 129 --layout $L --relayout on --epilogue bias-col,gelu --out f16 --repeat 1
  run 1 77 3 --layout $L --relayout on --repeat 1
done
run 4096 4096 4096 --layout nn --repeat 5
run 4097 4099 4096 --layout tt --beta 1 --repeat 3
run 8192 8192 8192 --layout nt --repeat 3
run 4096 4096 4096 --layout nn --types bf16:f32 --repeat 3
run 2048 2048 2048 --layout tt --types f32:f32 --mode fast --repeat 3
echo "relaid gemm runs: $runs, failed: $fails"
timeout 240 $B check --quick --types f16:f32 --types bf16:f32 --types f16:f16 > $OUT/check.txt 2>&1; echo "check rc $?"
grep -c ": ok" $OUT/check.txt; grep -c "FAIL" $OUT/check.txt; grep "relaid" $OUT/check.txt | grep -c ": ok"; tail -4 $OUT/check.txt
