#!/bin/bash
# Issue 45, 2026-11-27 (30th session), call 3: after the planner's steps were split (plan_fused
# -> decide, scheme_of) and the emitters restructured (their SPIR-V checked bit for bit here),
# the plans the H200 gets must be the ones it got before: the scheme every bench point names,
# this binary against the one before the API change (999407c), over types, layouts and shapes
# that take each rule (sizes built in, short K, mid-size grids, nn in place, the split, int8).
NEW=$PWD/carry/vk-sgmat
OLD=$PWD/carry/old/vk-sgmat
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=128x4096x4096,512x4096x4096,512x4096x11008,1024x1024x1024,2048x2048x2048,4096x4096x256,4096x4096x4096,16x4096x4096,1x4096x4096,8x22016x4096,3000x2000x1000,8192x8192x1024
for t in f16:f32 f16:f16 bf16:f32 i8:i32 f32:f32; do
  for l in nn nt tn tt; do
    for tag in old new; do
      B=$OLD; [ $tag = new ] && B=$NEW
      timeout 120 $B bench --types $t --layout $l --shapes $S --reps 2 --warm 0 2>&1 | grep -E "^(f16|bf16|i8|f32)" | awk -v tag=$tag -v l=$l '{print tag, l, $1, $5, $NF}' > /tmp/$tag-$t-$l.txt
    done
    if diff <(cut -d' ' -f2- /tmp/old-$t-$l.txt) <(cut -d' ' -f2- /tmp/new-$t-$l.txt) > /tmp/d.txt; then
      echo "$t $l: $(wc -l < /tmp/new-$t-$l.txt) points, same schemes"
    else
      echo "$t $l: DIFFERENT"; cat /tmp/d.txt
    fi
  done
done
cat /tmp/new-f16:f32-nn.txt
echo "all done at $SECONDS s"
