#!/bin/bash
# 48th session, call 4. Issue 46: the 128-token prefill. h200-48-3 ran 22016x128x4096 (the
# weights as A) at 124.8 us on the 256x128 tile and 128x22016x4096 (the tokens as A, the usual
# orientation) at 143.7 on the 128x128 one the mid-grid table names: is the 128x256 tile (the
# same tile, the other way round) faster for 128 tokens? The Llama-7B and Llama-3-8B layers'
# GEMMs at 128 tokens (f16 -> f32, nt) as chosen, then forced onto 128x256 tiles with and
# without a split of K; ggml-vulkan's mul_mm beside. Second of two processes.
source docs/perf/lib.sh
gpu_line
ggml --min-time 0.25 f16:12288x128x4096 f16:4096x128x4096 f16:22016x128x4096 f16:4096x128x11008 \
  f16:6144x128x4096 f16:28672x128x4096 f16:4096x128x14336
S=128x12288x4096,128x4096x4096,128x22016x4096,128x4096x11008,128x6144x4096,128x28672x4096,128x4096x14336
bench2 "chosen" $B --types f16:f32 --layout nt --shapes $S
for scheme in wg_t256_fr8x16_k64_u16_a0_rf_ct wg_t256_fr8x16_k64_u8_a0_rf_ct; do
  for split in 1 2; do
    bench2 "$scheme split $split" $B --types f16:f32 --layout nt --shapes $S --scheme $scheme --split-k $split
  done
  echo "$scheme done at $SECONDS s"
done
echo "all done at $SECONDS s"
