//! 4-bit codes that stand for values no affine map of the code gives (IQ4_NL's and IQ4_XS's
//! non-linear table), turned into the signed bytes of their values by lookups in a table in
//! workgroup memory: [`CodeTable`], 16 codes at each of a word's 4 byte positions, entry
//! `16 p + c` holding code `c`'s value in byte `p` (the others zero), so the 4 lookups for a
//! word of 4 values are OR-ed together with nothing shifted. Within one lookup every
//! invocation reads the same byte position: 16 entries, one a bank, read without conflict.
//! It replaced a 256-entry table of code pairs (one load for two codes, about 3.5 invocations
//! a bank): on the H200 one token of 22016x4096 31.6 -> 29.0 us (IQ4_NL; IQ4_XS 31.4 -> 29.1),
//! 14336x4096 22.3 -> 20.5, eight tokens 60.2 -> 53.6 (docs/perf/h200-46-3.txt).

use crate::kernel::builder::{BuildResult, ModuleBuilder};
use crate::quant::{QuantType, IQ4_VALUES};
use rspirv::spirv::{MemoryAccess, StorageClass, Word};

/// Entries of [`CodeTable`]: 16 codes at 4 byte positions.
pub(in crate::kernel) const ENTRIES: u32 = 64;

/// The values of `q`'s 4-bit codes as signed bytes where the kernels look them up in a
/// [`CodeTable`]: IQ4's. MXFP4's codes are a table's too, but on the H200 its values computed
/// eight at a time with integer operations (`packed.rs`, `fp4_magnitudes`) ran faster than the
/// table (docs/perf/h200-46-3.txt, one token of 22016x4096 / 14336x4096 and eight tokens, us:
/// 23.1 / 16.4 / 48.5 against 29.1 / 20.4 / 54.5).
pub(in crate::kernel) fn code_values(q: QuantType) -> Option<[i8; 16]> {
    matches!(q, QuantType::Iq4Nl | QuantType::Iq4Xs).then_some(IQ4_VALUES)
}

/// `values` plus `bias` (two's complement) as a `uvec4` of bytes, code `c`'s in byte `c % 4` of
/// word `c / 4`.
pub(super) fn constant(b: &mut ModuleBuilder, values: &[i8; 16], bias: i32) -> Word {
    let mut words = [0u32; 4];
    for (c, &v) in values.iter().enumerate() {
        words[c / 4] |= u32::from((i32::from(v) + bias) as u8) << (8 * (c % 4));
    }
    b.c_uvec4(words)
}

/// The byte of `table` ([`constant`]) for `code` (0..16): a dynamic pick of its word, a shift.
pub(super) fn byte(b: &mut ModuleBuilder, table: Word, code: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let (c2, c24) = (b.c_u32(2), b.c_u32(24));
    let word = b.b.shift_right_logical(t_u32, None, code, c2)?;
    let word = b.b.vector_extract_dynamic(t_u32, None, table, word)?;
    let shift = b.mul_u(code, 8)?;
    let shift = b.b.bitwise_and(t_u32, None, shift, c24)?;
    super::bits(b, word, shift, 0xff)
}

/// The table of a format's code values in workgroup memory.
#[derive(Clone, Copy, Debug)]
pub(in crate::kernel) struct CodeTable {
    table: Word,
}

impl CodeTable {
    /// The table's variable; before the kernel's function begins.
    pub(in crate::kernel) fn declare(mb: &mut ModuleBuilder) -> Self {
        let t_u32 = mb.t_u32();
        CodeTable {
            table: mb.workgroup_array(t_u32, ENTRIES),
        }
    }

    /// Invocations `tid` below [`ENTRIES`] write entry `tid` from `values`, then the workgroup
    /// waits at a barrier: where every invocation arrives, before anything returns.
    pub(in crate::kernel) fn fill(self, b: &mut ModuleBuilder, tid: Word, values: &[i8; 16]) -> BuildResult<()> {
        let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
        let entries = b.c_u32(ENTRIES);
        let writes = b.b.u_less_than(t_bool, None, tid, entries)?;
        b.if_then(writes, |b| {
            let values = constant(b, values, 0);
            let (c15, c4, c3) = (b.c_u32(15), b.c_u32(4), b.c_u32(3));
            let code = b.b.bitwise_and(t_u32, None, tid, c15)?;
            let v = byte(b, values, code)?;
            let position = b.b.shift_right_logical(t_u32, None, tid, c4)?;
            let shift = b.b.shift_left_logical(t_u32, None, position, c3)?;
            let entry = b.b.shift_left_logical(t_u32, None, v, shift)?;
            let p = self.entry_ptr(b, tid)?;
            b.b.store(p, entry, Some(MemoryAccess::NON_PRIVATE_POINTER), [])
        })?;
        b.workgroup_barrier()
    }

    fn entry_ptr(self, b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
        let t_u32 = b.t_u32();
        let p_wg = b.ptr(StorageClass::Workgroup, t_u32);
        b.b.access_chain(p_wg, None, self.table, [x])
    }

    /// A word of 4 bytes of codes (values `4k..4k + 4` in its low nibbles, `16 + 4k..` in its
    /// high ones) as the signed bytes of those values: the low nibbles' word and the high
    /// ones'.
    pub(in crate::kernel) fn values(self, b: &mut ModuleBuilder, w: Word) -> BuildResult<[Word; 2]> {
        let t_u32 = b.t_u32();
        let four = b.c_u32(4);
        let mut out = [None, None];
        for position in 0..4 {
            for (half, o) in out.iter_mut().enumerate() {
                let offset = b.c_u32(8 * position + 4 * half as u32);
                let code = b.b.bit_field_u_extract(t_u32, None, w, offset, four)?;
                let at = if position == 0 {
                    code
                } else {
                    b.add_u(code, 16 * position)?
                };
                let p = self.entry_ptr(b, at)?;
                let v = b.b.load(t_u32, None, p, Some(MemoryAccess::NON_PRIVATE_POINTER), [])?;
                *o = Some(match *o {
                    None => v,
                    Some(acc) => b.b.bitwise_or(t_u32, None, acc, v)?,
                });
            }
        }
        Ok(out.map(|o| o.expect("four positions")))
    }
}
