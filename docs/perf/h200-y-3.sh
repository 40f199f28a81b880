#!/bin/bash
# Issue 13, 2026-11-26 (25th session), call 3: the `nt` leads on the grouped walk over grids
# larger than 2048^2 (h200-y-2). (1) Correctness of the new defaults: `gemm` checked against
# the f64 reference. (2) In place (`--relayout off`) against the two copies the router still
# makes for `nt` where one side is long (`auto`). (3) The threshold and int8: `tune` grouped
# against rows at 3072^3 and 4096x2048x4096, i8 `nt` 4096^3. (4) The peers table as in
# h200-deep-5.sh: mm_bench (coopmat2), cuBLAS torch.mm(out_dtype=float32) and int8 TN, `bench`
# after a priming process, each point by its own timestamps and as a stream.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 4097 4095 4096 --layout nt --alpha 2 --beta 0.5
g 4096 11008 4096 --layout nt --relayout off
g 3000 5000 2048 --layout nt --beta 1
g 4096 4096 2048 --layout nt --c-layout t
g 4096 4096 4096 --layout nt --types bf16:f32
g 8192 4096 4608 --layout nt --beta -1
echo "gemm checks done at $SECONDS s"
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,4096x11008x4096,16x4096x4096,4096x4096x256
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x4096x4096 bf16:8192x8192x8192 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
timeout 150 python3 carry/cublas_reference.py --types f16:f32,bf16:f32 --shapes $S --f32-out --layout nt > /tmp/cublas.jsonl 2> /dev/null
timeout 60 python3 carry/cublas_reference.py --types i8:i32 --shapes 4096x4096x4096 --layout nt > /tmp/cublas-i8.jsonl 2> /dev/null; cat /tmp/cublas-i8.jsonl
for L in nn nt tn tt; do timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096 --layout $L --reps 3 > /dev/null 2>&1; done
L2=4096x11008x4096,8192x8192x8192,11008x4096x4096,8192x8192x4096
timeout 60 $B bench --types f16:f32 --shapes $L2 --layout nt --reps 3 --relayout off > /dev/null 2>&1
echo "primed at $SECONDS s"
for how in "own" "stream --stream"; do read name flags <<< "$how"
  for L in nn nt; do
    timeout 100 $B bench --types f16:f32 --shapes $S --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16|^device' | sed "s|^|$name |"
    timeout 60 $B bench --types bf16:f32 --shapes 4096x4096x4096,8192x8192x8192 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|$name |"
  done
  for L in tn tt; do
    timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096 --layout $L --reps 20 $flags --cublas /tmp/cublas.jsonl --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$name |"
  done
  for r in auto off; do
    timeout 100 $B bench --types f16:f32 --shapes $L2 --layout nt --reps 10 $flags --relayout $r --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$name relayout-$r |"
  done
done
timeout 60 $B bench --types i8:i32 --shapes 4096x4096x4096 --layout nt --reps 20 --cublas /tmp/cublas-i8.jsonl 2>&1 | grep -E '^i8' | sed "s|^|own |"
echo "bench done at $SECONDS s"
t() { timeout 100 $B tune "$@" --relayout off ${W:---warm 1 --reps 20} 2>&1 | grep -E "^16x16|^16x16x32|rror" | sed "s|^|tune $1x$2x$3 $5 |"; }
F=wg_t256_fr16x8_k64_u16_a0_rf_ct,wg_t256_fr16x8_k64_u16_a0_g8_rf_ct
for s in "3072 3072 3072" "4096 2048 4096" "2048 4096 4096"; do W="--warm 0 --reps 1" t $s --layout nt --filter $F > /dev/null; t $s --layout nt --filter $F; done
FI=wg_t256_fr16x8_k128_u16_a0_rf_ct,wg_t256_fr16x8_k128_u16_a0_g8_rf_ct
W="--warm 0 --reps 1" t 4096 4096 4096 --layout nt --types i8:i32 --filter $FI > /dev/null
t 4096 4096 4096 --layout nt --types i8:i32 --filter $FI
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:2048x2048x2048 f16:4096x4096x4096 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
echo "all done at $SECONDS s"
