#!/bin/bash
# 49th session, call 7 (issue 46): f64 checks of the 128-token GEMMs now taking sizes built in
# (from M*N*K = 2^31): both split schemes (64x64 in two, 128x128 in four and eight slices),
# alpha and beta, a row count off the tile, f16 -> f16.
source docs/perf/lib.sh
gpu_line
for args in "128 4096 4096 --layout nt" "128 4096 11008 --layout nt --alpha 2 --beta 0.5" "127 6144 4096 --layout nt --types f16:f16" "128 4096 14336 --layout nt --beta 1"; do
  timeout 60 $B gemm $args 2>&1 | grep -E "scheme|verify|rror|anic" | head -3 | sed "s|^|[gemm $args] |"
done
echo "all done at $SECONDS s"
