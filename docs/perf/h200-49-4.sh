#!/bin/bash
# 49th session, call 4 (issue 48): split-K's slices with sizes built in, weighed. Three binaries:
# before (slices keep sizes pushed: one pipeline shared by every split shape of a scheme), now
# (every slice builds its depth in), whole (only where every slice is a whole number of the
# kernel's iterations, 1024 deep for the 256x128 tile: 512x4096x4096's 2048-deep slices, not
# 512x4096x11008's 5504-deep ones). Cold: examples/prepare_in_parallel 512 compiling in the
# process, two rounds interleaved. Steady: the layer's GEMMs, second of two processes, each
# binary on a cache directory of its own (h200-49-3's variant had left a failed verdict in the
# shared one).
source docs/perf/lib.sh
rm -rf ~/.cache/vk-sgmat ${XDG_CACHE_HOME:-/nonexistent}/vk-sgmat
gpu_line
L=512x12288x4096,512x4096x4096,512x22016x4096,512x4096x11008
for r in 1 2; do
  for v in before "" whole; do
    bin=prepare_in_parallel${v:+-$v}
    cold carry/examples/$bin 512 2>&1 | grep -v "^device" | sed "s|^|[${v:-now} r$r] |"
  done
done
echo "(1) done at $SECONDS s"
for v in before "" whole; do
  XDG_CACHE_HOME=/tmp/xdg-${v:-now} bench2 "${v:-now}" $PWD/carry/vk-sgmat${v:+-$v} --types f16:f32 --layout nt --shapes $L
done
echo "all done at $SECONDS s"
