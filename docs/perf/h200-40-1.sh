#!/bin/bash
# Written in the 39th session for the next one (issue 47): blocks of the 32-value formats
# padded to a whole word on the device (branch exp/pad-32-value-blocks: q4_0 18 -> 20 bytes,
# q5_0 22 -> 24, q8_0 34 -> 36, mxfp4 17 -> 20), as q3_K and q6_K were in the 35th session
# (q6_K one token 39.5 -> 30.3 us), against main, ggml-vulkan beside both. Decode and the
# prefill's dequantizing pass both read the blocks. Carry: carry/vk-sgmat (main) and
# carry/vk-sgmat-pad (the branch's release build), carry/ggml.tar.xz. Run in the 40th session
# (carry/vk-sgmat at 80a2c2a); the branch, `device_block_bytes` as `block_bytes().next_multiple_of(4)`,
# was deleted once timed (not kept).
B=$PWD/carry/vk-sgmat
PAD=$PWD/carry/vk-sgmat-pad
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
GS=""
for q in q4_0 q8_0 mxfp4 q5_0; do GS="$GS $q:22016x1x4096 $q:14336x1x4096 $q:22016x8x4096 $q:22016x512x4096"; done
timeout 200 /tmp/g/ggml/mm_bench --min-time 0.5 $GS 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=1x22016x4096,1x14336x4096,8x22016x4096,512x22016x4096
# Each process quantizes its weights on the CPU; pass 1 creates the pipelines, pass 2 reports.
for q in q4_0 q8_0 mxfp4 q5_0; do
  for bin in $B $PAD; do
    for pass in 1 2; do
      timeout 90 $bin bench --types f16:f32 --weights $q --shapes $S --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
    done
    grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$(basename $bin) $q] |"
  done
done
echo "timed at $SECONDS s"
for q in q4_0 q8_0 mxfp4 q5_0; do
  timeout 60 $PAD gemm 8 4099 4096 --weights $q --types f16:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check pad $q] |"
done
echo "all done at $SECONDS s"
