//! Blocks to f32, one function per format, each the f32 arithmetic of ggml's `dequantize_row_*`
//! in its order (a product then a difference is two roundings, never a fused multiply-add).

use super::{check_lengths, QuantType};
use crate::error::Result;
use half::f16;

/// The values of `blocks` (whole blocks of `t`, as a GGUF file stores them) into `out`, whose
/// length says how many: a typed error where the lengths disagree.
pub fn dequantize(t: QuantType, blocks: &[u8], out: &mut [f32]) -> Result<()> {
    check_lengths(t, blocks.len(), out.len())?;
    let each = match t {
        QuantType::Q8_0 => q8_0,
        QuantType::Q4_0 => q4_0,
        QuantType::Q4_1 => q4_1,
        QuantType::Q5_0 => q5_0,
        QuantType::Q5_1 => q5_1,
        QuantType::Q2K => q2_k,
        QuantType::Q3K => q3_k,
        QuantType::Q4K => q4_k,
        QuantType::Q5K => q5_k,
        QuantType::Q6K => q6_k,
        QuantType::Iq4Nl => iq4_nl,
        QuantType::Iq4Xs => iq4_xs,
        QuantType::Mxfp4 => mxfp4,
        QuantType::Nvfp4 => nvfp4,
    };
    for (block, y) in blocks
        .chunks_exact(t.block_bytes())
        .zip(out.chunks_exact_mut(t.block_values()))
    {
        each(block, y);
    }
    Ok(())
}

/// The f16 at byte `at` (little-endian), as f32.
fn half(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

/// `block_q8_0`: d (f16), qs[32] (i8).
fn q8_0(b: &[u8], y: &mut [f32]) {
    let d = half(b, 0);
    for (v, &q) in y.iter_mut().zip(&b[2..34]) {
        *v = f32::from(q as i8) * d;
    }
}

/// `block_q4_0`: d, qs[16]; value j of the low nibbles, j + 16 of the high, minus 8.
fn q4_0(b: &[u8], y: &mut [f32]) {
    let d = half(b, 0);
    for (j, &q) in b[2..18].iter().enumerate() {
        y[j] = f32::from((q & 0xf) as i8 - 8) * d;
        y[j + 16] = f32::from((q >> 4) as i8 - 8) * d;
    }
}

/// `block_q4_1`: d, m, qs[16]: `q * d + m`.
fn q4_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    for (j, &q) in b[4..20].iter().enumerate() {
        y[j] = f32::from(q & 0xf) * d + m;
        y[j + 16] = f32::from(q >> 4) * d + m;
    }
}

/// The fifth bits of a Q5 block: bit j of `qh` (little-endian) is value j's.
fn fifth_bits(qh: &[u8]) -> u32 {
    u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]])
}

/// `block_q5_0`: d, qh[4], qs[16], minus 16.
fn q5_0(b: &[u8], y: &mut [f32]) {
    let d = half(b, 0);
    let qh = fifth_bits(&b[2..6]);
    for (j, &q) in b[6..22].iter().enumerate() {
        let h0 = ((qh >> j) << 4) & 0x10;
        let h1 = (qh >> (j + 12)) & 0x10;
        y[j] = ((u32::from(q & 0xf) | h0) as i32 - 16) as f32 * d;
        y[j + 16] = ((u32::from(q >> 4) | h1) as i32 - 16) as f32 * d;
    }
}

/// `block_q5_1`: d, m, qh[4], qs[16]: `q * d + m`.
fn q5_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (half(b, 0), half(b, 2));
    let qh = fifth_bits(&b[4..8]);
    for (j, &q) in b[8..24].iter().enumerate() {
        let h0 = ((qh >> j) << 4) & 0x10;
        let h1 = (qh >> (j + 12)) & 0x10;
        y[j] = (u32::from(q & 0xf) | h0) as f32 * d + m;
        y[j + 16] = (u32::from(q >> 4) | h1) as f32 * d + m;
    }
}

/// `block_q2_K`: scales[16] (4-bit scale, 4-bit minimum), qs[64], d, dmin. Each half of 128
/// values reads 32 bytes of `qs` four times, two bits deeper each time, 16 values a scale.
fn q2_k(b: &[u8], y: &mut [f32]) {
    let (scales, qs) = (&b[0..16], &b[16..80]);
    let (d, min) = (half(b, 80), half(b, 82));
    // Sub-block `is` (16 values, its own scale) is values 16 is.. of the block.
    let mut is = 0;
    for half_block in 0..2 {
        let q = &qs[32 * half_block..32 * half_block + 32];
        for shift in [0, 2, 4, 6] {
            for part in [&q[..16], &q[16..]] {
                let sc = scales[is];
                let dl = d * f32::from(sc & 0xf);
                let ml = min * f32::from(sc >> 4);
                for (v, &x) in y[16 * is..16 * is + 16].iter_mut().zip(part) {
                    *v = dl * f32::from((x >> shift) & 3) - ml;
                }
                is += 1;
            }
        }
    }
}

/// Q3_K's sixteen 6-bit scales from their 12 bytes: the low four bits of scale i in the nibbles
/// of bytes 0-7, the high two in bytes 8-11, as ggml's `kmask` shuffle lays them out.
fn q3_k_scales(s: &[u8]) -> [i8; 16] {
    let mut out = [0i8; 16];
    for (i, v) in out.iter_mut().enumerate() {
        let low = if i < 8 { s[i] & 0xf } else { s[i - 8] >> 4 };
        let high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        *v = (low | (high << 4)) as i8 - 32;
    }
    out
}

/// `block_q3_K`: hmask[32], qs[64], scales[12], d. A value is its two bits of `qs` minus 4
/// where its bit of `hmask` is clear, times `d * scale`.
fn q3_k(b: &[u8], y: &mut [f32]) {
    let (hmask, qs) = (&b[0..32], &b[32..96]);
    let scales = q3_k_scales(&b[96..108]);
    let d_all = half(b, 108);
    // Sub-block `is` (16 values, its own scale) is values 16 is.. of the block.
    let (mut is, mut m) = (0, 1u8);
    for half_block in 0..2 {
        let q = &qs[32 * half_block..32 * half_block + 32];
        for shift in [0, 2, 4, 6] {
            for lo in [0, 16] {
                let dl = d_all * f32::from(scales[is]);
                for (i, v) in y[16 * is..16 * is + 16].iter_mut().enumerate() {
                    let l = lo + i;
                    let low = ((q[l] >> shift) & 3) as i8;
                    let value = low - if hmask[l] & m != 0 { 0 } else { 4 };
                    *v = dl * f32::from(value);
                }
                is += 1;
            }
            m = m.wrapping_shl(1);
        }
    }
}

/// The scale and minimum of sub-block `j` (0-7) of a Q4_K or Q5_K block: 6 bits each, packed
/// in 12 bytes (ggml's `get_scale_min_k4`).
pub(super) fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// `block_q4_K`: d, dmin, scales[12], qs[128]: per 64 values, 32 bytes of low then high nibbles,
/// `d * scale * q - dmin * min` for each sub-block of 32.
fn q4_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (half(b, 0), half(b, 2));
    let (scales, qs) = (&b[4..16], &b[16..144]);
    for (chunk, (q, y)) in qs.chunks_exact(32).zip(y.chunks_exact_mut(64)).enumerate() {
        let (sc1, m1) = scale_min_k4(2 * chunk, scales);
        let (sc2, m2) = scale_min_k4(2 * chunk + 1, scales);
        let (d1, m1) = (d * f32::from(sc1), min * f32::from(m1));
        let (d2, m2) = (d * f32::from(sc2), min * f32::from(m2));
        for (l, &x) in q.iter().enumerate() {
            y[l] = d1 * f32::from(x & 0xf) - m1;
            y[l + 32] = d2 * f32::from(x >> 4) - m2;
        }
    }
}

/// `block_q5_K`: d, dmin, scales[12], qh[32], qs[128]: Q4_K with a fifth bit per value from
/// `qh`, two bits of each `qh` byte per 64 values.
fn q5_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (half(b, 0), half(b, 2));
    let (scales, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
    for (chunk, (q, y)) in qs.chunks_exact(32).zip(y.chunks_exact_mut(64)).enumerate() {
        let (sc1, m1) = scale_min_k4(2 * chunk, scales);
        let (sc2, m2) = scale_min_k4(2 * chunk + 1, scales);
        let (d1, m1) = (d * f32::from(sc1), min * f32::from(m1));
        let (d2, m2) = (d * f32::from(sc2), min * f32::from(m2));
        let (u1, u2) = (1u8 << (2 * chunk), 2u8 << (2 * chunk));
        for (l, &x) in q.iter().enumerate() {
            let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
            let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
            y[l] = d1 * f32::from((x & 0xf) + h1) - m1;
            y[l + 32] = d2 * f32::from((x >> 4) + h2) - m2;
        }
    }
}

/// `block_q6_K`: ql[128], qh[64], scales[16] (i8), d: per 128 values, 64 bytes of `ql` (low
/// nibbles, then high) and 32 of `qh` (two bits each), minus 32, times `d * scale`.
fn q6_k(b: &[u8], y: &mut [f32]) {
    let (ql, qh, sc) = (&b[0..128], &b[128..192], &b[192..208]);
    let d = half(b, 208);
    for n in 0..2 {
        let (ql, qh, sc, y) = (&ql[64 * n..], &qh[32 * n..], &sc[8 * n..], &mut y[128 * n..]);
        for l in 0..32 {
            let is = l / 16;
            let q1 = ((ql[l] & 0xf) | ((qh[l] & 3) << 4)) as i8 - 32;
            let q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
            let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
            let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
            let scale = |k: usize| d * f32::from(sc[is + k] as i8);
            y[l] = scale(0) * f32::from(q1);
            y[l + 32] = scale(2) * f32::from(q2);
            y[l + 64] = scale(4) * f32::from(q3);
            y[l + 96] = scale(6) * f32::from(q4);
        }
    }
}

/// IQ4_NL's and IQ4_XS's values of the 16 codes (ggml's `kvalues_iq4nl`): non-linear, closer
/// together near zero, where most weights lie.
pub(crate) const IQ4_VALUES: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// The 16 bytes of nibbles of 32 values (value j in byte j's low nibble, j + 16 in its high
/// one) as `scale * IQ4_VALUES[code]`.
fn iq4_values(scale: f32, qs: &[u8], y: &mut [f32]) {
    for (j, &q) in qs[..16].iter().enumerate() {
        y[j] = scale * f32::from(IQ4_VALUES[usize::from(q & 0xf)]);
        y[j + 16] = scale * f32::from(IQ4_VALUES[usize::from(q >> 4)]);
    }
}

/// `block_iq4_nl`: d, qs[16].
fn iq4_nl(b: &[u8], y: &mut [f32]) {
    iq4_values(half(b, 0), &b[2..18], y);
}

/// `block_iq4_xs`: d, scales_h (u16), scales_l[4], qs[128]; sub-block `ib` of 32 values has the
/// 6-bit scale `ls` (its low four bits nibble `ib % 2` of `scales_l[ib / 2]`, its top two bits
/// `2 ib` of `scales_h`) and `dl = d * (ls - 32)`, its nibbles the 16 bytes at `16 ib`.
fn iq4_xs(b: &[u8], y: &mut [f32]) {
    let d = half(b, 0);
    let scales_h = u16::from_le_bytes([b[2], b[3]]);
    for (ib, y) in y.chunks_exact_mut(32).enumerate() {
        let low = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0xf;
        let high = ((scales_h >> (2 * ib)) & 3) as u8;
        let ls = i32::from(low | high << 4);
        iq4_values(d * (ls - 32) as f32, &b[8 + 16 * ib..], y);
    }
}

/// FP4 (E2M1) values doubled, as ggml's `kvalues_mxfp4` holds them: sign in bit 3.
const MXFP4_VALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// Half the E8M0 scale `2^(e - 127)`: the doubled FP4 values times it give the values
/// (ggml's `GGML_E8M0_TO_FP32_HALF`, subnormal for e < 2).
pub(super) fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

/// `block_mxfp4`: e (E8M0), qs[16]: value j of the low nibbles, j + 16 of the high.
fn mxfp4(b: &[u8], y: &mut [f32]) {
    let d = e8m0_half(b[0]);
    for (j, &q) in b[1..17].iter().enumerate() {
        y[j] = f32::from(MXFP4_VALUES[usize::from(q & 0xf)]) * d;
        y[j + 16] = f32::from(MXFP4_VALUES[usize::from(q >> 4)]) * d;
    }
}

/// `block_nvfp4`: d[4] (unsigned E4M3, one per sub-block of 16), qs[32]: sub-block `s` has
/// bytes `8 s..8 s + 8`, value j in byte j's low nibble, j + 8 in its high one.
fn nvfp4(b: &[u8], y: &mut [f32]) {
    for (s, (y, qs)) in y.chunks_exact_mut(16).zip(b[4..36].chunks_exact(8)).enumerate() {
        let d = ue4m3_half(b[s]);
        for (j, &q) in qs.iter().enumerate() {
            y[j] = f32::from(MXFP4_VALUES[usize::from(q & 0xf)]) * d;
            y[j + 8] = f32::from(MXFP4_VALUES[usize::from(q >> 4)]) * d;
        }
    }
}

/// Half the unsigned E4M3 scale `x` (bias 7, bit 7 unused), as ggml's `ggml_ue4m3_to_fp32`
/// returns it for the doubled FP4 values: `man 2^-10` for exponent 0, `(1 + man / 8)
/// 2^(exp - 8)` above; 0x7F (E4M3's NaN) is 0. Every value is exact in f32, so the bits are
/// put together directly.
pub(super) fn ue4m3_half(x: u8) -> f32 {
    let (exp, man) = (u32::from(x >> 3) & 0xf, u32::from(x & 7));
    match (x, exp) {
        (0x7f, _) => 0.0,
        (_, 0) => man as f32 / 1024.0,
        _ => f32::from_bits(((exp + 119) << 23) | (man << 20)),
    }
}
