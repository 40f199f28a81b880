#!/bin/bash
# Issue 13: the default with one copy from K = 1024, checked against the reference (every row).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
c() { timeout 100 $B gemm "$@" --repeat 3 2>&1 | grep -E "^gemm|verify|time" | tr '\n' ' ' | sed 's/$/\n/'; }
c 4096 4096 1024 --layout nn
c 4096 4096 1024 --layout tt --alpha -1.5 --beta 0.5
c 4097 4100 1031 --layout nn --c-layout t --types bf16:f32
c 8192 4096 1024 --layout tt --types f16:f16
c 4096 4096 1024 --layout nn --types f32:f32 --mode fast
c 4096 4096 512 --layout nn
