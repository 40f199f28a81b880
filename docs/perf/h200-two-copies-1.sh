#!/bin/bash
# Issue 13, 2026-11-26, call 6: `nt` with two copies where one side is long (M and N at least
# 4096, one of them at least 8192, K at least 4096), against the kernel in place
# (--relayout off) and the previous rule (vk-sgmat-prev: two copies only where no dimension is
# under 8192); ggml-vulkan beside; then the new default against the reference.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
timeout 30 $B bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
S=4096x8192x4096,4096x11008x4096,11008x4096x4096,8192x8192x4096,4096x4096x4096,8192x8192x8192
(cd /tmp/ggml && timeout 100 ./mm_bench --min-time 0.4 $(echo $S | sed 's/\([0-9x]*\)/f16:\1/g; s/,/ /g') bf16:4096x11008x4096 2>&1 | grep '^ggml-vulkan') | tee /tmp/ggml.txt
python3 carry/ggml_to_jsonl.py < /tmp/ggml.txt > /tmp/ggml.jsonl
for pass in prime measure; do
  R=3; [ $pass = measure ] && R=20
  timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --reps $R --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$pass auto |"
  timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --relayout off --reps $R --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$pass off |"
  timeout 100 carry/vk-sgmat-prev bench --types f16:f32 --shapes $S --layout nt --reps $R --peer /tmp/ggml.jsonl 2>&1 | grep -E '^f16' | sed "s|^|$pass prev |"
  timeout 60 $B bench --types bf16:f32 --shapes 4096x11008x4096 --layout nt --reps $R --peer /tmp/ggml.jsonl 2>&1 | grep -E '^bf16' | sed "s|^|$pass auto |"
  echo "$pass done at $SECONDS s"
done
echo "== two copies against the reference, every row"
for a in "4097 11001 4096 --layout nt --beta 0.5 --c-layout t" "11008 4096 4100 --layout nt --types bf16:f32" \
         "4096 8192 4096 --layout nt --types f16:f16 --alpha 2"; do
  timeout 90 $B gemm $a --repeat 3 2>&1 | grep -E "^gemm|verify|error|Error"
done
echo "all done at $SECONDS s"
