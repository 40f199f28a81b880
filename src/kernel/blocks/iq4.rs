//! IQ4_NL's and IQ4_XS's codes: 4-bit indices into ggml's non-linear table ([`IQ4_VALUES`]),
//! which no affine map of the code gives. Each lookup picks a byte of the table held as a
//! `uvec4` constant, about ten integer operations a value; the matrix-vector kernel on 8-bit
//! activations, where those operations bound the time (docs/perf `h200-44-2`: 82 us against
//! q4_0's 20 us on one layout), looks the codes up in a table in workgroup memory instead
//! ([`super::CodeTable`]; `h200-45-1`: 82.5 -> 32.9 us with pairs of codes). Kernels that
//! declare no table (none does today: the matrix-vector kernel declares one wherever it reads
//! IQ4 codes beside 8-bit activations) fall back to the constant ([`bytes`]).

use super::code_table::{byte, constant};
use super::{code_f32, fmul, half_at, nibble_unit, s2f, six_bits, Block};
use crate::kernel::builder::{BuildResult, ModuleBuilder};
use crate::quant::{QuantType, IQ4_VALUES};
use rspirv::spirv::Word;

/// `block_iq4_nl` / `block_iq4_xs`: value `32 s + l` is nibble `l / 16` of byte `l % 16` of the
/// unit's 16 bytes of codes (IQ4_NL's from byte 2, IQ4_XS's `16 s` past byte 8), its table
/// value ([`IQ4_VALUES`]) times `d` (IQ4_XS: the unit's `d * (ls - 32)`).
pub(super) fn value(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let (at, first, scale) = codes_and_scale(b, q, blk, s)?;
    let shift = b.c_u32(4 * (l / 16));
    let v = super::field(b, blk, (at, first + l % 16), shift, 0xf)?;
    let table = constant(b, &IQ4_VALUES, 128);
    let v = byte(b, table, v)?;
    // The byte is the value plus 128: exact in f32.
    let v = code_f32(b, v, 128)?;
    fmul(b, scale, v)
}

/// Where unit `s`'s 16 bytes of codes start (a run-time part and a byte) and its scale: IQ4_NL's
/// `d` from byte 2, IQ4_XS's `d * (ls - 32)` from `8 + 16 s`.
pub(super) fn codes_and_scale(
    b: &mut ModuleBuilder,
    q: QuantType,
    blk: &Block,
    s: Word,
) -> BuildResult<(Option<Word>, u32, Word)> {
    if q == QuantType::Iq4Xs {
        Ok((Some(nibble_unit(b, blk, s)?), 8, xs_scale(b, blk, s)?))
    } else {
        Ok((None, 2, half_at(b, blk, 0)?))
    }
}

/// IQ4_XS's `d * (ls - 32)` of unit `s`, with the 6-bit `ls`'s low four bits at `4 s` of the
/// word of `scales_l` (byte 4) and its top two at `16 + 2 s` of the word holding `d` and
/// `scales_h`; once per unit.
fn xs_scale(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<Word> {
    blk.once(b, ("iq4xs dl", 0), |b| {
        let low_shift = b.mul_u(s, 4)?;
        let top_shift = b.mul_u(s, 2)?;
        let top_shift = b.add_u(top_shift, 16)?;
        let ls = six_bits(b, blk, ((None, 4), low_shift), (0, top_shift))?;
        let ls = b.add_u(ls, u32::MAX - 31)?;
        let d = half_at(b, blk, 0)?;
        let ls = s2f(b, ls)?;
        fmul(b, d, ls)
    })
}

/// Four IQ4 codes (0..16, one a byte) as the signed bytes of their values, from the `uvec4`
/// constant: for kernels that declared no [`super::CodeTable`].
pub(super) fn bytes(b: &mut ModuleBuilder, codes: Word) -> BuildResult<Word> {
    let (t_u32, table) = (b.t_u32(), constant(b, &IQ4_VALUES, 0));
    let mut out = b.c_u32(0);
    for i in 0..4 {
        let shift = b.c_u32(8 * i);
        let code = super::bits(b, codes, shift, 0xf)?;
        let v = byte(b, table, code)?;
        let v = b.b.shift_left_logical(t_u32, None, v, shift)?;
        out = b.b.bitwise_or(t_u32, None, out, v)?;
    }
    Ok(out)
}
