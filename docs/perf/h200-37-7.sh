#!/bin/bash
# 37th session, call 7. The session's build (2 MiB-aligned device buffers; grouped GEMMs whose
# rows as one GEMM took the K-contiguous lead now take the default order's 128x128 tile) beside
# the binary before it (carry/vk-sgmat-old, ef9b082, whose pipelines the first passes cached):
# quantized prefill beside ggml-vulkan's mul_mm, the MoE layer, quantized experts.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
timeout 100 /tmp/g/ggml/mm_bench --min-time 0.5 f16:22016x512x4096 q4_K:22016x512x4096 q8_0:22016x512x4096 q4_K:22016x2048x4096 q8_0:22016x2048x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=512x22016x4096,2048x22016x4096
run() { # label passes args
  local label=$1 passes=$2; shift 2
  for pass in $(seq $passes); do
    timeout 100 $B bench "$@" --stream --reps 30 --warm 0.5 > /tmp/b.txt 2>&1
    [ $pass = $passes ] && grep -E "[0-9]x[0-9].*(wg_|sg|gemv)|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
run "f16 weights" 2 --types f16:f32 --layout nt --shapes $S
for q in q4_K q8_0; do
  run "$q" 2 --types f16:f32 --weights $q --shapes $S
  B=$OLD run "$q before" 1 --types f16:f32 --weights $q --shapes $S
done
G8=1200,900,700,500,400,200,60,36
moe() { # label binary passes args
  local label=$1 b=$2 passes=$3; shift 3
  for pass in $(seq $passes); do
    timeout 100 $b bench --groups $G8 --types f16:f32 --reps 20 "$@" > /tmp/b.txt 2>&1
    [ $pass = $passes ] && grep -E "grouped|rror|anic" /tmp/b.txt | head -3 | sed "s|^|[$label] |"
  done
}
moe "moe nt" $B 2 --layout nt
moe "moe nt before" $OLD 1 --layout nt
moe "moe nn" $B 1 --layout nn
ex() { # label binary passes
  for pass in $(seq $3); do
    timeout 120 $2 gemm 3996 14336 4096 --weights q4_K --groups $G8 --types f16:f32 --repeat 20 > /tmp/q.txt 2>&1
    [ $pass = $3 ] && grep -E "median|rror|anic|verified" /tmp/q.txt | head -4 | cut -c1-200 | sed "s|^|[$1] |"
  done
}
ex "experts q4_K" $B 2
ex "experts q4_K before" $OLD 1
echo "all done at $SECONDS s"
