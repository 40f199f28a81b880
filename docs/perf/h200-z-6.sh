#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 6: the final binary: `nt` copies both operands where
# its leads do not take K (plan::NT_RELAYOUT), `nn` in place up to 2048^2 on the grouped walk
# and up to 4096^2 on the 128x256 tile (tiling::preferred_nn_in_place_schemes, no copy).
# (1) The new paths against the f64 reference. (2) The peers table as in h200-y-4.sh.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 4097 4095 4096 --layout nn --alpha 2 --beta 0.5
g 4096 4096 2048 --layout nn --types bf16:f32 --c-layout t
g 4096 4096 3000 --layout nn --beta 1
g 2048 8192 4096 --layout nn --alpha -1
echo "gemm checks done at $SECONDS s"
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 60 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for L in nn nt tn tt; do timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096,4096x4096x256 --layout $L --reps 3 > /dev/null 2>&1; done
echo "primed at $SECONDS s"
for how in "own" "stream --stream"; do read name flags <<< "$how"
  for L in nn nt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16|^device' | sed "s|^|$name |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|$name |"
  done
  for L in tn tt; do
    timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$name |"
  done
done
timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 20 --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|own |"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 f16:4096x4096x256 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
echo "all done at $SECONDS s"
