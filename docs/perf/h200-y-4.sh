#!/bin/bash
# Issue 13, 2026-11-26 (25th session), call 4: the final binary (the `nt` leads on the grouped
# walk over 3072^2; `nt` no longer copied into `tn` order). (1) Correctness: `gemm` checked
# against the f64 reference on the new paths, `check --quick` (its extras now include the
# grouped leads). (2) The peers table as in h200-y-3.sh.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 4096 4096 4608 --layout nt --alpha 2 --beta 0.5
g 8192 4096 4608 --layout nt --beta -1
g 11008 4096 4096 --layout nt --alpha -1
g 3073 3075 3072 --layout nt --beta 1
g 8192 8192 8192 --layout nt --types bf16:f32
echo "gemm checks done at $SECONDS s"
timeout 120 $B check --quick --types f16:f32 > /tmp/check.txt 2>&1; tail -2 /tmp/check.txt
echo "check: $(grep -c ': ok$' /tmp/check.txt) ok; not ok: $(grep '^\[' /tmp/check.txt | grep -vc ': ok$')"; grep '^\[' /tmp/check.txt | grep -v ': ok$' | head -5
grep '_g8_rf_ct\]' /tmp/check.txt | grep 'wg_t256' | tail -2
echo "check done at $SECONDS s"
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 60 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for L in nn nt tn tt; do timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096 --layout $L --reps 3 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for how in "own" "stream --stream"; do read name flags <<< "$how"
  for L in nn nt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16|^device' | sed "s|^|$name |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|$name |"
  done
  timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout tn --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$name |"
  timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout tt --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$name |"
done
timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 20 --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|own |"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
echo "all done at $SECONDS s"
