#!/bin/bash
# 34th session, call 5 (issue 46): the mid-grid rule extended from call 4 (h100-34-4):
# tiling::mid_grid_choice now takes the 128x128 tile unsplit for one to two waves of it (from
# 128 rows) and the 64x64 tile unsplit where its own tiles fill a wave. (1) `gemm` against the
# f64 reference on the new choices (odd sizes, alpha/beta, bf16). (2) The 128- and 512-token
# GEMMs of both layers, as streams, against ggml-vulkan and cuBLAS from this call (the shapes of
# h200-29-9).
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 3 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 128 22016 4096 --layout nt
g 255 12000 4097 --layout nt --alpha 2 --beta 0.5
g 128 6144 4096 --layout nt --types bf16:f32 --beta 1
g 512 6144 4096 --layout nt
echo "gemm checks done at $SECONDS s"
S=128x12288x4096,128x4096x4096,128x22016x4096,128x4096x11008,512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008,128x6144x4096,128x28672x4096,128x4096x14336,512x6144x4096,512x28672x4096,512x4096x14336
G=""; for s in ${S//,/ }; do IFS=x read t n k <<< "$s"; G="$G f16:${n}x${t}x${k}"; done
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && ./mm_bench --min-time 0.3 $G 2>&1) | python3 carry/scripts/ggml_to_jsonl.py --tokens-first > /tmp/ggml.jsonl
PYTHONUNBUFFERED=1 timeout 120 python3 carry/scripts/cublas_reference.py --types f16:f32 --layout nt --f32-out --shapes $S > /tmp/cublas.jsonl 2>/dev/null
timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --stream --reps 30 --peer /tmp/ggml.jsonl --cublas /tmp/cublas.jsonl 2>&1 | grep -E "^f16|rror|anic"
cp /tmp/ggml.jsonl $OUT/ggml.jsonl; cp /tmp/cublas.jsonl $OUT/cublas.jsonl
echo "all done at $SECONDS s"
