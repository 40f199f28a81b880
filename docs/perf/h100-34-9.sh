#!/bin/bash
# 34th session, call 9 (issue 46; ran on an H100): the mid-grid rule after call 8 (h200-34-8): from 512 rows,
# grids under two waves of 128x128 tiles take the 256x128 tile (two K slices under one wave,
# unsplit up to two). (1) `gemm` against the f64 reference on the new choices (odd sizes,
# alpha/beta, bf16). (2) The 512-token GEMMs it changes, as streams, against ggml-vulkan from
# this call.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 3 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 515 4000 4097 --layout nt --alpha 2 --beta 0.5
g 600 6000 3000 --layout nt --beta 1
g 512 4096 14336 --layout nt --types bf16:f32
echo "gemm checks done at $SECONDS s"
S=512x4096x4096,512x4096x11008,512x4096x14336,512x6144x4096
G=""; for s in ${S//,/ }; do IFS=x read t n k <<< "$s"; G="$G f16:${n}x${t}x${k}"; done
tar xJf carry/ggml.tar.xz -C /tmp
(cd /tmp/ggml && ./mm_bench --min-time 0.3 $G 2>&1) | python3 carry/scripts/ggml_to_jsonl.py --tokens-first > /tmp/ggml.jsonl
timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --stream --reps 30 --peer /tmp/ggml.jsonl 2>&1 | grep -E "^f16|rror|anic"
echo "all done at $SECONDS s"
