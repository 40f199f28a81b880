#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 4: the final binary: `nt` copies both operands where
# its leads do not take K (plan::NT_RELAYOUT), `nn` in place up to 2048^2 on the grouped walk.
# (1) The new paths against the f64 reference. (2) f16 -> f16 `nt` in place against copied
# (the rule was measured for f32 results). (3) `nn` 4096^3: its copy and `tn` against in place
# on the 128x256 tile that `tune` put at 292 (perf/h200-z-3.txt). (4) The peers table as in
# h200-y-4.sh.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 4096 4096 3000 --layout nt --alpha 2 --beta 0.5
g 2048 2048 2048 --layout nn --alpha -1 --beta 1
g 2049 2047 2048 --layout nn --c-layout t
g 2048 2048 2048 --layout nn --types bf16:f32
g 4096 4096 256 --layout nt --types f16:f16
echo "gemm checks done at $SECONDS s"
for R in off on; do timeout 60 $B bench --types f16:f16 --shapes 4096x4096x256,4096x4096x1024 --layout nt --relayout $R --reps 2 --warm 0 > /dev/null 2>&1; done
timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8_rf_ct --reps 2 --warm 0 > /dev/null 2>&1
for pass in 1 2; do
  for R in off on; do timeout 60 $B bench --types f16:f16 --shapes 4096x4096x256,4096x4096x1024 --layout nt --relayout $R --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass nt-$R |"; done
  for how in "own" "stream --stream"; do read name flags <<< "$how"
    timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --reps 20 $flags 2>&1 | grep -E '^f16' | sed "s|^|p$pass $name nn-default |"
    timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout nn --relayout off --scheme wg_t256_fr8x16_k64_u16_a0_g8_rf_ct --reps 20 $flags 2>&1 | grep -E '^f16' | sed "s|^|p$pass $name nn-inplace |"
  done
done
echo "experiments done at $SECONDS s"
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
