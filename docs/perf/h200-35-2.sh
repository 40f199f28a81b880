#!/bin/bash
# 35th session, call 2. Issue 47: three builds of the 8-bit-activation decode kernel in one call:
# x8a (call 1's binary), aligned (block formats of a multiple of 4 bytes read words without
# the funnel; the commit after call 1) and the same with the sums reduced through subgroup
# adds and one barrier instead of a seven-step tree over shared memory (experiment switch
# VK_SGMAT_SGREDUCE=1 in the carried build only), beside ggml-vulkan; the switch on dense f16
# decode too. Issue 46: the MoE layer and attention bmm against torch, not measured since the
# 24th-25th sessions.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/old/vk-sgmat-x8a
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
GS=""
for q in q4_K q6_K q8_0 q4_0; do GS="$GS $q:22016x1x4096 $q:22016x8x4096"; done
timeout 100 $G --min-time 0.5 $GS f16:22016x1x4096 f16:22016x8x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=1x22016x4096,1x14336x4096,8x22016x4096
run() { # label binary env args
  local label=$1 bin=$2 env=$3; shift 3
  for pass in 1 2; do
    env $env timeout 90 $bin bench "$@" --stream --reps 50 --warm 0.5 --shapes $S > /tmp/b.txt 2>&1
    [ $pass = 2 ] && grep -E "weights|matrix-vector|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$label] |"
  done
}
for round in 1 2; do
  for q in q4_K q6_K q8_0 q4_0; do
    run "r$round x8a $q" $OLD X=0 --types f16:f32 --weights $q
    run "r$round aligned $q" $B X=0 --types f16:f32 --weights $q
    run "r$round sgreduce $q" $B VK_SGMAT_SGREDUCE=1 --types f16:f32 --weights $q
  done
done
run "dense tree" $B X=0 --types f16:f32 --layout nt
run "dense sgreduce" $B VK_SGMAT_SGREDUCE=1 --types f16:f32 --layout nt
VK_SGMAT_SGREDUCE=1 timeout 60 $B gemm 8 4099 4096 --weights q6_K --types f16:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror" | sed "s|^|[check sgreduce] |"
VK_SGMAT_SGREDUCE=1 timeout 60 $B gemm 3 4099 4096 --types f16:f32 --layout nt --repeat 3 2>&1 | grep -E "check|FAIL|rror" | head -3 | sed "s|^|[check sgreduce dense] |"
echo "== MoE and bmm (issue 46)"
timeout 150 python3 carry/scripts/grouped_reference.py --types f16:f32 2>&1 | grep '^{' | sed "s|^|[torch grouped] |"
timeout 150 python3 carry/scripts/bmm_reference.py --batch 32 --shapes 1024x1024x128 2>&1 | grep '^{' | sed "s|^|[torch bmm] |"
for pass in prime measure; do
  N=3; [ $pass = measure ] && N=20
  timeout 120 $B bench --groups 1200,900,700,500,400,200,60,36 --types f16:f32 --layout nn --reps $N 2>&1 | grep -E "grouped|rror" | sed "s|^|[$pass grouped] |"
  timeout 120 $B bench --batch 32 --types f16:f32 --layout nn --shapes 1024x1024x128 --reps $N 2>&1 | grep -E "1024x1024x128|rror" | sed "s|^|[$pass bmm f32 C] |"
  timeout 120 $B bench --batch 32 --types f16:f32 --out f16 --layout nn --shapes 1024x1024x128 --reps $N 2>&1 | grep -E "1024x1024x128|rror" | sed "s|^|[$pass bmm f16 C] |"
done
echo "all done at $SECONDS s"
