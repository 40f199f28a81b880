#!/bin/bash
# Issue 13, 2026-11-26 (26th session), call 6: the final binary: `nt` copies both operands where
# its leads do not take K (plan::NT_RELAYOUT), `nn` in place up to 2048^2 on the grouped walk
# and up to 4096^2 on the 128x256 tile (tiling::preferred_nn_in_place_schemes, no copy).
# (1) The new paths against the f64 reference. (2) The peers table as in h200-y-4.sh.
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
tar xJf carry/ggml.tar.xz -C /tmp
g() { timeout 60 $B gemm "$@" --repeat 2 2>&1 | grep -E "scheme|verify|rror" | sed "s|^|[$*] |"; }
g 4097 4095 4096 --layout nn --alpha 2 --beta 0.5
g 4096 4096 2048 --layout nn --types bf16:f32 --c-layout t
g 4096 4096 3000 --layout nn --beta 1
g 2048 8192 4096 --layout nn --alpha -1
echo "gemm checks done at $SECONDS s"
# The peers table (this block was inline when the call ran; the same commands).
source docs/perf/peers.sh
echo "all done at $SECONDS s"
