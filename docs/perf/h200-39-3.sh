#!/bin/bash
# 39th session, call 3: calls 1 and 2 ran q4_K through `vk-sgmat gemm --weights`, which then
# ignored the kernel options (`--gemv-group-rows` among them): every q4_K row there is the
# default tiles of one row. Now passed on; q4_K routings with tiles of 1, 2 and 4 rows.
B=$PWD/carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for run in 1,1,1,1,1,1,1,1:1 1,1,1,1,1,1,1,1:2 1,1,1,1,1,1,1,1:4 4,0,0,4,0,0,0,0:1 4,0,0,4,0,0,0,0:2 4,0,0,4,0,0,0,0:4 2,2,2,2,0,0,0,0:1 2,2,2,2,0,0,0,0:2; do
  g=${run%%:*} rows=${run#*:}
  timeout 60 $B gemm 8 14336 4096 --weights q4_K --types f16:f32 --groups $g --counts-on-device --gemv-group-rows $rows --repeat 20 2>&1 | grep -E "gemv|median|rror|anic" | sed "s|^|[q4_K $g rows $rows] |"
  echo "at $SECONDS s"
done
