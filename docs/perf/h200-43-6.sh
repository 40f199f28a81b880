#!/bin/bash
# 43rd session, call 6 (issue 48): call 5's kept helpers lost the first-run gain (the large
# two GEMMs 4.3-4.9x, as compiled in the process), where calls 2-4's helpers, one process per
# preparation that exited before the context created its pipelines, had it. An experiment
# build: the helper now destroys its pipelines before it answers; with
# VK_SGMAT_EXPERIMENT_ONE_SHOT set (a switch of this build only) each helper serves one request
# and has exited before the context creates the pipelines. Cold, self-test on, interleaved.
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for r in 1 2; do
  first_runs "kept, pipelines destroyed first r$r"
  VK_SGMAT_EXPERIMENT_ONE_SHOT=1 first_runs "one request each r$r"
done
echo "(1) done at $SECONDS s"
for mode in kept one-shot; do
  if [ $mode = one-shot ]; then export VK_SGMAT_EXPERIMENT_ONE_SHOT=1; fi
  cold $B runtime 2>&1 | grep -E "Llama|rror" | sed "s|^|[runtime $mode] |"
done
echo "all done at $SECONDS s"
