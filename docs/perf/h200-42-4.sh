#!/bin/bash
# 42nd session, call 4 (issue 46): the 128- and 512-token GEMMs of the Llama-7B and Llama-3-8B
# layers on the H200 with the binary of this session, as streams, against ggml-vulkan and cuBLAS
# from this call: the H200 table had been measured before the 34th session's later steps
# (timed on an H100 only: small grids in K slices, the 256x128 tile from 512 rows). The same
# script as h200-34-5 otherwise, its f64 checks first.
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
# The first process creates the pipelines (slow at first on this driver); the second is timed.
timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --stream --reps 30 > /dev/null 2>&1
timeout 200 $B bench --types f16:f32 --layout nt --shapes $S --stream --reps 30 --peer /tmp/ggml.jsonl --cublas /tmp/cublas.jsonl 2>&1 | grep -E "^f16|rror|anic"
cp /tmp/ggml.jsonl $OUT/ggml.jsonl; cp /tmp/cublas.jsonl $OUT/cublas.jsonl
echo "all done at $SECONDS s"
