#!/bin/bash
# 40th session, call 3. Issue 47: Q6_K's blocks padded to 224 bytes on the device (branch
# exp/q6k-16-byte-blocks, 212 on main: +5.7% memory) so decode reads them 16 bytes at a time
# (`GemmOptions::gemv_wide_loads`, which gave q5_K and q3_K 12-15% on one token in call 1,
# h200-40-2), against main in the same call, ggml-vulkan beside. Carry: carry/vk-sgmat (main),
# carry/vk-sgmat-q6 (the branch's release build), carry/ggml.tar.xz. The branch was one commit on
# 80a2c2a, `QuantType::device_block_bytes` giving 224 for Q6K; deleted once timed (not kept).
B=$PWD/carry/vk-sgmat
Q6=$PWD/carry/vk-sgmat-q6
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p /tmp/g && tar xJf carry/ggml.tar.xz -C /tmp/g
timeout 100 /tmp/g/ggml/mm_bench --min-time 0.5 q6_K:22016x1x4096 q6_K:14336x1x4096 q6_K:22016x8x4096 q6_K:22016x512x4096 2>&1 | grep -E "^ggml-vulkan [a-zA-Z0-9_]+ " | sed "s|^|[ggml] |"
S=1x22016x4096,1x14336x4096,8x22016x4096,512x22016x4096
for bin in $B $Q6 $B $Q6; do
  for pass in 1 2; do
    timeout 90 $bin bench --types f16:f32 --weights q6_K --shapes $S --stream --reps 50 --warm 0.3 > /tmp/b.txt 2>&1
  done
  grep -E "weights|rror|anic" /tmp/b.txt | grep -v "^\[" | sed "s|^|[$(basename $bin) q6_K] |"
done
echo "timed at $SECONDS s"
timeout 60 $Q6 gemm 8 4099 4096 --weights q6_K --types f16:f32 --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check q6 q6_K] |"
timeout 60 $Q6 gemm 1 4099 4096 --weights q6_K --types f32:f32 --mode exact --repeat 3 2>&1 | grep -E "verified|FAILED|rror|anic" | sed "s|^|[check q6 q6_K f32] |"
echo "all done at $SECONDS s"
