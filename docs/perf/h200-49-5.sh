#!/bin/bash
# 49th session, call 5 (issue 48): `runtime` as a cold first process (helpers compile, the CLI's
# default; driver disk cache off, a fresh cache directory) with this session's binary (split-K
# slices with sizes built in) and the one before, interleaved, wall time and the layer's time.
source docs/perf/lib.sh
gpu_line
for r in 1 2; do
  for v in before now; do
    bin=$B; [ $v = before ] && bin=$OLD
    t0=$EPOCHREALTIME
    cold $bin runtime > /tmp/runtime.txt 2>&1
    rc=$?; t1=$EPOCHREALTIME
    echo "[runtime $v r$r] rc $rc, wall $(awk "BEGIN{print $t1 - $t0}") s"
    grep -iE "layer|rror" /tmp/runtime.txt | head -4 | sed "s|^|[runtime $v r$r] |"
  done
done
echo "all done at $SECONDS s"
