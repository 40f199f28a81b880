#!/bin/bash
# Issue 13, 2026-11-26 (27th session), call 6: call 5 put the stream-K slowness in the sharing
# workgroups' parts (the one-tile-each workgroups alone ran at full speed; no sync changed
# nothing). Two suspects, each timed with the sharing workgroups doing one whole tile each
# (wrong sums on purpose; timing only): VK_SGMAT_SK_FORM=compact0 (tile first + s, K from a
# constant 0: a compact third wave, the baseline), =tileonly (the tile their run starts in,
# spread over the shared region as stream-K's runs are: L2 footprint), =compactdyn (tile first
# + s, K from a run-time 0: the loop's start unknown to the compiler).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=4096x4096x4096,4096x4096x2048
run() { name=$1; shift; env "$@" timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --stream-k on --reps ${R:-20} 2>&1 | grep -E '^f16' | sed "s|^|$name |"; }
for e in compact0 tileonly compactdyn dponly; do R=2 run prime VK_SGMAT_SK_FORM=$e > /dev/null; done
echo "primed at $SECONDS s"
for pass in 1 2; do
  timeout 100 $B bench --types f16:f32 --shapes $S --layout nt --stream-k off --reps 20 2>&1 | grep -E '^f16' | sed "s|^|p$pass off |"
  for e in dponly compact0 tileonly compactdyn; do run "p$pass $e" VK_SGMAT_SK_FORM=$e; done
done
echo "all done at $SECONDS s"
