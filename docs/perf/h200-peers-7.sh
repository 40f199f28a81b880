#!/bin/bash
# Issue 13, 2026-11-26 (24th session), call 7: the peers table with this session's binary (no
# kernel change since h200-peers-6), each of our points timed two ways: by its own timestamps
# (the default) and per GEMM in a stream of back-to-back runs (`bench --stream`, ggml-vulkan's
# way), `nt` also with C column-major as ggml writes it; SM clock and power logged.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/smi-7.csv &   # kept as docs/perf/h200-peers-7-smi.csv
SMI=$!
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 60 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for L in nn nt; do timeout 60 $B bench --types f16:f32 --shapes $S --layout $L --reps 3 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for how in "own" "stream --stream" "streamCt --stream --c-layout t"; do read name flags <<< "$how"
  for L in nn nt; do
    [ $name = streamCt ] && [ $L = nn ] && continue
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16|^device' | sed "s|^|$name |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|$name |"
  done
done
timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 20 --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|own |"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
kill $SMI
echo "all done at $SECONDS s"
