#!/bin/bash
# 39th session, call 2: the q4_K routings call 1 had no time left for (tiles of 1, 2, 4 and 8
# rows of A per workgroup in grouped decode with the sizes on the device).
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for run in 4,0,0,4,0,0,0,0:1 4,0,0,4,0,0,0,0:2 4,0,0,4,0,0,0,0:4 4,0,0,4,0,0,0,0:8 2,2,2,2,0,0,0,0:8 8,0,0,0,0,0,0,0:2 8,0,0,0,0,0,0,0:8; do
  g=${run%%:*} rows=${run#*:}
  timeout 90 $B gemm 8 14336 4096 --weights q4_K --types f16:f32 --groups $g --counts-on-device --gemv-group-rows $rows --repeat 20 2>&1 | grep -E "gemv|median|rror|anic" | sed "s|^|[q4_K $g rows $rows] |"
  echo "at $SECONDS s"
done
