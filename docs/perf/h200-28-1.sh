#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 1: the 27th session's final binary (sizes built
# into the workgroup-scope kernel from M*N*K of 2048^3 on) on an H200 at last. (1) `gemm`
# against the f64 reference on specialised kernels. (2) The peers table (peers.sh: own
# timestamps and as a stream, ggml-vulkan and cuBLAS in the same call). (3) `check --quick`
# (f16 -> f32), whole, its log under $OUT.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4096 4096 4096 --layout nn --alpha 2 --beta 0.5
g 4097 4095 4096 --layout nt --beta 1
g 4096 4096 3000 --layout nt --types bf16:f32
g 4096 4096 4608 --layout tt --alpha -1
g 4096 4096 4096 --layout nt --types f16:f16
g 4096 4096 4096 --layout nt --types i8:i32
echo "gemm checks done at $SECONDS s"
source docs/perf/peers.sh
echo "peers done at $SECONDS s"
timeout 330 $B check --quick --types f16:f32 > $OUT/check.txt 2>&1; tail -2 $OUT/check.txt
echo "check: $(grep -c ': ok$' $OUT/check.txt) ok; not ok: $(grep '^\[' $OUT/check.txt | grep -vc ': ok$')"; grep '^\[' $OUT/check.txt | grep -v ': ok$' | head -5
echo "all done at $SECONDS s"
