#!/bin/bash
# (The VK_SGMAT_RECREATE / VK_SGMAT_PRIME switches were in an experiment build only, reverted
# after the call; docs/perf/JOURNAL.md, "ggml-vulkan has it too", says what each did.)
# 34th session, call 1 (ran on an H100). (A) Issue 49: the self-test's and fused/grouped/small-device test
# binaries under the validation layer (fused and grouped kernels now tested on their own
# pipelines). (B) What the self-test costs a first process now for a fused and a grouped GEMM
# (h100-33-5 measured +2.5 s for bias + GELU through the plain twin). (C) Issue 48: does a
# pipeline re-created right after its cold compile run at full speed from its first dispatch?
# Experiment build: VK_SGMAT_RECREATE=1 re-creates each pipeline from its cache's serialized
# data in a fresh VkPipelineCache (as a second process loads our file), =2 from the same cache
# object; 0 as shipped. (D) ggml-vulkan cold and warm with no warm-up: its single_submit_us (runs
# 2-4 of a fresh pipeline) against its steady us/gemm.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
t=carry/tests
layer=/tmp/vk-sgmat-layer
mkdir -p $layer && cp $t/layer/*.json $layer/ && xz -dc $t/layer/libVkLayer_khronos_validation.so.xz > $layer/libVkLayer_khronos_validation.so
for bin in self_test fused grouped small_devices; do
  start=$SECONDS
  XDG_CACHE_HOME=/tmp/xdg-tests LD_LIBRARY_PATH=$PWD/$t/loader VK_LAYER_PATH=$layer timeout 200 $t/bin/$bin --skip spirv_val > /tmp/test.log 2>&1
  echo "$bin tests: rc $?, $((SECONDS - start)) s, $(grep -E '^test result' /tmp/test.log | tail -1)"
  grep -E "panicked|Check|left|right|FAILED" /tmp/test.log | head -6
done
export __GL_SHADER_DISK_CACHE=0
TIMEFORMAT="wall %R s"
for run in "512 4096 4096 --epilogue bias-col,gelu" "1024 4096 4096 --groups 512,256,256"; do
  for st in on off on off; do
    flag=""; [ $st = off ] && flag=--no-self-test
    d=/tmp/xdg-$st-$RANDOM
    { time XDG_CACHE_HOME=$d timeout 120 $B gemm $run --types f16:f32 --layout nt --repeat 5 $flag > /tmp/out.txt 2>&1; } 2>&1 | sed "s|^|[$run, self-test $st] |"
    grep -E "self-test|PASS|check ok|FAIL|rror" /tmp/out.txt | cut -c1-220 | sed "s|^|    |"
  done
done
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for round in 1 2; do
  for mode in 0 1 2; do
    VK_SGMAT_RECREATE=$mode timeout 150 $B bench --no-pipeline-cache --types f16:f16 --layout nt --shapes $S --first-runs 1.5 > /tmp/fr.txt 2>&1
    grep -E "first|rror" /tmp/fr.txt | grep -v recreate | sed "s|^|[r$round recreate $mode] |"
    grep recreate /tmp/fr.txt | head -4 | sed "s|^|[r$round] |"
  done
done
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
G=/tmp/g/ggml/mm_bench
GS="f16:22016x512x4096 f16:4096x512x11008 f16:12288x512x4096"
for i in 1 2; do
  __GL_SHADER_DISK_CACHE=0 timeout 100 $G --warmup 0 --min-time 0.3 $GS 2>&1 | grep "^ggml-vulkan" | sed "s|^|[ggml cold $i] |"
done
unset __GL_SHADER_DISK_CACHE
export __GL_SHADER_DISK_CACHE_PATH=/tmp/glcache-ggml; mkdir -p $__GL_SHADER_DISK_CACHE_PATH
for i in populate warm; do
  timeout 100 $G --warmup 0 --min-time 0.3 $GS 2>&1 | grep "^ggml-vulkan" | sed "s|^|[ggml driver cache $i] |"
done
echo "all done at $SECONDS s"
