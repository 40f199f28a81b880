//! A unit's weight codes four to a word, for packed 8-bit dot products with activations rounded
//! to 8 bits ([`crate::kernel::act8`]): instead of 32 values in f32, each word's bytes are the
//! codes of four consecutive values, and an affine map per half unit (16 values) turns a sum of
//! code-times-activation products back into the values' sum, `a * sum(code x) + b * sum(x)`.
//! Every format's map is its `dequantize_row_*` formula with the scale and offset taken out of
//! the sum (Q4_0: `d (code - 8)` is `a = d`, `b = -8 d`). MXFP4's and NVFP4's codes stand for
//! values that are not an affine map of them, nor are IQ4_NL's and IQ4_XS's (a table's): their
//! words hold the values themselves, as signed bytes.

use super::{
    bits, fmul, half_at, q2_k_scale, q3_k_scale, q6_k_scale, q6_k_unit, scale_min_k4, two_bit_unit, word_at, Block,
    CodeTable,
};
use crate::kernel::builder::{BuildResult, ModuleBuilder};
use crate::quant::QuantType;
use rspirv::spirv::Word;

/// A unit's codes and the map back to its values: value `l` of half `h = l / 16` is
/// `a[h] * code_l + b[h]` (`b` none where it is zero).
pub(in crate::kernel) struct Packed {
    /// Word `k`: the codes of values `4k..4k + 4`, one a byte, value `4k` lowest.
    pub words: [Word; 8],
    /// Whether the codes are signed bytes (Q8_0, MXFP4, NVFP4) rather than unsigned ones.
    pub signed: bool,
    /// Words of unsigned bytes whose dot products with X's codes add to `words`' (the FP4
    /// formats beside one row of X: its negative values one below, the ones here).
    pub plus: Option<[Word; 8]>,
    /// The scale of each half.
    pub a: [Word; 2],
    /// The offset of each half.
    pub b: [Option<Word>; 2],
    /// Whether both halves share `a` and `b` (the formats with one scale per 32 values).
    pub shared: bool,
}

/// Unit `s` of `blk` as [`Packed`], for products with `x_rows` rows of X.
pub(in crate::kernel) fn packed(
    b: &mut ModuleBuilder,
    q: QuantType,
    blk: &Block,
    s: Word,
    (x_rows, table): (u32, Option<CodeTable>),
) -> BuildResult<Packed> {
    match q {
        QuantType::Q8_0 => {
            let words = each(|k| word_at(b, blk, None, 2 + 4 * k))?;
            let d = half_at(b, blk, 0)?;
            Ok(one_scale(words, true, d, None))
        }
        QuantType::Q4_0 | QuantType::Q4_1 => {
            let words = nibble_words(b, blk, (None, if q == QuantType::Q4_0 { 2 } else { 4 }))?;
            let d = half_at(b, blk, 0)?;
            let offset = match q {
                QuantType::Q4_0 => scaled(b, d, -8.0)?,
                _ => half_at(b, blk, 2)?,
            };
            Ok(one_scale(words, false, d, Some(offset)))
        }
        QuantType::Q5_0 | QuantType::Q5_1 => q5(b, q, blk),
        QuantType::Q4K | QuantType::Q5K => q45_k(b, q, blk, s),
        QuantType::Q6K => q6_k(b, blk, s),
        QuantType::Q2K | QuantType::Q3K => q23_k(b, q, blk, s),
        QuantType::Mxfp4 | QuantType::Nvfp4 => fp4(b, q, blk, s, x_rows),
        QuantType::Iq4Nl | QuantType::Iq4Xs => iq4(b, q, blk, s, table),
    }
}

/// Both halves sharing one scale `a` and offset `b_` (the formats with one scale per 32 values).
fn one_scale(words: [Word; 8], signed: bool, a: Word, b_: Option<Word>) -> Packed {
    Packed {
        words,
        signed,
        plus: None,
        a: [a; 2],
        b: [b_; 2],
        shared: true,
    }
}

/// Q5_0's and Q5_1's unit: its nibbles with each value's fifth bit from `qh` above them.
fn q5(b: &mut ModuleBuilder, q: QuantType, blk: &Block) -> BuildResult<Packed> {
    let plus = q == QuantType::Q5_1;
    // Q5_0: qh at byte 2, qs at 6; Q5_1: qh at 4, qs at 8.
    let (qh, qs) = if plus { (4, 8) } else { (2, 6) };
    let low = nibble_words(b, blk, (None, qs))?;
    let high = word_at(b, blk, None, qh)?;
    let mut words = low;
    for (k, w) in words.iter_mut().enumerate() {
        // Bit l of qh is value l's fifth bit: four of them spread to the bytes' bit 4.
        let bits = shifted(b, high, 4 * k as u32, 0xf)?;
        let bits = spread4(b, bits)?;
        let bits = shl(b, bits, 4)?;
        *w = or(b, *w, bits)?;
    }
    let d = half_at(b, blk, 0)?;
    let offset = if plus {
        half_at(b, blk, 2)?
    } else {
        scaled(b, d, -16.0)?
    };
    Ok(one_scale(words, false, d, Some(offset)))
}

/// Q4_K's and Q5_K's unit `s` (Q5_K's fifth bits from `qh` above the nibbles).
fn q45_k(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word) -> BuildResult<Packed> {
    // Regrouped on upload (`QuantType::device_block`): the unit's nibbles as a
    // 32-value block's.
    let five = q == QuantType::Q5K;
    let at = super::nibble_unit(b, blk, s)?;
    let mut words = nibble_words(b, blk, (Some(at), if five { 48 } else { 16 }))?;
    if five {
        for (k, w) in words.iter_mut().enumerate() {
            let h = word_at(b, blk, None, 16 + 4 * k as u32)?;
            let h = bits(b, h, s, 0x0101_0101)?;
            let h = shl(b, h, 4)?;
            *w = or(b, *w, h)?;
        }
    }
    let (d1, m1) = (scale_min_k4(b, blk, s, true)?, scale_min_k4(b, blk, s, false)?);
    let offset = scaled(b, m1, -1.0)?;
    Ok(one_scale(words, false, d1, Some(offset)))
}

/// Q6_K's unit `s`: its low nibbles with the high pairs above them.
fn q6_k(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<Packed> {
    // Regrouped on upload (`QuantType::device_block`): the unit's low nibbles as a
    // 32-value block's, then its high bit pairs, two words holding four pairs a byte.
    let at = q6_k_unit(b, blk, s)?;
    let high = [word_at(b, blk, Some(at), 16)?, word_at(b, blk, Some(at), 20)?];
    let mut words = [0; 8];
    for k in 0..4 {
        let low = word_at(b, blk, Some(at), 4 * k)?;
        for half in 0..2 {
            let i = (4 * half + k) as usize;
            let low = shifted(b, low, 4 * half, 0x0f0f_0f0f)?;
            // Word i's values 4i.. have their pairs in high[i % 2] at bit 2 (i / 2) of
            // each byte; they go to bits 4 and 5.
            let at = 2 * (i as u32 / 2);
            let pair = if at < 4 {
                let up = shl(b, high[i % 2], 4 - at)?;
                shifted(b, up, 0, 0x3030_3030)?
            } else {
                shifted(b, high[i % 2], at - 4, 0x3030_3030)?
            };
            words[i] = or(b, low, pair)?;
        }
    }
    let a = [q6_k_scale(b, blk, s, 0)?, q6_k_scale(b, blk, s, 1)?];
    let offsets = [scaled(b, a[0], -32.0)?, scaled(b, a[1], -32.0)?];
    Ok(halves(words, a, offsets))
}

/// Q2_K's and Q3_K's unit `s` (Q3_K's high bits adding 4 to the codes).
fn q23_k(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word) -> BuildResult<Packed> {
    // Regrouped on upload (`QuantType::device_block`): the unit's 2-bit codes in two
    // words, four pairs a byte; Q3_K's high bits in a word of their own, byte i's
    // bit k that of value 4k + i.
    let three = q == QuantType::Q3K;
    let at = two_bit_unit(b, blk, s)?;
    let first = if three { 0 } else { 16 };
    let pairs = [word_at(b, blk, Some(at), first)?, word_at(b, blk, Some(at), first + 4)?];
    let high = if three {
        let at = super::q3_k_high_unit(b, blk, s)?;
        Some(word_at(b, blk, Some(at), 64)?)
    } else {
        None
    };
    let words = each(|k| {
        // Values 4k.. have their pairs in pairs[k % 2] at bit 2 (k / 2) of each byte.
        let low = shifted(b, pairs[k as usize % 2], 2 * (k / 2), 0x0303_0303)?;
        let Some(high) = high else {
            return Ok(low);
        };
        // A set bit adds 4 to the code (the value is code - 4).
        let h = shifted(b, high, k, 0x0101_0101)?;
        let h = shl(b, h, 2)?;
        or(b, low, h)
    })?;
    let (a, offsets) = if three {
        let a = [q3_k_scale(b, blk, s, 0)?, q3_k_scale(b, blk, s, 1)?];
        (a, [scaled(b, a[0], -4.0)?, scaled(b, a[1], -4.0)?])
    } else {
        let a = [q2_k_scale(b, blk, s, 0, true)?, q2_k_scale(b, blk, s, 16, true)?];
        let m = [q2_k_scale(b, blk, s, 0, false)?, q2_k_scale(b, blk, s, 16, false)?];
        (a, [scaled(b, m[0], -1.0)?, scaled(b, m[1], -1.0)?])
    };
    Ok(halves(words, a, offsets))
}

/// MXFP4's or NVFP4's unit `s`: its values as signed bytes (beside one row of X, apart from
/// their signs), under MXFP4's one scale or NVFP4's two (one per sub-block of 16).
fn fp4(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, x_rows: u32) -> BuildResult<Packed> {
    // Beside one row of X, a negative value's byte is !magnitude (one below it, so -0
    // stays in its byte) and a second dot product adds the ones back, which costs less
    // than negating in place (h200-41-4: one token 31.1 -> 23.8 us); beside more, each
    // row would pay for that product (eight tokens 60.2 -> 82.4 us).
    let apart = x_rows == 1;
    let nv = q == QuantType::Nvfp4;
    // MXFP4's 16 bytes of codes follow its scale; NVFP4's unit has 16 of its 32 after four.
    let (at, first) = match nv {
        true => (Some(super::nvfp4_unit(b, blk, s)?), 4),
        false => (None, 1),
    };
    let (mut words, mut plus) = ([0; 8], [0; 8]);
    for k in 0..4 {
        let codes = word_at(b, blk, at, first + 4 * k)?;
        let magnitudes = fp4_magnitudes(b, codes)?;
        let signs = shifted(b, codes, 3, 0x1111_1111)?;
        for (high, shift) in [(0, 0), (1, 4)] {
            let magnitude = shifted(b, magnitudes, shift, 0x0f0f_0f0f)?;
            let sign = shifted(b, signs, shift, 0x0101_0101)?;
            // MXFP4: low nibbles are values 4k.., high ones 16 + 4k..; NVFP4: word k holds
            // bytes 4 (k % 2).. of sub-block k / 2, whose high nibbles are its values 8 on.
            let i = match nv {
                true => 4 * (k / 2) + 2 * high + k % 2,
                false => 4 * high + k,
            };
            (words[i as usize], plus[i as usize]) = signed_bytes(b, magnitude, sign, apart)?;
        }
    }
    let a = match nv {
        true => [super::nvfp4_scale(b, blk, s, 0)?, super::nvfp4_scale(b, blk, s, 1)?],
        false => {
            let d = blk.once(b, ("e8m0", 0), |b| {
                let e = super::byte_at(b, blk, None, 0)?;
                super::e8m0_half(b, e)
            })?;
            [d; 2]
        }
    };
    Ok(Packed {
        words,
        signed: true,
        plus: apart.then_some(plus),
        a,
        b: [None; 2],
        shared: !nv,
    })
}

/// Four magnitudes (0..=12, one a byte) with their signs (0 or 1, one a byte) as the signed
/// bytes of their values, or (`apart`) of their values less the signs, and the signs to add
/// back. In place, a byte is negated only where it is not zero: `(m ^ 0xff) + 1` of a zero would
/// carry into the next byte.
fn signed_bytes(b: &mut ModuleBuilder, magnitude: Word, sign: Word, apart: bool) -> BuildResult<(Word, Word)> {
    let t_u32 = b.t_u32();
    let negate = if apart {
        sign
    } else {
        // Nonzero: 127 + m reaches bit 7 (m <= 12: no byte carries).
        let nonzero = b.add_u(magnitude, 0x7f7f_7f7f)?;
        let nonzero = shifted(b, nonzero, 7, 0x0101_0101)?;
        b.b.bitwise_and(t_u32, None, sign, nonzero)?
    };
    let flip = b.mul_u(negate, 0xff)?;
    let flipped = b.b.bitwise_xor(t_u32, None, magnitude, flip)?;
    if apart {
        return Ok((flipped, sign));
    }
    Ok((b.b.i_add(t_u32, None, flipped, negate)?, sign))
}

/// The magnitudes of eight FP4 (E2M1) codes, one a nibble, as ggml's `kvalues_mxfp4` holds
/// them doubled (0, 1, 2, 3, 4, 6, 8, 12: each fits its nibble), all eight at once: with `m`
/// the code's low three bits and `h = m >> 2`, the magnitude is `m + h (m & 3) + 2 [m == 7]`.
/// No nibble's sum reaches the next (at most 7 + 3 + 2).
fn fp4_magnitudes(b: &mut ModuleBuilder, c: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let and = |b: &mut ModuleBuilder, x: Word, y: Word| b.b.bitwise_and(t_u32, None, x, y);
    let m = shifted(b, c, 0, 0x7777_7777)?;
    let h = shifted(b, c, 2, 0x1111_1111)?;
    let low = shifted(b, c, 0, 0x3333_3333)?;
    let h_all = b.mul_u(h, 0xf)?;
    let step = and(b, low, h_all)?;
    // m == 7: bits 0, 1 and 2 all set.
    let one = b.c_u32(1);
    let half = b.b.shift_right_logical(t_u32, None, c, one)?;
    let seven = and(b, c, half)?;
    let seven = and(b, seven, h)?;
    let seven = shl(b, seven, 1)?;
    let v = b.b.i_add(t_u32, None, m, step)?;
    b.b.i_add(t_u32, None, v, seven)
}

/// IQ4_NL's and IQ4_XS's unit: its codes' table values as signed bytes ([`super::iq4`]), both
/// halves under the unit's scale: from `table` where the kernel declared one.
fn iq4(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, table: Option<CodeTable>) -> BuildResult<Packed> {
    let (at, first, scale) = super::iq4::codes_and_scale(b, q, blk, s)?;
    let words = match table {
        Some(table) => {
            let mut out = [0; 8];
            for k in 0..4 {
                let w = word_at(b, blk, at, first + 4 * k as u32)?;
                [out[k], out[k + 4]] = table.values(b, w)?;
            }
            out
        }
        None => {
            let codes = nibble_words(b, blk, (at, first))?;
            each(|k| super::iq4::bytes(b, codes[k as usize]))?
        }
    };
    Ok(one_scale(words, true, scale, None))
}

fn halves(words: [Word; 8], a: [Word; 2], offsets: [Word; 2]) -> Packed {
    Packed {
        words,
        signed: false,
        plus: None,
        a,
        b: offsets.map(Some),
        shared: false,
    }
}

/// Eight words made by `f(k)` for k = 0..8.
fn each(mut f: impl FnMut(u32) -> BuildResult<Word>) -> BuildResult<[Word; 8]> {
    let mut out = [0; 8];
    for (k, w) in out.iter_mut().enumerate() {
        *w = f(k as u32)?;
    }
    Ok(out)
}

/// The codes of a 32-value block's 16 bytes of nibbles from byte `first` (after the run-time
/// part `at`): values 0..16 in the low nibbles, 16..32 in the high ones.
fn nibble_words(b: &mut ModuleBuilder, blk: &Block, (at, first): (Option<Word>, u32)) -> BuildResult<[Word; 8]> {
    let mut out = [0; 8];
    for k in 0..4 {
        let w = word_at(b, blk, at, first + 4 * k)?;
        out[k as usize] = shifted(b, w, 0, 0x0f0f_0f0f)?;
        out[k as usize + 4] = shifted(b, w, 4, 0x0f0f_0f0f)?;
    }
    Ok(out)
}

/// `(x >> shift) & mask` for a literal shift.
fn shifted(b: &mut ModuleBuilder, x: Word, shift: u32, mask: u32) -> BuildResult<Word> {
    let shift = b.c_u32(shift);
    bits(b, x, shift, mask)
}

/// Bits 0..4 of `x` (the rest zero) moved to bit 0 of bytes 0..4: `x * 0x00204081` puts copies
/// at 0, 7, 14 and 21, which cannot overlap or carry, and the mask keeps one bit of each.
fn spread4(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let spread = b.mul_u(x, 0x0020_4081)?;
    let mask = b.c_u32(0x0101_0101);
    b.b.bitwise_and(t_u32, None, spread, mask)
}

fn shl(b: &mut ModuleBuilder, x: Word, by: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let by = b.c_u32(by);
    b.b.shift_left_logical(t_u32, None, x, by)
}

fn or(b: &mut ModuleBuilder, x: Word, y: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    b.b.bitwise_or(t_u32, None, x, y)
}

/// `x * c` (exact: every `c` here is a power of two or -1).
fn scaled(b: &mut ModuleBuilder, x: Word, c: f32) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let c = b.c_bits(t_f32, c.to_bits());
    fmul(b, x, c)
}
