#!/bin/bash
# (The VK_SGMAT_RECREATE / VK_SGMAT_PRIME switches were in an experiment build only, reverted
# after the call; docs/perf/JOURNAL.md, "ggml-vulkan has it too", says what each did.)
# 34th session, call 3 (issue 48; ran on an H100): the 31st session ended the slow start of freshly compiled
# pipelines by running each kernel 256 times on 16 rows first, at the cost of about a
# millisecond a run. Experiment build: VK_SGMAT_PRIME=N makes `Context::prepare` run each of
# the plan's dispatches N times on a grid of ONE workgroup (same pipeline, buffers and push
# constants), in one submission, and print what that cost. Does a launch count end it cheaply?
# The same cold layer as calls 1 and 2, interleaved, two rounds.
B=$PWD/carry/vk-sgmat
export __GL_SHADER_DISK_CACHE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for round in 1 2; do
  for prime in 0 64 256 1024; do
    VK_SGMAT_PRIME=$prime timeout 150 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1.0 > /tmp/fr.txt 2>&1
    grep -E "first|rror|primed" /tmp/fr.txt | sed "s|^|[r$round prime $prime] |"
  done
done
echo "all done at $SECONDS s"
