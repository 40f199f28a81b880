#!/bin/bash
# 38th session, call 2. Issue 47: quantized experts' decode (Mixtral's 8 of 14336x4096, q4_K,
# f16 activations) with the sizes on the device: the binary before dequantized all eight
# experts and ran the grouped GEMM; now one matrix-vector kernel streams the routed experts'
# blocks. Beside it the same groups from the host (each group streamed on its own). One process
# each (quantizing the experts on the CPU takes about 40 s); `--repeat 20`, median of the GPU
# spans.
B=$PWD/carry/vk-sgmat
OLD=$PWD/carry/vk-sgmat-old
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for mg in 2:1,0,0,1,0,0,0,0 8:1,1,1,1,1,1,1,1; do
  m=${mg%%:*} g=${mg#*:}
  for run in "$OLD --counts-on-device" "$B --counts-on-device" "$B"; do
    set -- $run
    bin=$1; shift
    timeout 120 $bin gemm $m 14336 4096 --weights q4_K --types f16:f32 --groups $g "$@" --repeat 20 2>&1 | grep -E "groups|median|rror|anic" | sed "s|^|[experts q4_K $(basename $bin) $g $*] |"
  done
done
echo "all done at $SECONDS s"
