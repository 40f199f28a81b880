#!/bin/bash
# Issue 13: correctness of tiles computed transposed (_ct) on the H200: `check` (every config,
# the new defaults among them), then each _ct default forced over every layout of A, B and C,
# alpha/beta, fused epilogues; every run verified against the f64 reference.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 300 $B check > $OUT/check.txt 2>&1; echo "check rc=$?"
grep -v "^\[" $OUT/check.txt | tail -40 | cut -c1-160
fails=0; runs=0
g() { runs=$((runs+1)); if ! timeout 60 $B gemm "$@" --repeat 1 > $OUT/g.txt 2>&1; then fails=$((fails+1)); echo "FAIL: $*"; tail -3 $OUT/g.txt; fi; }
for S in wg_t128_fr8x8_k32_u8_a0_ct wg_t256_fr16x8_k64_u8_a0_ct; do
  for L in nn nt tn tt; do for C in n t; do
    g 2049 1023 517 --layout $L --c-layout $C --alpha 2 --beta 0.5 --scheme $S
    g 1031 2047 513 --layout $L --c-layout $C --epilogue bias-col,gelu --out f16 --scheme $S
    g 1031 2047 513 --layout $L --c-layout $C --epilogue bias-row,silu --scheme $S --beta 0.5
  done; done
  g 4096 4096 4096 --layout nt --scheme $S --types bf16:f32
done
for L in nn nt tn tt; do for C in n t; do
  g 1029 2051 515 --types f16:f16 --layout $L --c-layout $C --alpha 2 --beta 0.5 --scheme wg_t256_fr16x16_k32_u8_a0_ct
done; done
g 4096 4096 4095 --layout nt
g 4096 4096 256 --layout nn
echo "forced gemm runs: $runs, failed: $fails"
