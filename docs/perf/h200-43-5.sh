#!/bin/bash
# 43rd session, call 5 (issue 48): helpers kept between preparations (one helper process per
# preparation running at once, serving requests on its standard input until the context
# ends) where calls 2-4 started one per preparation. Cold (the driver's disk cache and ours
# off, a fresh cache directory per process), self-test on:
# (1) `bench --first-runs 1`, the layer's four GEMMs at 512 tokens, helper and in the process,
#     interleaved, two rounds;
# (2) examples/prepare_in_parallel 512 both ways, two rounds;
# (3) `runtime` as a first process both ways.
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for r in 1 2; do first_runs "helper r$r"; first_runs "in process r$r" --compile-in-process; done
echo "(1) done at $SECONDS s"
for r in 1 2; do
  for mode in helper in-process; do
    arg=""; [ $mode = helper ] && arg=helper
    cold carry/examples/prepare_in_parallel 512 $arg 2>&1 | tail -2 | grep -v "^device" | sed "s|^|[prepare_in_parallel $mode r$r] |"
  done
done
echo "(2) done at $SECONDS s"
for mode in helper in-process; do
  arg=""; [ $mode = in-process ] && arg=--compile-in-process
  cold $B runtime $arg 2>&1 | grep -E "Llama|rror" | sed "s|^|[runtime $mode] |"
done
echo "all done at $SECONDS s"
