#!/bin/bash
# (The VK_SGMAT_RECREATE / VK_SGMAT_PRIME switches were in an experiment build only, reverted
# after the call; docs/perf/JOURNAL.md, "ggml-vulkan has it too", says what each did.)
# 34th session, call 2 (issue 48; ran on an H200): call 1 found a pipeline re-created in the same process from
# its own cache data (a cache hit) as slow at first as the cold one. Experiment build:
# VK_SGMAT_RECREATE=3 compiles each pipeline on a second VkDevice of the same GPU first and
# creates the real one from that device's cache data (as a new process would load it); 0 as
# shipped. The same cold layer as call 1, interleaved, three rounds.
B=$PWD/carry/vk-sgmat
export __GL_SHADER_DISK_CACHE=0
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for round in 1 2 3; do
  for mode in 0 3; do
    VK_SGMAT_RECREATE=$mode timeout 150 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1.5 > /tmp/fr.txt 2>&1
    grep -E "first|rror" /tmp/fr.txt | grep -v recreate | sed "s|^|[r$round recreate $mode] |"
    grep recreate /tmp/fr.txt | head -2 | sed "s|^|[r$round] |"
  done
done
echo "all done at $SECONDS s"
