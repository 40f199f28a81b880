#!/bin/bash
# 34th session, call 7 (issue 46; ran on an H100): the mid-grid rule after call 6 (h100-34-6): small grids
# from 128 rows take the 128x128 tile in eight K slices from K = 8192, in four where the 64x64
# tiles would fill a wave alone. (1) `gemm` against the f64 reference on both new choices (odd
# sizes, alpha/beta). (2) The 128-token GEMMs of both layers, as streams, against ggml-vulkan
# from this call.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 3 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 128 3000 9001 --layout nt --alpha 2 --beta 0.5
g 128 6100 4097 --layout nt --beta 1
g 128 4096 14336 --layout nt --types bf16:f32
echo "gemm checks done at $SECONDS s"
S=128x12288x4096,128x4096x4096,128x22016x4096,128x4096x11008,128x6144x4096,128x28672x4096,128x4096x14336
G=""; for s in ${S//,/ }; do IFS=x read t n k <<< "$s"; G="$G f16:${n}x${t}x${k}"; done
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && ./mm_bench --min-time 0.3 $G 2>&1) | python3 carry/scripts/ggml_to_jsonl.py --tokens-first > /tmp/ggml.jsonl
timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --stream --reps 30 --peer /tmp/ggml.jsonl 2>&1 | grep -E "^f16|rror|anic"
echo "all done at $SECONDS s"
