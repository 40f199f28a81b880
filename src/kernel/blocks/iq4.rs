//! IQ4_NL's and IQ4_XS's codes: 4-bit indices into ggml's non-linear table ([`IQ4_VALUES`]),
//! which no affine map of the code gives. Each lookup picks a byte of the table held as a
//! `uvec4` constant, about ten integer operations a value; the matrix-vector kernel on 8-bit
//! activations, where those operations bound the time (docs/perf `h200-44-2`: 82 us against
//! q4_0's 20 us on one layout), reads both codes of a byte with one load from [`Iq4Pairs`], a
//! table in workgroup memory (`h200-45-1`: 82.5 -> 32.9 us). Kernels that declare no table
//! (none does today: the matrix-vector kernel declares one wherever it reads IQ4 codes beside
//! 8-bit activations) fall back to the constant ([`bytes`]).

use super::{code_f32, fmul, half_at, nibble_unit, s2f, six_bits, Block};
use crate::kernel::builder::{BuildResult, ModuleBuilder};
use crate::quant::{QuantType, IQ4_VALUES};
use rspirv::spirv::{MemoryAccess, StorageClass, Word};

/// Entries of [`Iq4Pairs`]: one per byte of two codes.
pub(in crate::kernel) const PAIRS: u32 = 256;

/// `block_iq4_nl` / `block_iq4_xs`: value `32 s + l` is nibble `l / 16` of byte `l % 16` of the
/// unit's 16 bytes of codes (IQ4_NL's from byte 2, IQ4_XS's `16 s` past byte 8), its table
/// value ([`IQ4_VALUES`]) times `d` (IQ4_XS: the unit's `d * (ls - 32)`).
pub(super) fn value(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let (at, first, scale) = codes_and_scale(b, q, blk, s)?;
    let shift = b.c_u32(4 * (l / 16));
    let v = super::field(b, blk, (at, first + l % 16), shift, 0xf)?;
    let table = table(b, 128);
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

/// The table ([`IQ4_VALUES`]) as a `uvec4` of bytes, code `c`'s value plus `bias` (two's
/// complement) in byte `c % 4` of word `c / 4`.
fn table(b: &mut ModuleBuilder, bias: i32) -> Word {
    let mut words = [0u32; 4];
    for (c, &v) in IQ4_VALUES.iter().enumerate() {
        words[c / 4] |= u32::from((i32::from(v) + bias) as u8) << (8 * (c % 4));
    }
    b.c_uvec4(words)
}

/// The byte of `table` ([`table`]) for `code` (0..16): a dynamic pick of its word, a shift.
fn byte(b: &mut ModuleBuilder, table: Word, code: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let (c2, c24) = (b.c_u32(2), b.c_u32(24));
    let word = b.b.shift_right_logical(t_u32, None, code, c2)?;
    let word = b.b.vector_extract_dynamic(t_u32, None, table, word)?;
    let shift = b.mul_u(code, 8)?;
    let shift = b.b.bitwise_and(t_u32, None, shift, c24)?;
    super::bits(b, word, shift, 0xff)
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

/// Both values of a byte of two codes: a table of [`PAIRS`] words in workgroup memory, entry
/// `x` holding the signed byte of code `x & 15`'s value at bit 0 and that of code `x >> 4` at
/// bit 16 (the other bytes zero, so two entries, one shifted by 8, add to four values).
#[derive(Clone, Copy, Debug)]
pub(in crate::kernel) struct Iq4Pairs {
    table: Word,
}

impl Iq4Pairs {
    /// The table's variable; before the kernel's function begins.
    pub(in crate::kernel) fn declare(mb: &mut ModuleBuilder) -> Self {
        let t_u32 = mb.t_u32();
        Iq4Pairs {
            table: mb.workgroup_array(t_u32, PAIRS),
        }
    }

    /// Invocation `tid` of `threads` (a divisor of [`PAIRS`]) writes every `threads`-th entry,
    /// then the workgroup waits at a barrier: where every invocation arrives, before anything
    /// returns.
    pub(in crate::kernel) fn fill(self, b: &mut ModuleBuilder, tid: Word, threads: u32) -> BuildResult<()> {
        debug_assert!(
            PAIRS % threads == 0,
            "{threads} invocations fill {PAIRS} entries unevenly"
        );
        let t_u32 = b.t_u32();
        let values = table(b, 0);
        let (c4, c16, c15) = (b.c_u32(4), b.c_u32(16), b.c_u32(15));
        for j in 0..PAIRS.div_ceil(threads) {
            let x = b.add_u(tid, j * threads)?;
            let low = b.b.bitwise_and(t_u32, None, x, c15)?;
            let low = byte(b, values, low)?;
            let high = b.b.shift_right_logical(t_u32, None, x, c4)?;
            let high = byte(b, values, high)?;
            let high = b.b.shift_left_logical(t_u32, None, high, c16)?;
            let entry = b.b.bitwise_or(t_u32, None, low, high)?;
            let p = self.entry_ptr(b, x)?;
            b.b.store(p, entry, Some(MemoryAccess::NON_PRIVATE_POINTER), [])?;
        }
        b.workgroup_barrier()
    }

    /// Entry `x` (0..256).
    fn entry(self, b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
        let t_u32 = b.t_u32();
        let p = self.entry_ptr(b, x)?;
        b.b.load(t_u32, None, p, Some(MemoryAccess::NON_PRIVATE_POINTER), [])
    }

    fn entry_ptr(self, b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
        let t_u32 = b.t_u32();
        let p_wg = b.ptr(StorageClass::Workgroup, t_u32);
        b.b.access_chain(p_wg, None, self.table, [x])
    }

    /// A word of 16 bytes of codes (values `4k..4k + 4` in its low nibbles, `16 + 4k..` in its
    /// high ones) as the signed bytes of those values: the low nibbles' word and the high ones'.
    /// Entries for bytes 0 and 1 make (low 0, low 1, high 0, high 1), bytes 2 and 3 the rest.
    pub(in crate::kernel) fn values(self, b: &mut ModuleBuilder, w: Word) -> BuildResult<[Word; 2]> {
        let t_u32 = b.t_u32();
        let mut t = [0; 4];
        for (i, e) in t.iter_mut().enumerate() {
            let shift = b.c_u32(8 * i as u32);
            let x = b.b.shift_right_logical(t_u32, None, w, shift)?;
            let x = if i < 3 {
                let c255 = b.c_u32(0xff);
                b.b.bitwise_and(t_u32, None, x, c255)?
            } else {
                x
            };
            *e = self.entry(b, x)?;
        }
        let (c8, c16) = (b.c_u32(8), b.c_u32(16));
        let (c_low, c_high) = (b.c_u32(0xffff), b.c_u32(0xffff_0000));
        let pair = |b: &mut ModuleBuilder, x: Word, y: Word| -> BuildResult<Word> {
            let y = b.b.shift_left_logical(t_u32, None, y, c8)?;
            b.b.bitwise_or(t_u32, None, x, y)
        };
        let first = pair(b, t[0], t[1])?;
        let second = pair(b, t[2], t[3])?;
        let low_first = b.b.bitwise_and(t_u32, None, first, c_low)?;
        let low_second = b.b.shift_left_logical(t_u32, None, second, c16)?;
        let low = b.b.bitwise_or(t_u32, None, low_first, low_second)?;
        let high_first = b.b.shift_right_logical(t_u32, None, first, c16)?;
        let high_second = b.b.bitwise_and(t_u32, None, second, c_high)?;
        let high = b.b.bitwise_or(t_u32, None, high_first, high_second)?;
        Ok([low, high])
    }
}

/// Four IQ4 codes (0..16, one a byte) as the signed bytes of their values, from the `uvec4`
/// constant: for kernels that declared no [`Iq4Pairs`].
pub(super) fn bytes(b: &mut ModuleBuilder, codes: Word) -> BuildResult<Word> {
    let (t_u32, table) = (b.t_u32(), table(b, 0));
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
