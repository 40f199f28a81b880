#!/bin/bash
# Issue 13, 2026-11-26 (28th session), call 2: with sizes built in, which workgroup-scope
# scheme reads `nn` and `tt` in place fastest at 4096^3 (f16 -> f32)? The leads were chosen
# with sizes pushed. Every scheme by `bench --scheme S --relayout off --specialize on`, two
# interleaved passes, own timestamps; beside them the defaults (auto), `nn` with sizes pushed,
# and `tn` (the fastest layout in call 1).
B=carry/vk-sgmat
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
SCH="wg_t256_fr8x16_k64_u16_a0_g8_rf_ct wg_t256_fr8x16_k64_u16_a0_g8_ct wg_t256_fr8x16_k64_u16_a0_g8
wg_t256_fr16x8_k64_u16_a0_g8_rf_ct wg_t256_fr16x8_k64_u16_a0_g8 wg_t128_fr8x8_k32_u16_a0_g8_rf_ct
wg_t128_fr8x8_k32_u16_a0_g8 wg_t256_fr8x16_k64_u8_a0_rf_ct wg_t256_fr8x16_k32_u32_a0_g8_rf_ct
wg_t256_fr8x16_k64_u32_a0_g8_rf_ct wg_t256_fr8x8_k64_u16_a0_g8_rf_ct wg_t256_fr8x16_k64_u8_p2"
b() { timeout 60 $B bench --types f16:f32 --shapes 4096x4096x4096 --reps 20 "$@" 2>&1 | grep -E '^f16|rror' | sed "s|^|$P |"; }
# Prime the driver's shader cache (one short run of each pipeline).
for L in nn tt; do for s in $SCH; do timeout 30 $B bench --types f16:f32 --shapes 4096x4096x4096 --layout $L --relayout off --specialize on --scheme $s --reps 2 --warm 0 > /dev/null 2>&1; done; done
echo "primed at $SECONDS s"
for P in p1 p2; do
  b --layout nn; b --layout nn --specialize off; b --layout tt; b --layout tn
  for L in nn tt; do for s in $SCH; do b --layout $L --relayout off --specialize on --scheme $s; done; done
done
echo "all done at $SECONDS s"
