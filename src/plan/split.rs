//! How one GEMM is cut across devices: each device computes a block of C from the rows of A and
//! the columns of B that block needs. Plain data, tested without a device.

use crate::error::{Error, Result};
use std::ops::Range;

/// How to cut C among the devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SplitKind {
    /// Chosen per shape: of the grids that use every device, the one that sends the fewest
    /// bytes (a `p x q` grid sends A `q` times and B `p` times); rows of C on a tie.
    #[default]
    Auto,
    /// A band of C's rows per device; every device receives all of B.
    Rows,
    /// A band of C's columns per device; every device receives all of A.
    Cols,
    /// A `rows x cols` grid of blocks of C, one per device (devices beyond `rows * cols` idle).
    Grid {
        /// Bands of rows.
        rows: usize,
        /// Blocks of columns within each band.
        cols: usize,
    },
}

impl SplitKind {
    /// Parses `auto`, `rows`, `cols` or `PxQ` (a grid).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "rows" => Some(Self::Rows),
            "cols" => Some(Self::Cols),
            _ => {
                let (p, q) = s.split_once('x')?;
                Some(Self::Grid {
                    rows: p.parse().ok()?,
                    cols: q.parse().ok()?,
                })
            }
        }
    }
}

/// One device's block of C.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitPart {
    /// The device's position in the [`MultiContext`](crate::MultiContext).
    pub device: usize,
    /// Rows of C (and of A) it computes.
    pub rows: Range<usize>,
    /// Columns of C (and of B) it computes.
    pub cols: Range<usize>,
}

/// A GEMM `M x N x K` cut into blocks of C, one per device that has work (a device whose share
/// rounds to nothing gets no part). The parts cover C exactly once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// Rows of C.
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// The shared dimension.
    pub k: usize,
    /// The grid: bands of rows x blocks of columns per band.
    pub grid: (usize, usize),
    /// The blocks, by device.
    pub parts: Vec<SplitPart>,
}

impl Split {
    /// Cuts `m x n` (shared dimension `k`) among devices of relative speeds `weights`, each
    /// device's area of C proportional to its weight; `elem_bytes` are the sizes of A's and B's
    /// elements (for [`SplitKind::Auto`]). Band edges fall on multiples of 256 where the bands
    /// are large, so no device gets a sliver of a tile.
    pub fn new(
        (m, n, k): (usize, usize, usize),
        weights: &[f64],
        kind: SplitKind,
        elem_bytes: (usize, usize),
    ) -> Result<Self> {
        if m == 0 || n == 0 || k == 0 {
            return Err(Error::ZeroSize { m, n, k });
        }
        check_weights(weights)?;
        let d = weights.len();
        let (p, q) = match kind {
            SplitKind::Auto => auto_grid(d, (m * elem_bytes.0, n * elem_bytes.1)),
            SplitKind::Rows => (d, 1),
            SplitKind::Cols => (1, d),
            SplitKind::Grid { rows, cols } => {
                if rows == 0 || cols == 0 || rows.checked_mul(cols).is_none_or(|c| c > d) {
                    return Err(Error::InvalidOption(format!(
                        "a {rows}x{cols} grid for {d} devices: both at least 1, their product at most {d}"
                    )));
                }
                (rows, cols)
            }
        };
        // Device (i, j) of the grid is device i * q + j.
        let band_weights: Vec<f64> = (0..p).map(|i| weights[i * q..(i + 1) * q].iter().sum()).collect();
        let mut parts = Vec::with_capacity(p * q);
        for (i, rows) in cut(m, &band_weights).into_iter().enumerate() {
            for (j, cols) in cut(n, &weights[i * q..(i + 1) * q]).into_iter().enumerate() {
                if !rows.is_empty() && !cols.is_empty() {
                    parts.push(SplitPart {
                        device: i * q + j,
                        rows: rows.clone(),
                        cols,
                    });
                }
            }
        }
        Ok(Self {
            m,
            n,
            k,
            grid: (p, q),
            parts,
        })
    }

    /// The same cut of C^T (rows and columns swapped), for a column-major C computed as
    /// `C^T = B^T A^T`.
    pub fn transposed(&self) -> Self {
        Self {
            m: self.n,
            n: self.m,
            k: self.k,
            grid: (self.grid.1, self.grid.0),
            parts: self
                .parts
                .iter()
                .map(|p| SplitPart {
                    device: p.device,
                    rows: p.cols.clone(),
                    cols: p.rows.clone(),
                })
                .collect(),
        }
    }

    /// Checks that the split is for this GEMM and these devices, and covers C exactly once (a
    /// split built by hand may not).
    pub fn check(&self, (m, n, k): (usize, usize, usize), devices: usize) -> Result<()> {
        if (self.m, self.n, self.k) != (m, n, k) {
            return Err(Error::ShapeMismatch(format!(
                "the split is for {}x{}x{}, the GEMM is {m}x{n}x{k}",
                self.m, self.n, self.k
            )));
        }
        let mut area = 0usize;
        for (i, p) in self.parts.iter().enumerate() {
            if p.device >= devices || self.parts[..i].iter().any(|o| o.device == p.device) {
                return Err(Error::InvalidOption(format!(
                    "split part {i} is for device {}: each of the {devices} devices takes at most one part",
                    p.device
                )));
            }
            if p.rows.is_empty() || p.cols.is_empty() || p.rows.end > m || p.cols.end > n {
                return Err(Error::InvalidOption(format!(
                    "split part {i} ({:?} x {:?}) is empty or outside the {m}x{n} C",
                    p.rows, p.cols
                )));
            }
            let overlaps = |o: &SplitPart| overlap(&o.rows, &p.rows) && overlap(&o.cols, &p.cols);
            if self.parts[..i].iter().any(overlaps) {
                return Err(Error::InvalidOption(format!("split part {i} overlaps an earlier part")));
            }
            area += p.rows.len() * p.cols.len();
        }
        if area != m * n {
            return Err(Error::InvalidOption(format!(
                "the split's parts cover {area} of C's {} elements",
                m * n
            )));
        }
        Ok(())
    }
}

/// Checks devices' relative speeds: at least one, each finite and above zero.
pub(crate) fn check_weights(weights: &[f64]) -> Result<()> {
    if weights.is_empty() {
        return Err(Error::InvalidOption("a split needs at least one device".into()));
    }
    match weights.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
        Some(w) => Err(Error::InvalidOption(format!(
            "device weight {w}: weights are relative speeds, finite and above zero"
        ))),
        None => Ok(()),
    }
}

fn overlap(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// The `p x q` grid (p * q = d) that sends the fewest bytes: device (i, j) receives A's rows of
/// band i (a_bytes / p) and B's columns of block j (b_bytes / q), `q * a_bytes + p * b_bytes` in
/// all; on a tie, more bands of rows (contiguous in a row-major C).
fn auto_grid(d: usize, (a_bytes, b_bytes): (usize, usize)) -> (usize, usize) {
    (1..=d)
        .filter(|p| d % p == 0)
        .map(|p| (p, d / p))
        .min_by_key(|&(p, q)| (q as u128 * a_bytes as u128 + p as u128 * b_bytes as u128, q))
        .expect("d >= 1")
}

/// `0..len` cut into consecutive ranges proportional to `weights` (some possibly empty). Edges
/// fall on multiples of the largest of 256, 128, ..., 8 that still leaves each range at least
/// four of them, else anywhere.
fn cut(len: usize, weights: &[f64]) -> Vec<Range<usize>> {
    let total: f64 = weights.iter().sum();
    let per = len / weights.len();
    let align = [256, 128, 64, 32, 16, 8]
        .into_iter()
        .find(|a| per >= 4 * a)
        .unwrap_or(1);
    let mut out = Vec::with_capacity(weights.len());
    let (mut start, mut acc) = (0usize, 0.0f64);
    for (i, w) in weights.iter().enumerate() {
        acc += w;
        let end = if i + 1 == weights.len() {
            len
        } else {
            let exact = acc / total * len as f64 / align as f64;
            ((exact.round() as usize) * align).clamp(start, len)
        };
        out.push(start..end);
        start = end;
    }
    out
}

/// Bands of `rows` for the host pipeline of one device: about `BLOCK_BYTES` of A and C per band
/// (`bytes_per_row` of them per row), or half the allocation limit `max_allocation` where that is
/// less (a band's A and C are buffers of their own), so the next band's upload overlaps this one's
/// multiply; at most `MAX_BLOCKS`, edges on multiples of 256 rows where there are enough.
pub(crate) fn pipeline_blocks(rows: Range<usize>, bytes_per_row: usize, max_allocation: u64) -> Vec<Range<usize>> {
    const BLOCK_BYTES: usize = 64 << 20;
    const MAX_BLOCKS: usize = 8;
    let block = BLOCK_BYTES
        .min(usize::try_from(max_allocation / 2).unwrap_or(usize::MAX))
        .max(1);
    let want = (rows.len().saturating_mul(bytes_per_row) / block).clamp(1, MAX_BLOCKS);
    cut(rows.len(), &vec![1.0; want])
        .into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| rows.start + r.start..rows.start + r.end)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(shape: (usize, usize, usize), w: &[f64], kind: SplitKind) -> Split {
        let s = Split::new(shape, w, kind, (2, 2)).unwrap();
        s.check(shape, w.len()).unwrap();
        s
    }

    #[test]
    fn equal_devices_get_equal_aligned_bands() {
        let s = split((16384, 16384, 16384), &[1.0, 1.0], SplitKind::Rows);
        assert_eq!(s.grid, (2, 1));
        assert_eq!(s.parts[0].rows, 0..8192);
        assert_eq!(s.parts[1].rows, 8192..16384);
        assert!(s.parts.iter().all(|p| p.cols == (0..16384)));
    }

    #[test]
    fn shares_follow_weights() {
        let s = split((10_000, 300, 64), &[1.0, 3.0], SplitKind::Rows);
        let rows: Vec<usize> = s.parts.iter().map(|p| p.rows.len()).collect();
        assert!((rows[0] as f64 - 2500.0).abs() <= 128.0, "{rows:?}");
        assert_eq!(s.parts[0].rows.end % 256, 0);
        let c = split((300, 10_000, 64), &[3.0, 1.0], SplitKind::Cols);
        assert!((c.parts[0].cols.len() as f64 - 7500.0).abs() <= 128.0);
    }

    #[test]
    fn auto_sends_the_smaller_operand_to_every_device() {
        // Tall C: A is large, B small: cut rows so only B is sent twice.
        assert_eq!(split((8192, 512, 4096), &[1.0; 2], SplitKind::Auto).grid, (2, 1));
        assert_eq!(split((512, 8192, 4096), &[1.0; 2], SplitKind::Auto).grid, (1, 2));
        assert_eq!(split((4096, 4096, 4096), &[1.0; 2], SplitKind::Auto).grid, (2, 1));
        assert_eq!(split((8192, 8192, 8192), &[1.0; 4], SplitKind::Auto).grid, (2, 2));
        assert_eq!(split((8192, 8192, 8192), &[1.0; 8], SplitKind::Auto).grid, (4, 2));
    }

    #[test]
    fn tiny_problems_leave_devices_idle() {
        let s = split((1, 1, 1), &[1.0; 4], SplitKind::Rows);
        assert_eq!(s.parts.len(), 1);
        assert_eq!((s.parts[0].rows.clone(), s.parts[0].cols.clone()), (0..1, 0..1));
        let s = split((3, 5, 7), &[1.0; 3], SplitKind::Cols);
        assert_eq!(s.parts.len(), 3);
    }

    #[test]
    fn every_cut_covers_c_once() {
        let mut seed = 7u64;
        for _ in 0..2000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let m = (seed >> 33) as usize % 3000 + 1;
            let n = (seed >> 13) as usize % 3000 + 1;
            let d = (seed >> 50) as usize % 8 + 1;
            let w: Vec<f64> = (0..d).map(|i| 1.0 + ((seed >> (i * 3)) & 7) as f64).collect();
            let kinds = [SplitKind::Auto, SplitKind::Rows, SplitKind::Cols];
            let kind = kinds[(seed >> 40) as usize % 3];
            split((m, n, 5), &w, kind); // check() asserts exact cover
        }
    }

    #[test]
    fn grids_and_bad_input() {
        let s = split((1000, 1000, 8), &[1.0; 4], SplitKind::Grid { rows: 2, cols: 2 });
        assert_eq!(s.parts.len(), 4);
        let t = s.transposed();
        t.check((1000, 1000, 8), 4).unwrap();
        assert!(Split::new((8, 8, 8), &[1.0; 2], SplitKind::Grid { rows: 2, cols: 2 }, (2, 2)).is_err());
        assert!(Split::new((8, 8, 8), &[1.0, 0.0], SplitKind::Rows, (2, 2)).is_err());
        assert!(Split::new((8, 8, 8), &[1.0, f64::NAN], SplitKind::Rows, (2, 2)).is_err());
        assert!(Split::new((0, 8, 8), &[1.0], SplitKind::Rows, (2, 2)).is_err());
        assert!(s.check((1000, 999, 8), 4).is_err());
        assert!(s.check((1000, 1000, 8), 3).is_err());
        let mut overlapping = s.clone();
        overlapping.parts[1].rows = 0..600;
        assert!(overlapping.check((1000, 1000, 8), 4).is_err());
        assert_eq!(SplitKind::parse("2x4"), Some(SplitKind::Grid { rows: 2, cols: 4 }));
        assert_eq!(SplitKind::parse("cols"), Some(SplitKind::Cols));
        assert_eq!(SplitKind::parse("x"), None);
    }

    #[test]
    fn pipeline_blocks_cover_the_part() {
        let b = pipeline_blocks(8192..16384, 16384 * 6, 4 << 30);
        assert_eq!(b.len(), 8);
        assert_eq!(b[0].start, 8192);
        assert_eq!(b.last().unwrap().end, 16384);
        assert!(b.windows(2).all(|w| w[0].end == w[1].start));
        assert_eq!(pipeline_blocks(0..5, 10, 4 << 30), vec![0..5]);
        // 64 MiB bands unless the allocation limit is under twice that.
        assert_eq!(pipeline_blocks(0..1000, 50 << 10, 4 << 30).len(), 1);
        assert_eq!(pipeline_blocks(0..1000, 50 << 10, 32 << 20).len(), 3);
        assert_eq!(pipeline_blocks(0..1000, 100, 0).len(), 8);
    }
}
