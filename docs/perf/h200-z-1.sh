#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 1: short K in `nt`. At K = 256 `nn` ran 163.8 TFLOP/s
# where `nt` ran 153.4 on the same 128x128 tile (perf/h200-y-4.txt), and an earlier call put a
# copy of a 4096x256 operand at about 1.4 us. So: one copy of B (`nt` -> `nn`) at short K.
# The measurement build copies B of `nt` where K <= 1024, M >= 2048, N >= 1024 (`--relayout
# auto`); `--relayout off` reads in place, `on` copies both (-> `tn`). Every layout in place
# beside it, ggml-vulkan at 4096x4096x256 in the same call, and the new path checked against
# the f64 reference.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|dispatch" | sed "s|^|[$*] |"; }
g 4096 4096 256 --layout nt
g 4097 4095 255 --layout nt --beta 0.5 --alpha 2
g 2049 4099 512 --layout nt --c-layout t --beta 1
g 4096 4096 256 --layout nt --types bf16:f32
echo "gemm checks done at $SECONDS s"
SK=4096x4096x128,4096x4096x256,4096x4096x512,4096x4096x1024,2048x4096x256,4096x2048x256,2048x2048x256,8192x8192x256,4096x11008x256,11008x4096x256
for L in nn nt tn tt; do timeout 60 $B bench --types f16:f32 --shapes $SK --layout $L --reps 2 --warm 0 > /dev/null 2>&1; done
timeout 60 $B bench --types f16:f32 --shapes $SK --layout nt --relayout on --reps 2 --warm 0 > /dev/null 2>&1
echo "primed at $SECONDS s"
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:4096x4096x256 f16:8192x8192x256 f16:4096x11008x256 bf16:4096x4096x256 2>&1 | grep '^ggml-vulkan')
for pass in 1 2; do
  for run in "nt off" "nt auto" "nt on" "nn off" "tn off" "tt off"; do read L R <<< "$run"
    timeout 100 $B bench --types f16:f32 --shapes $SK --layout $L --relayout $R --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass $L-$R |"
  done
  for R in off auto; do timeout 30 $B bench --types bf16:f32 --shapes 4096x4096x256 --layout nt --relayout $R --reps 20 2>&1 | grep -E '^bf16' | sed "s|^|p$pass nt-$R |"; done
done
timeout 30 $B bench --types f16:f32 --shapes 4096x4096x256,8192x8192x256 --layout nt --reps 20 --trace 2>&1 | grep -vE '^\s*$' | tail -8
(cd /tmp/ggml && timeout 60 ./mm_bench --min-time 0.4 f16:4096x4096x256 2>&1 | grep '^ggml-vulkan' | sed 's/^/again /')
echo "all done at $SECONDS s"
