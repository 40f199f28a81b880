#!/bin/bash
# 48th session, call 2. Why the weights-first dense copy (C = W X^T, `bench --weights-first
# --matrix-vector off`) ran a 256x128 tile at 9 to 64 columns in h200-48-1, where the planner's
# table names smaller tiles on the H200's facts: each dispatch timed (`--trace`), with the
# driver self-test on and off, beside the dense f16 GEMM of the same shapes in both
# orientations. Second of two processes; the self-test's verdict file listed before and after.
source docs/perf/lib.sh
gpu_line
verdicts() { find ${XDG_CACHE_HOME:-$HOME/.cache} -path "*vk-sgmat*" -name "*.verdicts" -exec sh -c 'echo "== $1"; grep -ci failed "$1"; grep -i failed "$1" | head -5' _ {} \; 2>/dev/null; }
verdicts
for st in "" "--no-self-test"; do
  for pass in 1 2; do
    timeout 90 $B bench --types f16:f32 --weights q4_K --weights-first --shapes 22016x64x4096,22016x9x4096,22016x256x4096 \
      --matrix-vector off --trace --reps 20 --warm 0.3 $st > /tmp/t.txt 2>&1
  done
  grep -E "^steps|weights first|rror|anic" /tmp/t.txt | sed "s|^|[wf copy $st] |"
  for pass in 1 2; do
    timeout 90 $B bench --types f16:f32 --layout nt --shapes 22016x64x4096,64x22016x4096,22016x9x4096 \
      --trace --reps 20 --warm 0.3 $st > /tmp/t.txt 2>&1
  done
  grep -E "^steps|nt |rror|anic" /tmp/t.txt | grep -v "^\[" | sed "s|^|[dense $st] |"
done
verdicts
echo "all done at $SECONDS s"
