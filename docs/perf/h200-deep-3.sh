#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 11: the final binary (sixteen-step leads, right
# operand first). (1) Correctness of the new defaults: `gemm` runs checked against the f64
# reference on edge shapes in every layout, alpha/beta, C column-major, int8, bf16, a batch and a
# fused epilogue; `vk-sgmat check --quick` (its extras include every preferred scheme) for as long
# as the call allows. (2) The peers table: mm_bench (coopmat2), cuBLAS torch.mm(out_dtype=float32)
# and int8 TN, `bench` in nn, nt, tn and tt after a priming process, each point by its own
# timestamps and as a stream (ggml's method). SM clock and power logged.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/smi-deep-3.csv &   # kept as docs/perf/h200-deep-3-smi.csv
SMI=$!
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|PASS|FAIL|error" | sed "s|^|[$*] |"; }
g 4097 4095 4096 --layout nt --alpha 2 --beta 0.5
g 2049 1023 2048 --layout nt --c-layout t
g 3000 2000 3072 --layout nt --beta 1
g 4099 4097 4096 --layout tn --beta 1
g 4096 4096 2048 --layout nn --types bf16:f32
g 2049 3001 4096 --layout tt --alpha -2 --beta 0.5
g 4096 4096 4096 --layout nt --types i8:i32
g 4097 4095 6144 --layout nt --types i8:i32 --beta 2
g 4096 4096 4096 --layout tn --types u8:u32 --alpha 3
g 4096 4096 4096 --layout nt --types f16:f16
g 3000 4096 4096 --layout nt --epilogue bias-col,gelu
g 1031 2053 2048 --layout nt --batch 3
echo "gemm checks done at $SECONDS s"
timeout 100 $B check --quick --types f16:f32,bf16:f32 2>&1 | grep -E "FAIL|passed|failed" | tail -5
echo "check done at $SECONDS s"
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 60 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for L in nn nt tn tt; do timeout 60 $B bench --types f16:f32 --shapes $S --layout $L --reps 3 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for how in "own" "stream --stream"; do read name flags <<< "$how"
  for L in nn nt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16|^device' | sed "s|^|$name |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|$name |"
  done
  for L in tn tt; do
    timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$name |"
  done
done
for L in nt nn; do timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout $L --reps 20 --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|own |"; done
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
kill $SMI
echo "all done at $SECONDS s"
