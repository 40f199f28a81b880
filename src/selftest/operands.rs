//! The known answers' operands: small integers drawn from a fixed stream, so a verdict means
//! the same test in every process, and written as each element type's bytes, exactly.

use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::tiling::Layout;

/// The largest magnitude at which every integer is exact in `t`.
pub(super) fn exact_limit(t: ComponentType) -> Result<i64> {
    Ok(match t {
        ComponentType::Bf16 => 1 << 8,
        ComponentType::F16 => 1 << 11,
        ComponentType::F32 => 1 << 24,
        ComponentType::I32 => i64::from(i32::MAX),
        ComponentType::U32 => i64::from(u32::MAX),
        ComponentType::I8 => i64::from(i8::MAX),
        ComponentType::U8 => i64::from(u8::MAX),
        t => {
            return Err(Error::Unsupported(format!(
                "the self-test has no known-answer GEMM for {t} elements"
            )))
        }
    })
}

/// A deterministic stream of small integers (xorshift64*): the same test on every run, so a
/// verdict means the same thing in every process.
pub(super) struct Values(u64);

impl Values {
    /// The stream every known answer draws from.
    pub(super) fn seeded() -> Self {
        Self(0x9e37_79b9_7f4a_7c15)
    }

    /// An integer in `lo..=hi`.
    pub(super) fn next(&mut self, lo: i64, hi: i64) -> i64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32;
        // Multiply and shift instead of a division: a weight-sized operand draws millions.
        lo + ((r * (hi - lo + 1) as u64) >> 32) as i64
    }
}

/// `v` (exact in `t`) as `t`'s little-endian bytes.
pub(super) fn encode(t: ComponentType, v: i64, out: &mut [u8]) {
    match t {
        ComponentType::F16 => out.copy_from_slice(&half::f16::from_f64(v as f64).to_le_bytes()),
        ComponentType::Bf16 => out.copy_from_slice(&half::bf16::from_f64(v as f64).to_le_bytes()),
        ComponentType::F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
        ComponentType::I8 | ComponentType::U8 => out[0] = v as u8,
        _ => out.copy_from_slice(&(v as u32).to_le_bytes()),
    }
}

/// `t`'s element at the start of `bytes` as a number (NaN for a float NaN).
pub(super) fn decode(t: ComponentType, bytes: &[u8]) -> f64 {
    let two = || [bytes[0], bytes[1]];
    let four = || [bytes[0], bytes[1], bytes[2], bytes[3]];
    match t {
        ComponentType::F16 => half::f16::from_le_bytes(two()).to_f64(),
        ComponentType::Bf16 => half::bf16::from_le_bytes(two()).to_f64(),
        ComponentType::F32 => f64::from(f32::from_le_bytes(four())),
        ComponentType::I32 => f64::from(i32::from_le_bytes(four())),
        _ => f64::from(u32::from_le_bytes(four())),
    }
}

/// Random values of one operand: their bytes in device layout, and the values row by row.
pub(super) struct Filled {
    pub(super) bytes: Vec<u8>,
    pub(super) values: Vec<i8>,
}

/// A `rows x cols` operand of `t` stored `layout` with leading dimension `ld`, values drawn in
/// `lo..=hi` in storage order (each value's bytes made once), zero but where `(row + col) %
/// sparse == 0`; with `only`, zero but in those columns too.
pub(super) fn fill(
    values: &mut Values,
    (rows, cols): (usize, usize),
    (layout, ld): (Layout, usize),
    t: ComponentType,
    (lo, hi): (i64, i64),
    (sparse, only): (usize, Option<&[usize]>),
) -> Filled {
    let es = t.size_bytes() as usize;
    let encoded: Vec<Vec<u8>> = (lo..=hi)
        .map(|v| {
            let mut b = vec![0u8; es];
            encode(t, v, &mut b);
            b
        })
        .collect();
    // Zero is all-zero bytes in every type, so a fresh buffer needs no writes where values are 0.
    let mut out = Filled {
        bytes: vec![0u8; layout.outer_inner(rows, cols).0 * ld * es],
        values: vec![0i8; rows * cols],
    };
    let mut put = |r: usize, c: usize| {
        let v = if (r + c) % sparse == 0 { values.next(lo, hi) } else { 0 };
        out.values[r * cols + c] = v as i8;
        let at = match layout {
            Layout::RowMajor => r * ld + c,
            Layout::ColMajor => c * ld + r,
        } * es;
        out.bytes[at..at + es].copy_from_slice(&encoded[(v - lo) as usize]);
    };
    match (only, layout) {
        (Some(columns), _) => columns.iter().for_each(|&c| (0..rows).for_each(|r| put(r, c))),
        (None, Layout::RowMajor) => (0..rows).for_each(|r| (0..cols).for_each(|c| put(r, c))),
        (None, Layout::ColMajor) => (0..cols).for_each(|c| (0..rows).for_each(|r| put(r, c))),
    }
    out
}
