#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 8: the workgroup-scope kernel's single K steps
# after its loop iterations (K not a whole number of iterations: short K, K = 3000, 4608, ...)
# counted from 0 over operands moved to the loop's end, instead of from that K (call 6: a
# loop started at a run-time K ran 3.2x slower). VK_SGMAT_STEP_FORM=old: the earlier form
# (an experiment switch). (1) `gemm` against the f64 reference; (2) `bench` new against old,
# in place and copied, by own timestamps.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
g() { timeout 100 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror|anic" | sed "s|^|[$*] |"; }
g 4097 4095 3001 --layout nt --relayout off --alpha 2 --beta 0.5
g 4096 4096 4608 --layout nt --beta 1
g 4096 4096 256 --layout nn
g 4096 4096 3000 --layout nt --types bf16:f32 --c-layout t
g 4096 4096 4000 --layout nt --types i8:i32
g 4096 4096 1000 --layout tn --types f16:f16
echo "gemm checks done at $SECONDS s"
S=4096x4096x256,4096x4096x1000,4096x4096x3000,4096x4096x4608,8192x8192x1024
run() { env $3 timeout 100 $B bench --types ${T:-f16:f32} --shapes $S --layout $2 --relayout $4 --reps ${R:-20} 2>&1 | grep -E '^(f16|i8)' | sed "s|^|$1 $2 |"; }
for e in x=1 VK_SGMAT_STEP_FORM=old; do for L in nn nt; do for r in auto off; do R=2 run prime $L $e $r > /dev/null; done; done; done
echo "primed at $SECONDS s"
for pass in 1 2; do for L in nn nt; do for r in auto off; do
  run "p$pass new-$r" $L x=1 $r; run "p$pass old-$r" $L VK_SGMAT_STEP_FORM=old $r
done; done; done
S=4096x4096x4000,4096x4096x1000 T=i8:i32 run "i8 new" nt x=1 auto
S=4096x4096x4000,4096x4096x1000 T=i8:i32 run "i8 old" nt VK_SGMAT_STEP_FORM=old auto
echo "all done at $SECONDS s"
