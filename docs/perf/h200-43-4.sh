#!/bin/bash
# 43rd session, call 4 (issue 48): the driver self-test's cost in a cold preparation after its
# known answer for a kernel with sizes built in stopped drawing the whole weight (1.28 s of
# CPU on the development machine for a 22016x4096 B, 17 ms now). The layer's four GEMMs at 512
# tokens, cold, `bench --first-runs 1`, self-test on and off interleaved, helper (the CLI's
# default) and in the process; then examples/prepare_in_parallel 512 both ways.
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
first_runs "self-test on, helper"; first_runs "self-test off, helper" --no-self-test
first_runs "self-test on, in process" --compile-in-process; first_runs "self-test off, in process" --compile-in-process --no-self-test
first_runs "self-test on, helper"; first_runs "self-test off, helper" --no-self-test
echo "(1) done at $SECONDS s"
for r in 1 2; do
  for mode in helper in-process; do
    arg=""; [ $mode = helper ] && arg=helper
    cold carry/examples/prepare_in_parallel 512 $arg 2>&1 | tail -2 | grep -v "^device" | sed "s|^|[prepare_in_parallel $mode r$r] |"
  done
done
echo "all done at $SECONDS s"
