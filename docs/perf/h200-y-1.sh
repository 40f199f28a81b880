#!/bin/bash
# Issue 13, 2026-11-26 (25th session), call 1: (1) does `kernel-probe`'s all-ones data explain
# why it ran the `nt` lead at 299.9 TFLOP/s where `tune`/`bench` ran the same SPIR-V at
# 291-296 (h200-x-8 against h200-deep-2)? Same kernels with ones and with random data in
# [-1, 1) (`KP_DATA=random`, bench's and mm_bench's distribution). (2) Five hand edits of the
# `nt` lead (256x128, sixteen 64-element steps, right operand first), random data:
#   va: software-pipelined by one step inside each iteration (step s+1 loaded before step s's
#       multiply, operands carried in phis; the last step after the inner loop)
#   vb: the inner loop without the Unroll hint;  vc: the outer loop marked DontUnroll
#   vd: eight inner iterations of two steps each (unrolled by hand)
#   vg: the accumulator carried in phis through the main loop, no Function-variable load/store
# Variants: docs/perf/h200-y-1-variants/*.spvasm (spirv-as --target-env vulkan1.3 into carry/v/).
P=carry/kernel-probe
B=carry/vk-sgmat
export KP_PINNED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $OUT/smi-y-1.csv &
SMI=$!
mark() { echo "MARK $(date +%H:%M:%S.%N | cut -c1-12) $*"; }
K="ggml lead va vb vc vd vg"
run() {  # kernel data n
  case $1 in
    ggml) KP_DATA=$2 timeout 60 $P ggml carry/m1772.spv $3 ;;
    *) KP_DATA=$2 timeout 60 $P spv carry/v/$1.spv $3 lead ;;
  esac
}
for k in $K; do run $k ones 512 > /dev/null 2>&1; done
timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096 --layout nt --reps 3 > /dev/null 2>&1
mark "primed at $SECONDS s"
for pass in 1 2; do
  for n in 4096 2048; do
    for d in ones random; do run ggml $d $n 2>&1 | sed "s|^|p$pass |"; run lead $d $n 2>&1 | sed "s|^|p$pass |"; done
    for k in va vb vc vd vg; do run $k random $n 2>&1 | sed "s|^|p$pass |"; done
  done
done
mark "probes done at $SECONDS s"
for how in "own" "stream --stream"; do read name flags <<< "$how"
  timeout 60 $B bench --types f16:f32 --shapes 2048x2048x2048,4096x4096x4096 --layout nt --reps 20 $flags 2>&1 | grep -E '^f16|^device' | sed "s|^|$name |"
done
timeout 60 $B tune 4096 4096 4096 --layout nt --filter wg_t256_fr16x8_k64_u16_a0_rf_ct --warm 1 2>&1 | grep -E "wg_t256" | sed "s|^|tune |"
mark end
kill $SMI
echo "all done at $SECONDS s"
