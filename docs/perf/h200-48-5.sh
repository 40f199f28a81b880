#!/bin/bash
# 48th session, call 5. The mid-grid table's new row (one tile row of 128 over one to two waves:
# the 128x256 tile, from h200-48-4's forced runs) as the planner chooses it
# (carry/vk-sgmat-after) against the binary before (carry/vk-sgmat), interleaved twice, on the
# Llama-7B and Llama-3-8B layers' GEMMs at 128 tokens (f16 -> f32, nt); the shapes whose
# choice it leaves alone as controls; ggml-vulkan beside. Second of two processes.
source docs/perf/lib.sh
AFTER=$PWD/carry/vk-sgmat-after
gpu_line
ggml --min-time 0.25 f16:22016x128x4096 f16:28672x128x4096 f16:12288x128x4096
S=128x22016x4096,128x28672x4096,128x12288x4096,128x4096x4096,512x4096x4096,22016x128x4096
for round in 1 2; do
  bench2 "before r$round" $B --types f16:f32 --layout nt --shapes $S
  bench2 "after r$round" $AFTER --types f16:f32 --layout nt --shapes $S
done
bench2 "after f16 C" $AFTER --types f16:f16 --layout nt --shapes 128x22016x4096,128x28672x4096
bench2 "before f16 C" $B --types f16:f16 --layout nt --shapes 128x22016x4096,128x28672x4096
timeout 60 $AFTER gemm 128 22016 4096 --types f16:f32 --layout nt 2>&1 | grep -E "verify|PASS|FAIL|kernel|rror" | sed "s|^|[gemm after] |"
timeout 60 $AFTER gemm 128 28673 4096 --types f16:f32 --layout nt 2>&1 | grep -E "verify|PASS|FAIL|kernel|rror" | sed "s|^|[gemm after] |"
echo "all done at $SECONDS s"
