#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 8: the peers table again with the session's final
# binary (the same as call 5's), a second sample of the call-to-call spread; then f16 -> f16
# at 4096^3 and 8192^3 in `nn` and `nt` against cuBLAS's f16 output (target 2's 0.65).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
source docs/perf/peers.sh
echo "peers done at $SECONDS s"
timeout 100 python3 carry/cublas_reference.py --types f16:f16 --shapes 4096x4096x4096,8192x8192x8192 --layout nt > /tmp/cublas-f16.jsonl 2> /dev/null
timeout 100 python3 carry/cublas_reference.py --types f16:f16 --shapes 4096x4096x4096,8192x8192x8192 --layout nn >> /tmp/cublas-f16.jsonl 2> /dev/null; cat /tmp/cublas-f16.jsonl
for L in nn nt; do
  timeout 100 $B bench --types f16:f16 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 --cublas /tmp/cublas-f16.jsonl 2>&1 | grep -E '^f16' | sed "s|^|own |"
done
echo "all done at $SECONDS s"
