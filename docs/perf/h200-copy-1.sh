#!/bin/bash
# vk-sgmat-base: 18cee7c; vk-sgmat-new: the commit that moved the transpose into registers.
# Issue 13: the transposing copy rewritten (8x8 blocks transposed in registers, no shared memory,
# eight loads in flight per invocation) against the shared-memory one, same call: checks, then
# bench of the default plans (copies where they pay), a priming pass first.
O=carry/vk-sgmat-base; N=carry/vk-sgmat-new
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 30 $N bench --shapes 4096x4096x4096 --reps 50 > /dev/null 2>&1   # clocks up
echo "== checks (new binary, copies forced)"
c() { timeout 60 $N gemm "$@" --repeat 1 2>&1 | grep -E "^gemm|PASS|FAIL|rror" | tr '\n' ' ' | sed 's/$/\n/'; }
c 2049 1023 517 --layout nn --relayout on --alpha 2 --beta 0.5
c 2049 1023 517 --layout nt --relayout on --c-layout t
c 2049 1023 517 --layout tt --relayout on --types bf16:f32 --beta 1
c 1 77 3 --layout nt --relayout on
c 300 263 1031 --layout tt --relayout on --types f16:f16
c 2049 1023 517 --layout nt --relayout on --types f32:f32 --mode fast --convert first
c 1031 517 2049 --layout tt --relayout on --types f32:f32
c 4096 4096 4096 --layout nn --types f32:f32
c 4097 4099 4096 --layout tt --beta 1
c 8192 8192 8192 --layout nt
b() { timeout 100 $1 bench --types f16:f32 --shapes 4096x4096x4096,8192x8192x8192,4096x11008x4096 "${@:2}" 2>&1 | grep -v '^\[' | grep -v '^device'; }
for pass in prime measure; do
  R=2; [ $pass = measure ] && R=20
  for L in nn tt nt; do
    for bin in $O $N; do echo "== $pass $bin $L"; b $bin --layout $L --reps $R; done
  done
done
echo "== measure tn"; b $N --layout tn --reps 20
echo "== accurate f32 4096^3 nn"
for bin in $O $N; do echo "== $bin"; timeout 60 $bin bench --types f32:f32 --shapes 4096x4096x4096 --reps 20 2>&1 | grep -v '^\[' | grep -v '^device'; done
