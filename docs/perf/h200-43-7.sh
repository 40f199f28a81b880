#!/bin/bash
# 43rd session, call 7 (issue 48): the helper as committed after call 6 (one request per helper
# process, which has exited before the context creates its pipelines). Cold, self-test on:
# `bench --first-runs 1` on the layer's four GEMMs at 512 tokens twice, `runtime` as a first
# process, examples/prepare_in_parallel 512 with helpers.
source docs/perf/lib.sh
gpu_line
S=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
first_runs "helper r1"; first_runs "helper r2"
cold $B runtime 2>&1 | grep -E "Llama|rror" | sed "s|^|[runtime helper] |"
cold carry/examples/prepare_in_parallel 512 helper 2>&1 | tail -2 | grep -v "^device" | sed "s|^|[prepare_in_parallel helper] |"
echo "all done at $SECONDS s"
