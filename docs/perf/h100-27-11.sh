#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 11: sizes built into the workgroup-scope kernel
# (KernelKey::fixed, GemmOptions::specialize; default from M*N*K of 2048^3 on). (1) `gemm`
# against the f64 reference on specialised kernels: edges, alpha and beta, K remainders,
# copies first, bf16, f16 -> f16, i8 (exact); `check --quick` (f16 -> f32). (2) `bench`
# --specialize on against off, by own timestamps, `nn` and `nt`.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4096 4096 4096 --layout nn --alpha 2 --beta 0.5
g 4097 4095 4096 --layout nt --beta 1
g 2048 2048 2048 --layout nn
g 4096 4096 3000 --layout nt --types bf16:f32
g 4096 4096 4608 --layout tt --alpha -1
g 4096 4096 4096 --layout nt --types f16:f16
g 4096 4096 4096 --layout nt --types i8:i32
g 2048 2048 2048 --layout tn --specialize off
echo "gemm checks done at $SECONDS s"
timeout 170 $B check --quick --types f16:f32 > /tmp/check.txt 2>&1; tail -2 /tmp/check.txt
echo "check: $(grep -c ': ok$' /tmp/check.txt) ok; not ok: $(grep '^\[' /tmp/check.txt | grep -vc ': ok$')"; grep '^\[' /tmp/check.txt | grep -v ': ok$' | head -5
echo "check done at $SECONDS s"
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,4096x4096x256
for L in nn nt; do for x in on off; do timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --specialize $x --reps 2 --warm 0 > /dev/null 2>&1; done; done
echo "primed at $SECONDS s"
for pass in 1 2; do for L in nn nt; do for x in on off; do
  timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --specialize $x --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass $L |"
done; done; done
echo "all done at $SECONDS s"
