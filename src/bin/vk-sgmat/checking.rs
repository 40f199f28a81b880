//! Checking a command's results: how much of C is compared, the worse of two checks, a host
//! view of a stored matrix.

use crate::verify::Check;
use vk_sgmat::{Layout, MatRef};

/// The worse of two checks: a failure over a pass, else the larger error.
pub fn worse(kept: Option<Check>, got: Check) -> Option<Check> {
    match kept {
        Some(c) if !c.passed || (got.passed && got.rel_error <= c.rel_error) => Some(c),
        _ => Some(got),
    }
}

/// A dense `rows x cols` matrix stored `layout`.
pub fn view<T>(data: &[T], rows: usize, cols: usize, layout: Layout) -> MatRef<'_, T> {
    match layout {
        Layout::RowMajor => MatRef::new(data, rows, cols),
        Layout::ColMajor => MatRef::col_major(data, rows, cols),
    }
}

/// Outputs checked in full up to this many elements; beyond, 256 sampled rows.
pub const FULL_CHECK: usize = 1 << 26;
