//! f32 to blocks: a reference quantizer per format, for tests and for users without a GGUF file.
//! Round to nearest against each block's (and sub-block's) largest magnitude or range, as ggml's
//! `quantize_row_*_ref` do for the 32-value formats; the K formats take their sub-block scales
//! from each sub-block's range without ggml's iterative search (valid blocks, somewhat larger
//! errors than ggml's own quantizer). Every block decodes with [`super::dequantize`].

use super::{check_lengths, QuantType, IQ4_VALUES};
use crate::error::{Error, Result};
use half::f16;

/// `values` (whole blocks of `t`; finite) as blocks of `t`.
pub fn quantize(t: QuantType, values: &[f32]) -> Result<Vec<u8>> {
    let bytes = t.bytes_for(values.len())?;
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::InvalidOperand(format!(
            "value {i} is {}: quantized blocks hold finite values",
            values[i]
        )));
    }
    let each = match t {
        QuantType::Q8_0 => q8_0,
        QuantType::Q4_0 => |x: &[f32], b: &mut [u8]| symmetric_32(x, b, 4),
        QuantType::Q5_0 => |x: &[f32], b: &mut [u8]| symmetric_32(x, b, 5),
        QuantType::Q4_1 => |x: &[f32], b: &mut [u8]| offset_32(x, b, 4),
        QuantType::Q5_1 => |x: &[f32], b: &mut [u8]| offset_32(x, b, 5),
        QuantType::Q2K => q2_k,
        QuantType::Q3K => q3_k,
        QuantType::Q4K => |x: &[f32], b: &mut [u8]| q45_k(x, b, 4),
        QuantType::Q5K => |x: &[f32], b: &mut [u8]| q45_k(x, b, 5),
        QuantType::Q6K => q6_k,
        QuantType::Iq4Nl => iq4_nl,
        QuantType::Iq4Xs => iq4_xs,
        QuantType::Mxfp4 => mxfp4,
        QuantType::Nvfp4 => nvfp4,
    };
    let mut out = vec![0u8; bytes];
    for (x, b) in values
        .chunks_exact(t.block_values())
        .zip(out.chunks_exact_mut(t.block_bytes()))
    {
        each(x, b);
    }
    check_lengths(t, out.len(), values.len())?;
    Ok(out)
}

/// Stores `v` as the f16 at byte `at`, and returns the f32 it rounded to.
fn put_half(b: &mut [u8], at: usize, v: f32) -> f32 {
    let h = f16::from_f32(v);
    b[at..at + 2].copy_from_slice(&h.to_bits().to_le_bytes());
    h.to_f32()
}

/// `1 / d`, or 0 for a zero scale (every value then quantizes to the zero point).
fn inverse(d: f32) -> f32 {
    if d == 0.0 {
        0.0
    } else {
        1.0 / d
    }
}

/// The value of largest magnitude, with its sign.
fn signed_max(x: &[f32]) -> f32 {
    x.iter()
        .copied()
        .fold(0.0f32, |m, v| if v.abs() > m.abs() { v } else { m })
}

/// `block_q8_0`: `d = max|x| / 127`.
fn q8_0(x: &[f32], b: &mut [u8]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = amax / 127.0;
    let id = inverse(d);
    put_half(b, 0, d);
    for (q, &v) in b[2..34].iter_mut().zip(x) {
        *q = (v * id).round().clamp(-128.0, 127.0) as i8 as u8;
    }
}

/// Packs 32 `bits`-bit codes (4 or 5) after the 32-value header of `head` bytes: low nibbles
/// of values 0-15 and high of 16-31 in 16 bytes, fifth bits in 4 bytes before them.
fn pack_32(codes: &[u8; 32], b: &mut [u8], head: usize, bits: u32) {
    let qs = head + if bits == 5 { 4 } else { 0 };
    let mut qh = 0u32;
    for j in 0..16 {
        b[qs + j] = (codes[j] & 0xf) | ((codes[j + 16] & 0xf) << 4);
        qh |= u32::from(codes[j] >> 4) << j;
        qh |= u32::from(codes[j + 16] >> 4) << (j + 16);
    }
    if bits == 5 {
        b[head..head + 4].copy_from_slice(&qh.to_le_bytes());
    }
}

/// `block_q4_0` / `block_q5_0`: `d = max / -2^(bits-1)` from the value of largest magnitude, so
/// it lands on the most negative code; codes `x / d + 2^(bits-1)`, rounded.
fn symmetric_32(x: &[f32], b: &mut [u8], bits: u32) {
    let half_range = (1u32 << (bits - 1)) as f32;
    let d = signed_max(x) / -half_range;
    let id = inverse(d);
    put_half(b, 0, d);
    let top = ((1u32 << bits) - 1) as f32;
    let mut codes = [0u8; 32];
    for (c, &v) in codes.iter_mut().zip(x) {
        *c = (v * id + half_range + 0.5).floor().clamp(0.0, top) as u8;
    }
    pack_32(&codes, b, 2, bits);
}

/// `block_q4_1` / `block_q5_1`: `d = (max - min) / (2^bits - 1)`, `m = min`.
fn offset_32(x: &[f32], b: &mut [u8], bits: u32) {
    let min = x.iter().copied().fold(f32::INFINITY, f32::min);
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let top = ((1u32 << bits) - 1) as f32;
    let d = (max - min) / top;
    let id = inverse(d);
    put_half(b, 0, d);
    put_half(b, 2, min);
    let mut codes = [0u8; 32];
    for (c, &v) in codes.iter_mut().zip(x) {
        *c = ((v - min) * id + 0.5).floor().clamp(0.0, top) as u8;
    }
    pack_32(&codes, b, 4, bits);
}

/// Sub-block scales and minima (`scale * q - min`, `levels` codes) quantized to `bits`-bit
/// integers against two f16 super-scales: (d, dmin, the integer scales and minima, as the f32
/// products the decoder forms, `d * sc` and `dmin * m`).
struct SubScales {
    d: f32,
    dmin: f32,
    sc: Vec<u8>,
    m: Vec<u8>,
}

/// [`SubScales`] for sub-blocks of `x` of `len` values, codes `0..levels`, scales of `bits` bits;
/// `d` at byte `at_d`, `dmin` at `at_dmin` of `b`.
fn sub_scales(
    x: &[f32],
    len: usize,
    levels: u32,
    bits: u32,
    b: &mut [u8],
    (at_d, at_dmin): (usize, usize),
) -> SubScales {
    let top = ((1u32 << bits) - 1) as f32;
    let ranges: Vec<(f32, f32)> = x
        .chunks_exact(len)
        .map(|s| {
            let min = s.iter().copied().fold(0.0f32, f32::min);
            let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            ((max - min) / (levels - 1) as f32, -min)
        })
        .collect();
    let max_scale = ranges.iter().fold(0.0f32, |m, r| m.max(r.0));
    let max_min = ranges.iter().fold(0.0f32, |m, r| m.max(r.1));
    let d = put_half(b, at_d, max_scale / top);
    let dmin = put_half(b, at_dmin, max_min / top);
    let (id, idmin) = (inverse(d), inverse(dmin));
    SubScales {
        d,
        dmin,
        sc: ranges
            .iter()
            .map(|r| (r.0 * id).round().clamp(0.0, top) as u8)
            .collect(),
        m: ranges
            .iter()
            .map(|r| (r.1 * idmin).round().clamp(0.0, top) as u8)
            .collect(),
    }
}

/// Codes `0..levels` of sub-block `s` of `x` against its decoded scale and minimum.
fn offset_codes(x: &[f32], len: usize, s: &SubScales, j: usize, levels: u32) -> Vec<u8> {
    let scale = s.d * f32::from(s.sc[j]);
    let min = s.dmin * f32::from(s.m[j]);
    let is = inverse(scale);
    x[len * j..len * (j + 1)]
        .iter()
        .map(|&v| ((v + min) * is).round().clamp(0.0, (levels - 1) as f32) as u8)
        .collect()
}

/// `block_q2_K`: sixteen 4-bit scales and minima (scale in the low nibble), 2-bit codes; sub-block
/// `is` sits at bits `2 * (is / 2 % 4)` of bytes `32 * (is / 8) + 16 * (is % 2)..` of `qs`.
fn q2_k(x: &[f32], b: &mut [u8]) {
    let s = sub_scales(x, 16, 4, 4, b, (80, 82));
    for is in 0..16 {
        b[is] = s.sc[is] | (s.m[is] << 4);
        let codes = offset_codes(x, 16, &s, is, 4);
        let (base, shift) = (16 + 32 * (is / 8) + 16 * (is % 2), 2 * (is / 2 % 4));
        for (l, &c) in codes.iter().enumerate() {
            b[base + l] |= c << shift;
        }
    }
}

/// `block_q3_K`: sixteen signed 6-bit scales (`d * (sc - 32)`), codes -4..=3 as two bits in `qs`
/// (placed like Q2_K's) and a high bit in `hmask` (set for codes >= 0).
fn q3_k(x: &[f32], b: &mut [u8]) {
    let scales: Vec<f32> = x.chunks_exact(16).map(|s| signed_max(s) / -4.0).collect();
    let max = scales.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = put_half(b, 108, max / 31.0);
    let id = inverse(d);
    for (is, &scale) in scales.iter().enumerate() {
        let sc = (scale * id).round().clamp(-32.0, 31.0) as i8;
        let stored = (sc + 32) as u8;
        // Low four bits in nibbles of bytes 0-7, high two in bytes 8-11 (see `q3_k_scales`).
        if is < 8 {
            b[96 + is] |= stored & 0xf;
        } else {
            b[96 + is - 8] |= (stored & 0xf) << 4;
        }
        b[96 + 8 + is % 4] |= (stored >> 4) << (2 * (is / 4));
        let inv = inverse(d * f32::from(sc));
        let (base, shift) = (32 + 32 * (is / 8) + 16 * (is % 2), 2 * (is / 2 % 4));
        let bit = 1u8 << (is / 2);
        for l in 0..16 {
            let code = (x[16 * is + l] * inv).round().clamp(-4.0, 3.0) as i8 + 4;
            let value = code as u8;
            let at = 16 * (is % 2) + l;
            if value >= 4 {
                b[at] |= bit;
            }
            b[base + l] |= (value & 3) << shift;
        }
    }
}

/// Packs the eight 6-bit scales and minima of a Q4_K / Q5_K block into 12 bytes (the inverse of
/// `scale_min_k4`).
fn pack_scale_min_k4(sc: &[u8], m: &[u8], q: &mut [u8]) {
    for j in 0..8 {
        if j < 4 {
            q[j] = sc[j] & 63;
            q[j + 4] = m[j] & 63;
        } else {
            q[j + 4] = (sc[j] & 0xf) | ((m[j] & 0xf) << 4);
            q[j - 4] |= (sc[j] >> 4) << 6;
            q[j] |= (m[j] >> 4) << 6;
        }
    }
}

/// `block_q4_K` / `block_q5_K`: eight sub-blocks of 32, 6-bit scales and minima, `bits`-bit
/// codes: low nibbles of sub-blocks 2c and high of 2c + 1 share 32 bytes; Q5_K's fifth bits in
/// `qh` (bit 2c, 2c + 1 of byte l).
fn q45_k(x: &[f32], b: &mut [u8], bits: u32) {
    let levels = 1u32 << bits;
    let s = sub_scales(x, 32, levels, 6, b, (0, 2));
    pack_scale_min_k4(&s.sc, &s.m, &mut b[4..16]);
    let qs = if bits == 5 { 48 } else { 16 };
    for j in 0..8 {
        let codes = offset_codes(x, 32, &s, j, levels);
        let chunk = j / 2;
        for (l, &c) in codes.iter().enumerate() {
            let at = qs + 32 * chunk + l;
            b[at] |= if j % 2 == 0 { c & 0xf } else { (c & 0xf) << 4 };
            if bits == 5 {
                b[16 + l] |= (c >> 4) << j;
            }
        }
    }
}

/// `block_q6_K`: sixteen i8 scales (`d * sc`), codes -32..=31 stored plus 32 as a low nibble in
/// `ql` and two bits in `qh`.
fn q6_k(x: &[f32], b: &mut [u8]) {
    let scales: Vec<f32> = x.chunks_exact(16).map(|s| signed_max(s) / -32.0).collect();
    let max = scales.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let d = put_half(b, 208, max / 127.0);
    let id = inverse(d);
    for (is, &scale) in scales.iter().enumerate() {
        let sc = (scale * id).round().clamp(-128.0, 127.0) as i8;
        b[192 + is] = sc as u8;
        let inv = inverse(d * f32::from(sc));
        for i in 0..16 {
            // Value 128 n + 32 k + l (k = 0..4, l = 0..32) of the block is sub-block 8n + 2k + l / 16.
            let v = 16 * is + i;
            let (n, k, l) = (v / 128, v % 128 / 32, v % 32);
            let code = ((x[v] * inv).round().clamp(-32.0, 31.0) as i8 + 32) as u8;
            let ql = 64 * n + l + if k % 2 == 1 { 32 } else { 0 };
            b[ql] |= if k < 2 { code & 0xf } else { (code & 0xf) << 4 };
            b[128 + 32 * n + l] |= (code >> 4) << (2 * k);
        }
    }
}

/// The index of the IQ4 value (`IQ4_VALUES`) nearest `v`.
fn nearest_iq4(v: f32) -> u8 {
    (0..16)
        .min_by(|&a, &b| {
            (f32::from(IQ4_VALUES[a]) - v)
                .abs()
                .total_cmp(&(f32::from(IQ4_VALUES[b]) - v).abs())
        })
        .unwrap_or(8) as u8
}

/// 32 values as IQ4 codes of the scale `d`, their nibbles as a 32-value block's (value j low in
/// byte j, j + 16 high) in `qs`.
fn iq4_codes(x: &[f32], d: f32, qs: &mut [u8]) {
    let id = inverse(d);
    for j in 0..16 {
        qs[j] = nearest_iq4(x[j] * id) | nearest_iq4(x[j + 16] * id) << 4;
    }
}

/// The scale that puts `x`'s value of largest magnitude on the table's -127, as ggml's search
/// starts (without its refinement around that scale).
fn iq4_scale(x: &[f32]) -> f32 {
    signed_max(x) / -127.0
}

/// `block_iq4_nl`: one scale ([`iq4_scale`]), codes to the nearest table value.
fn iq4_nl(x: &[f32], b: &mut [u8]) {
    let d = put_half(b, 0, iq4_scale(x));
    iq4_codes(x, d, &mut b[2..18]);
}

/// `block_iq4_xs`: each sub-block's scale ([`iq4_scale`]) as a 6-bit multiple `ls - 32` of `d`,
/// which puts the sub-scale of largest magnitude on -32; codes against the scale stored.
fn iq4_xs(x: &[f32], b: &mut [u8]) {
    let scales: Vec<f32> = x.chunks_exact(32).map(iq4_scale).collect();
    let d = put_half(b, 0, signed_max(&scales) / -32.0);
    let id = inverse(d);
    let (mut scales_h, mut scales_l) = (0u16, [0u8; 4]);
    for (ib, (x, &scale)) in x.chunks_exact(32).zip(&scales).enumerate() {
        let ls = ((scale * id).round() as i32).clamp(-32, 31) + 32;
        scales_l[ib / 2] |= ((ls & 0xf) as u8) << (4 * (ib % 2));
        scales_h |= ((ls >> 4) as u16) << (2 * ib);
        iq4_codes(x, d * (ls - 32) as f32, &mut b[8 + 16 * ib..24 + 16 * ib]);
    }
    b[2..4].copy_from_slice(&scales_h.to_le_bytes());
    b[4..8].copy_from_slice(&scales_l);
}

/// The index of the FP4 value nearest `v` (in doubled units, as `MXFP4_VALUES`).
fn nearest_fp4(v: f32) -> u8 {
    const DOUBLED: [f32; 8] = [0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0];
    let mag = v.abs();
    let i = (0..8)
        .min_by(|&a, &b| (DOUBLED[a] - mag).abs().total_cmp(&(DOUBLED[b] - mag).abs()))
        .unwrap_or(0) as u8;
    if v < 0.0 && i != 0 {
        i | 8
    } else {
        i
    }
}

/// `block_mxfp4`: the power-of-two scale that puts the largest magnitude at FP4's 6 (or just
/// under), codes to the nearest FP4 value.
fn mxfp4(x: &[f32], b: &mut [u8]) {
    let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    // e - 127 = floor(log2(amax)) - 2: amax / 2^(e - 127) in [4, 8), codes up to 6 (12 doubled).
    let e = if amax > 0.0 {
        (amax.log2().floor() as i32 - 2 + 127).clamp(0, 254) as u8
    } else {
        0
    };
    b[0] = e;
    let inv_half = inverse(super::dequantize::e8m0_half(e));
    for j in 0..16 {
        let lo = nearest_fp4(x[j] * inv_half);
        let hi = nearest_fp4(x[j + 16] * inv_half);
        b[1 + j] = lo | (hi << 4);
    }
}

/// `block_nvfp4`: per sub-block of 16, the E4M3 scale nearest to the one that puts its largest
/// magnitude at FP4's 6 (codes 0..0x7f, bit 7 clear), codes to the nearest FP4 value.
fn nvfp4(x: &[f32], b: &mut [u8]) {
    use super::dequantize::ue4m3_half;
    let (scales, codes) = b.split_at_mut(4);
    for ((x, qs), scale) in x.chunks_exact(16).zip(codes.chunks_exact_mut(8)).zip(scales) {
        let amax = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        // The doubled FP4 values' 12 at amax: half the scale is amax / 12.
        let want = amax / 12.0;
        let code = (0u8..0x7f)
            .min_by(|&a, &c| (ue4m3_half(a) - want).abs().total_cmp(&(ue4m3_half(c) - want).abs()))
            .unwrap_or(0);
        *scale = code;
        let inv = inverse(ue4m3_half(code));
        for (j, q) in qs.iter_mut().enumerate() {
            *q = nearest_fp4(x[j] * inv) | (nearest_fp4(x[j + 8] * inv) << 4);
        }
    }
}
