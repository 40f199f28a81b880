//! Reading a ggml block format ([`QuantType`]) on the GPU: one value at a time, each the f32
//! arithmetic of ggml's `dequantize_row_*` in its order, as [`crate::quant::dequantize`]
//! computes it, each product and sum rounded on its own (`NoContraction`: a fused multiply-add
//! would round once and differ from ggml). The dequantizing pass ([`super::dequant`]) and the
//! matrix-vector kernel on quantized weights ([`super::gemv`]) both take values from here, a
//! unit of [`UNIT`] values at a time.

use super::builder::{BuildResult, ModuleBuilder};
use crate::quant::QuantType;
use rspirv::spirv::{Decoration, Word};

mod code_table;
mod iq4;
mod packed;
mod reader;
pub(super) use code_table::{code_values, CodeTable, ENTRIES as CODE_TABLE_ENTRIES};
pub(super) use packed::{packed, Packed};
pub(super) use reader::Block;
use reader::{byte_at, byte_of_word, field, half_at, word_at};

/// Values per unit: the 32 values one invocation dequantizes at a time, a block of the 32-value
/// formats or a sub-block of 32 of the 256-value ones.
pub const UNIT: u32 = 32;

/// Unit `u` of a row of blocks of `layout` ([`Block::nth`]) whose first byte is `row` (in the
/// 32-bit words `words`): its block, and its index `s` within the block (0 for 32-value
/// blocks).
pub(super) fn unit(
    b: &mut ModuleBuilder,
    layout: (QuantType, bool),
    words: (Word, Option<Word>),
    row: Word,
    u: Word,
) -> BuildResult<(Block, Word)> {
    let per_block = layout.0.block_values() as u32 / UNIT;
    let block = b.div_u(u, per_block)?;
    let s = b.mod_u(u, per_block)?;
    Ok((Block::nth(b, layout, words, row, block)?, s))
}

/// Value `32 s + l` of the block (`s` the unit, a u32 id; `l` < 32 a literal, so everything
/// that depends on it alone is folded), as f32: one arm per format, each the formula of
/// [`crate::quant::dequantize`]'s function for it, value by value.
pub(super) fn value(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    // The nibble of a 32-value block's byte `l % 16` that holds value l: low for l < 16.
    let nibble = |b: &mut ModuleBuilder, qs: u32| -> BuildResult<Word> {
        let x = byte_at(b, blk, None, qs + l % 16)?;
        let shift = b.c_u32(4 * (l / 16));
        bits(b, x, shift, 0xf)
    };
    match q {
        QuantType::Q8_0 => {
            let d = half_at(b, blk, 0)?;
            let x = byte_at(b, blk, None, 2 + l)?;
            // The i8 plus 128 is the byte with its top bit flipped.
            let c128 = b.c_u32(0x80);
            let t_u32 = b.t_u32();
            let v = b.b.bitwise_xor(t_u32, None, x, c128)?;
            let v = code_f32(b, v, 128)?;
            fmul(b, v, d)
        }
        QuantType::Q4_0 => {
            let d = half_at(b, blk, 0)?;
            let v = nibble(b, 2)?;
            let v = code_f32(b, v, 8)?;
            fmul(b, v, d)
        }
        QuantType::Mxfp4 => {
            let d = blk.once(b, ("e8m0", 0), |b| {
                let e = byte_at(b, blk, None, 0)?;
                e8m0_half(b, e)
            })?;
            let v = nibble(b, 1)?;
            let v = fp4(b, v)?;
            let v = code_f32(b, v, 12)?;
            fmul(b, v, d)
        }
        QuantType::Q4_1 => {
            let (d, m) = (half_at(b, blk, 0)?, half_at(b, blk, 2)?);
            let v = nibble(b, 4)?;
            let v = code_f32(b, v, 0)?;
            let v = fmul(b, v, d)?;
            fadd(b, v, m)
        }
        QuantType::Q5_0 | QuantType::Q5_1 => {
            let plus = q == QuantType::Q5_1;
            let (qh, qs) = if plus { (4, 8) } else { (2, 6) };
            let low = nibble(b, qs)?;
            // The fifth bit: bit l % 8 of byte qh + l / 8, put at 16.
            let h = byte_at(b, blk, None, qh + l / 8)?;
            let shift = b.c_u32(l % 8);
            let h = bits(b, h, shift, 1)?;
            let h = b.mul_u(h, 16)?;
            let t_u32 = b.t_u32();
            let v = b.b.bitwise_or(t_u32, None, low, h)?;
            let d = half_at(b, blk, 0)?;
            if plus {
                let m = half_at(b, blk, 2)?;
                let v = code_f32(b, v, 0)?;
                let v = fmul(b, v, d)?;
                fadd(b, v, m)
            } else {
                let v = code_f32(b, v, 16)?;
                fmul(b, v, d)
            }
        }
        QuantType::Q2K => q2_k(b, blk, s, l),
        QuantType::Q3K => q3_k(b, blk, s, l),
        QuantType::Q4K | QuantType::Q5K => q45_k(b, q, blk, s, l),
        QuantType::Q6K => q6_k(b, blk, s, l),
        QuantType::Iq4Nl | QuantType::Iq4Xs => iq4::value(b, q, blk, s, l),
        QuantType::Nvfp4 => nvfp4(b, blk, s, l),
    }
}

/// `block_nvfp4`: value `32 s + l` is in sub-block `2 s + h` (`h = l / 16`), value `j = l % 16`
/// of it the nibble `j / 8` of byte `4 + 16 s + 8 h + j % 8`, times that sub-block's scale.
fn nvfp4(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let (h, j) = (l / 16, l % 16);
    let at = nvfp4_unit(b, blk, s)?;
    let x = byte_at(b, blk, Some(at), 4 + 8 * h + j % 8)?;
    let shift = b.c_u32(4 * (j / 8));
    let v = bits(b, x, shift, 0xf)?;
    let v = fp4(b, v)?;
    let v = code_f32(b, v, 12)?;
    let d = nvfp4_scale(b, blk, s, h)?;
    fmul(b, v, d)
}

/// Where NVFP4's unit `s` has its codes past byte 4, `16 s`; once per unit.
fn nvfp4_unit(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<Word> {
    blk.once(b, ("nvfp4 unit", 0), |b| b.mul_u(s, 16).map(|at| blk.on_vectors(at)))
}

/// Half NVFP4's scale of half `h` of unit `s` (the E4M3 byte `2 s + h`), once per unit.
fn nvfp4_scale(b: &mut ModuleBuilder, blk: &Block, s: Word, h: u32) -> BuildResult<Word> {
    blk.once(b, ("nvfp4 scale", h), |b| {
        let x = half_unit_byte(b, blk, s, h, 0)?;
        ue4m3_half(b, x)
    })
}

/// `block_q2_K` as the device holds it ([`QuantType::device_block`]): value `32 s + l` is bits
/// `2 (l / 8)` of byte `16 + 8 s + l % 8`, times `d * (scale & 15)`, less `dmin * (scale >> 4)`,
/// with `scales[2 s + l / 16]`.
fn q2_k(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let v = two_bit_code(b, blk, s, 16, l)?;
    let (dl, ml) = (q2_k_scale(b, blk, s, l, true)?, q2_k_scale(b, blk, s, l, false)?);
    let v = code_f32(b, v, 0)?;
    let v = fmul(b, dl, v)?;
    fsub(b, v, ml)
}

/// Byte `2 s + h` of the bytes from `first` (a multiple of 4) that hold a byte per half unit
/// (Q2_K's and Q6_K's scales): in the word at `first + 4 (s / 2)`, at bit `16 (s % 2) + 8 h`.
fn half_unit_byte(b: &mut ModuleBuilder, blk: &Block, s: Word, h: u32, first: u32) -> BuildResult<Word> {
    let at = blk.once(b, ("half-unit bytes at", 0), |b| {
        let pair = b.div_u(s, 2)?;
        b.mul_u(pair, 4).map(|at| blk.on_words(at))
    })?;
    let within = blk.once(b, ("half-unit byte shift", h), |b| {
        let odd = b.mod_u(s, 2)?;
        let shift = b.mul_u(odd, 16)?;
        b.add_u(shift, 8 * h)
    })?;
    byte_of_word(b, blk, (Some(at), first / 4), within)
}

/// Q2_K's `d * (scale & 15)` (`scale`) or `dmin * (scale >> 4)` for value `32 s + l`
/// (`scales[2 s + l / 16]`), once per unit.
fn q2_k_scale(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32, scale: bool) -> BuildResult<Word> {
    blk.once(b, ("q2k scale", 2 * (l / 16) + u32::from(scale)), |b| {
        let sc = half_unit_byte(b, blk, s, l / 16, 0)?;
        let shift = b.c_u32(if scale { 0 } else { 4 });
        let x = bits(b, sc, shift, 0xf)?;
        let x = u2f(b, x)?;
        let d = half_at(b, blk, if scale { 80 } else { 82 })?;
        fmul(b, d, x)
    })
}

/// `block_q3_K` as the device holds it ([`QuantType::device_block`]): value `32 s + l` is bits
/// `2 (l / 8)` of byte `8 s + l % 8`, less 4 where bit `l / 4` of byte `64 + 4 s + l % 4` is
/// clear, times `d * (scale - 32)` with the 6-bit scale `2 s + l / 16`.
fn q3_k(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let low = two_bit_code(b, blk, s, 0, l)?;
    let at = q3_k_high_unit(b, blk, s)?;
    let set = byte_at(b, blk, Some(at), 64 + l % 4)?;
    let shift = b.c_u32(l / 4);
    let set = bits(b, set, shift, 1)?;
    // low - 4 + 4 * set, as code - 4.
    let plus = b.mul_u(set, 4)?;
    let v = b.b.i_add(t_u32, None, low, plus)?;
    let dl = q3_k_scale(b, blk, s, l / 16)?;
    let v = code_f32(b, v, 4)?;
    fmul(b, dl, v)
}

/// Where Q3_K's unit `s` has its bytes of high bits past byte 64, `4 s`; once per unit.
fn q3_k_high_unit(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<Word> {
    blk.once(b, ("q3k high", 0), |b| b.mul_u(s, 4).map(|at| blk.on_words(at)))
}

/// Q3_K's `d * (scale - 32)` of half `h` of unit `s` (6-bit scale `i = 2 s + h`) as the device
/// holds the scales ([`QuantType::device_block`]: the low four bits at `4 (i % 8)` of the word
/// at `96 + 4 (i / 8)`, the top two at `2 i` of the word at 104), once per unit.
fn q3_k_scale(b: &mut ModuleBuilder, blk: &Block, s: Word, h: u32) -> BuildResult<Word> {
    blk.once(b, ("q3k dl", h), |b| {
        // i / 8 = s / 4 and 4 (i % 8) = 8 (s % 4) + 4 h, for either half.
        let at = blk.once(b, ("q3k low at", 0), |b| {
            let word = b.div_u(s, 4)?;
            b.mul_u(word, 4).map(|at| blk.on_words(at))
        })?;
        let low_shift = blk.once(b, ("q3k low shift", h), |b| {
            let i = b.mod_u(s, 4)?;
            let i = b.mul_u(i, 8)?;
            b.add_u(i, 4 * h)
        })?;
        let top_shift = blk.once(b, ("q3k top shift", h), |b| {
            let i = b.mul_u(s, 4)?;
            b.add_u(i, 2 * h)
        })?;
        let scale = six_bits(b, blk, ((Some(at), 96), low_shift), (104, top_shift))?;
        let scale = b.add_u(scale, u32::MAX - 31)?;
        let d = half_at(b, blk, 108)?;
        let scale = s2f(b, scale)?;
        fmul(b, d, scale)
    })
}

/// A 6-bit scale as the device holds Q3_K's, Q4_K's and Q5_K's ([`QuantType::device_block`]):
/// its low four bits at bit `low_shift` of the word at `low` (a run-time part and a byte),
/// its top two at bit `top_shift` of the word at byte `top`.
fn six_bits(
    b: &mut ModuleBuilder,
    blk: &Block,
    (low, low_shift): ((Option<Word>, u32), Word),
    (top, top_shift): (u32, Word),
) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let low = word_at(b, blk, low.0, low.1)?;
    let low = bits(b, low, low_shift, 0xf)?;
    let top = word_at(b, blk, None, top)?;
    let top = bits(b, top, top_shift, 3)?;
    let top = b.mul_u(top, 16)?;
    b.b.bitwise_or(t_u32, None, low, top)
}

/// Q2_K's and Q3_K's 2-bit code of value `32 s + l` as the device holds them (unit `s`'s 8 bytes
/// at `first + 8 s`, byte `l % 8` at bit `2 (l / 8)`).
fn two_bit_code(b: &mut ModuleBuilder, blk: &Block, s: Word, first: u32, l: u32) -> BuildResult<Word> {
    let at = two_bit_unit(b, blk, s)?;
    let x = byte_at(b, blk, Some(at), first + l % 8)?;
    let shift = b.c_u32(2 * (l / 8));
    bits(b, x, shift, 3)
}

/// Where Q2_K's and Q3_K's unit `s` has its 2-bit codes past their start, `8 s`; once per unit.
fn two_bit_unit(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<Word> {
    blk.once(b, ("2-bit at", 0), |b| b.mul_u(s, 8).map(|at| blk.on_words(at)))
}

/// `block_q4_K` / `block_q5_K` as the device holds them ([`QuantType::device_block`]): value
/// `32 s + l` is nibble `l / 16` of byte `16 s + l % 16` of `qs` (with Q5_K's bit `s` of
/// `qh[l]` as 16 above it), times `d * scale` less `dmin * min` of unit `s`.
fn q45_k(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let five = q == QuantType::Q5K;
    let at = nibble_unit(b, blk, s)?;
    let shift = b.c_u32(4 * (l / 16));
    let mut v = field(b, blk, (Some(at), if five { 48 } else { 16 } + l % 16), shift, 0xf)?;
    if five {
        let h = field(b, blk, (None, 16 + l), s, 1)?;
        let h = b.mul_u(h, 16)?;
        v = b.b.i_add(t_u32, None, v, h)?;
    }
    let (d1, m1) = (scale_min_k4(b, blk, s, true)?, scale_min_k4(b, blk, s, false)?);
    let v = code_f32(b, v, 0)?;
    let v = fmul(b, d1, v)?;
    fsub(b, v, m1)
}

/// Where unit `s` of Q4_K, Q5_K and IQ4_XS has its 16 bytes of nibbles past the start of `qs`,
/// `16 s`; once per unit.
fn nibble_unit(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<Word> {
    blk.once(b, ("q45k at", 0), |b| b.mul_u(s, 16).map(|at| blk.on_vectors(at)))
}

/// Unit `s`'s `d * scale` (`scale`) or `dmin * min` of a Q4_K/Q5_K block as the device holds its
/// scales ([`QuantType::device_block`]: the low four bits of unit `s`'s at bit `4 s` of the
/// word at byte 4 (scales) or 8 (minima), the top two at `2 s` (scales) or `16 + 2 s` (minima)
/// of the word at 12), once per unit.
fn scale_min_k4(b: &mut ModuleBuilder, blk: &Block, s: Word, scale: bool) -> BuildResult<Word> {
    blk.once(b, ("q45k scale", u32::from(scale)), |b| {
        let low_at = blk.once(b, ("q45k low shift", 0), |b| b.mul_u(s, 4))?;
        let top_at = blk.once(b, ("q45k top shift", u32::from(scale)), |b| {
            let at = b.mul_u(s, 2)?;
            if scale {
                Ok(at)
            } else {
                b.add_u(at, 16)
            }
        })?;
        let x = six_bits(b, blk, ((None, if scale { 4 } else { 8 }), low_at), (12, top_at))?;
        let x = u2f(b, x)?;
        let d = half_at(b, blk, if scale { 0 } else { 2 })?;
        fmul(b, d, x)
    })
}

/// `block_q6_K` as the device holds it ([`QuantType::device_block`]): value `32 s + l` is
/// nibble `l / 16` of byte `24 s + l % 16` with bits `2 (l / 8)` of byte `24 s + 16 + l % 8`
/// above it, less 32, times `d * scales[2 s + l / 16]` (signed).
fn q6_k(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let at = q6_k_unit(b, blk, s)?;
    let low = byte_at(b, blk, Some(at), l % 16)?;
    let shift = b.c_u32(4 * (l / 16));
    let low = bits(b, low, shift, 0xf)?;
    let high = byte_at(b, blk, Some(at), 16 + l % 8)?;
    let shift = b.c_u32(2 * (l / 8));
    let high = bits(b, high, shift, 3)?;
    let high = b.mul_u(high, 16)?;
    let v = b.b.bitwise_or(t_u32, None, low, high)?;
    let scale = q6_k_scale(b, blk, s, l / 16)?;
    let v = code_f32(b, v, 32)?;
    fmul(b, scale, v)
}

/// Where Q6_K's unit `s` has its codes, `24 s` (a multiple of 8); once per unit.
fn q6_k_unit(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<Word> {
    blk.once(b, ("q6k unit", 0), |b| b.mul_u(s, 24).map(|at| blk.on_words(at)))
}

/// Q6_K's `d * scales[2 s + h]` (signed) of half `h` of unit `s`, once per unit.
fn q6_k_scale(b: &mut ModuleBuilder, blk: &Block, s: Word, h: u32) -> BuildResult<Word> {
    blk.once(b, ("q6k scale", h), |b| {
        let sc = half_unit_byte(b, blk, s, h, 192)?;
        let sc = signed_byte(b, sc)?;
        let d = half_at(b, blk, 208)?;
        let sc = s2f(b, sc)?;
        fmul(b, d, sc)
    })
}

/// An FP4 (E2M1) code doubled, as ggml's `kvalues_mxfp4` holds it, plus 12 (so 0..=24, for
/// [`code_f32`]): magnitudes 0, 1, 2, 3, 4, 6, 8, 12 (`c` for c < 4, else
/// `(2 + c % 2) << (c / 2 - 1)`), negative with bit 3.
fn fp4(b: &mut ModuleBuilder, code: Word) -> BuildResult<Word> {
    let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
    let (c0, c4, c7, c8) = (b.c_u32(0), b.c_u32(4), b.c_u32(7), b.c_u32(8));
    let c = b.b.bitwise_and(t_u32, None, code, c7)?;
    let small = b.b.u_less_than(t_bool, None, c, c4)?;
    let odd = b.mod_u(c, 2)?;
    let base = b.add_u(odd, 2)?;
    let e = b.div_u(c, 2)?;
    let e = b.add_u(e, u32::MAX)?;
    let e = b.b.select(t_u32, None, small, c0, e)?;
    let big = b.b.shift_left_logical(t_u32, None, base, e)?;
    let mag = b.b.select(t_u32, None, small, c, big)?;
    let negative = b.b.u_greater_than_equal(t_bool, None, code, c8)?;
    let c12 = b.c_u32(12);
    let below = b.b.i_sub(t_u32, None, c12, mag)?;
    let above = b.b.i_add(t_u32, None, c12, mag)?;
    b.b.select(t_u32, None, negative, below, above)
}

/// Half the E8M0 scale `2^(e - 127)` as f32 (ggml's `GGML_E8M0_TO_FP32_HALF`): the bits
/// `(e - 1) << 23`, or `0x200000 << e` (subnormal) for e < 2.
fn e8m0_half(b: &mut ModuleBuilder, e: Word) -> BuildResult<Word> {
    let (t_u32, t_bool, t_f32) = (b.t_u32(), b.t_bool(), b.t_f32());
    let (c2, c23, least) = (b.c_u32(2), b.c_u32(23), b.c_u32(0x0020_0000));
    let tiny = b.b.u_less_than(t_bool, None, e, c2)?;
    let sub = b.b.shift_left_logical(t_u32, None, least, e)?;
    let em1 = b.add_u(e, u32::MAX)?;
    let normal = b.b.shift_left_logical(t_u32, None, em1, c23)?;
    let bits = b.b.select(t_u32, None, tiny, sub, normal)?;
    b.b.bitcast(t_f32, None, bits)
}

/// Half the unsigned E4M3 scale `x` as f32 (ggml's `ggml_ue4m3_to_fp32`, as
/// [`crate::quant::dequantize`] computes it): the bits `((x & 0x7f) << 20) + (119 << 23)` for
/// exponents above 0 (`(1 + man / 8) 2^(exp - 8)`), `man 2^-10` for exponent 0, and 0 for 0x7f.
fn ue4m3_half(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let (t_u32, t_bool, t_f32) = (b.t_u32(), b.t_bool(), b.t_f32());
    let (c7, c8, c20, c7f) = (b.c_u32(7), b.c_u32(8), b.c_u32(20), b.c_u32(0x7f));
    let low = b.b.bitwise_and(t_u32, None, x, c7f)?;
    let up = b.b.shift_left_logical(t_u32, None, low, c20)?;
    let normal = b.add_u(up, 119 << 23)?;
    let normal = b.b.bitcast(t_f32, None, normal)?;
    let man = b.b.bitwise_and(t_u32, None, x, c7)?;
    let man = code_f32(b, man, 0)?;
    let tiny = b.c_bits(t_f32, (1.0f32 / 1024.0).to_bits());
    let sub = fmul(b, man, tiny)?;
    let exp_zero = b.b.u_less_than(t_bool, None, low, c8)?;
    let v = b.b.select(t_f32, None, exp_zero, sub, normal)?;
    let nan = b.b.i_equal(t_bool, None, x, c7f)?;
    let zero = b.c_bits(t_f32, 0);
    b.b.select(t_f32, None, nan, zero, v)
}

/// `(x >> shift) & mask`.
fn bits(b: &mut ModuleBuilder, x: Word, shift: Word, mask: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let s = b.b.shift_right_logical(t_u32, None, x, shift)?;
    let m = b.c_u32(mask);
    b.b.bitwise_and(t_u32, None, s, m)
}

/// A byte (0..=255) as the i8 it holds, sign-extended (i32 bits).
fn signed_byte(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let c24 = b.c_u32(24);
    let up = b.b.shift_left_logical(t_u32, None, x, c24)?;
    b.b.shift_right_arithmetic(t_u32, None, up, c24)
}

/// `code - bias` as f32, exactly, for a code below 2^23: the code's bits under the exponent of
/// 2^23 make the float `2^23 + code`, and subtracting `2^23 + bias` leaves the difference exactly
/// (both are integers of one binade). Two full-rate operations where an integer conversion runs
/// at a quarter of the rate on NVIDIA's SMs, once per value: the decode kernel's largest cost.
fn code_f32(b: &mut ModuleBuilder, code: Word, bias: u32) -> BuildResult<Word> {
    let (t_u32, t_f32) = (b.t_u32(), b.t_f32());
    let magic = b.c_u32(0x4b00_0000);
    let bits = b.b.bitwise_or(t_u32, None, code, magic)?;
    let f = b.b.bitcast(t_f32, None, bits)?;
    let offset = b.c_bits(t_f32, (8_388_608.0f32 + bias as f32).to_bits());
    fsub(b, f, offset)
}

fn s2f(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    b.b.convert_s_to_f(t_f32, None, x)
}

fn u2f(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    b.b.convert_u_to_f(t_f32, None, x)
}

/// `x * y`, rounded on its own.
fn fmul(b: &mut ModuleBuilder, x: Word, y: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let r = b.b.f_mul(t_f32, None, x, y)?;
    b.b.decorate(r, Decoration::NoContraction, []);
    Ok(r)
}

/// `x + y`, rounded on its own.
fn fadd(b: &mut ModuleBuilder, x: Word, y: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let r = b.b.f_add(t_f32, None, x, y)?;
    b.b.decorate(r, Decoration::NoContraction, []);
    Ok(r)
}

/// `x - y`, rounded on its own.
fn fsub(b: &mut ModuleBuilder, x: Word, y: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let r = b.b.f_sub(t_f32, None, x, y)?;
    b.b.decorate(r, Decoration::NoContraction, []);
    Ok(r)
}
