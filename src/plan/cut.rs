//! Host GEMMs whose operands exceed one allocation (`maxMemoryAllocationSize`, 4 GiB on the
//! H200), cut into pieces whose copies on the device each fit. Pure.
//!
//! The dispatch planner ([`super::plan`]) already cuts a buffer larger than one binding into
//! windows; this is the step before it, for a host operand that cannot be one buffer at all.
//! Rows and columns are cut first (each piece is then an ordinary GEMM with the caller's alpha
//! and beta); K only where a single row of A or column of B is over the limit, the later K
//! pieces adding to the C the earlier ones wrote.

use crate::error::{Error, Result};
use serde::Serialize;
use std::ops::Range;

/// The most pieces [`cut`] makes: with a 4 GiB limit that is 256 TiB of operands, far beyond any
/// device; only an absurdly small limit override reaches it.
pub const MAX_PIECES: usize = 1 << 16;

/// Below this many rows or columns a cut halves exactly; above it, at a multiple of it, so
/// every piece but the last covers whole workgroup tiles.
const CUT_ALIGN: usize = 256;

/// A part of a (batched) GEMM: entries of the batch, rows and columns of C, and the K range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Piece {
    /// Batch entries.
    pub entries: Range<usize>,
    /// Rows of C (and of A).
    pub rows: Range<usize>,
    /// Columns of C (and of B).
    pub cols: Range<usize>,
    /// The K range (columns of A, rows of B).
    pub k: Range<usize>,
}

impl Piece {
    /// The whole of a batch of `count` `m x n x k` GEMMs.
    pub fn whole(count: usize, m: usize, n: usize, k: usize) -> Self {
        Self {
            entries: 0..count,
            rows: 0..m,
            cols: 0..n,
            k: 0..k,
        }
    }

    /// Whether it adds its product to the C an earlier K piece wrote (beta 1), rather than
    /// applying the caller's beta.
    pub fn accumulates(&self) -> bool {
        self.k.start > 0
    }
}

/// Which dimension a piece is cut along.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Along {
    Entries,
    Rows,
    Cols,
    K,
}

/// Cuts `whole` into pieces whose A, B and C copies (`bytes` sizes them, in that order) each fit
/// `limit` bytes: `[whole]` when it fits. Batches are cut into runs of entries first; then the
/// operand over the limit decides: C along the longer of its rows and columns, A along rows, B
/// along columns, and K (only if `k_ok`: not for a fused epilogue, whose activation does not
/// distribute over a sum) where one row of A or column of B is itself too large. Pieces of one
/// block of C come in K order, so each later one adds to what the one before wrote.
///
/// Errors ([`Error::TooLarge`], with the sizes) where no cut helps or it would take more than
/// [`MAX_PIECES`].
pub fn cut(whole: Piece, limit: u64, k_ok: bool, bytes: impl Fn(&Piece) -> [u64; 3]) -> Result<Vec<Piece>> {
    let mut out = Vec::new();
    // Depth first, first half first: that keeps K pieces of a block in order.
    let mut stack = vec![whole];
    while let Some(p) = stack.pop() {
        let sizes = bytes(&p);
        if sizes.iter().all(|&s| s <= limit) {
            if out.len() == MAX_PIECES {
                return Err(Error::TooLarge(format!(
                    "the operands would need more than {MAX_PIECES} pieces of at most {limit} bytes each"
                )));
            }
            out.push(p);
            continue;
        }
        let along = choose(&p, sizes, k_ok, &bytes).ok_or_else(|| {
            Error::TooLarge(format!(
                "a piece of {} x {} x {} (A {} bytes, B {} bytes, C {} bytes) cannot be cut below the allocation limit of {limit} bytes{}",
                p.rows.len(),
                p.cols.len(),
                p.k.len(),
                sizes[0],
                sizes[1],
                sizes[2],
                if k_ok { "" } else { " without cutting K, which a fused epilogue cannot be" }
            ))
        })?;
        let (first, second) = halve(p, along);
        stack.push(second);
        stack.push(first);
    }
    Ok(out)
}

/// The dimension to cut `p` along, given its operand sizes: the first in the order its
/// largest operand suggests whose halving shrinks that operand (rows or columns of a few
/// elements may not: stored rows are padded to 16 bytes); `None` where nothing does.
fn choose(p: &Piece, sizes: [u64; 3], k_ok: bool, bytes: &impl Fn(&Piece) -> [u64; 3]) -> Option<Along> {
    use Along::*;
    if p.entries.len() > 1 {
        return Some(Entries);
    }
    // Ties go to the later operand (C, then B).
    let largest = (0..3).max_by_key(|&i| sizes[i]).unwrap_or(2);
    let order = match largest {
        // Cutting C's longer side halves C and one of A or B.
        2 if p.rows.len() >= p.cols.len() => [Rows, Cols, K],
        2 => [Cols, Rows, K],
        0 => [Rows, K, Cols],
        _ => [Cols, K, Rows],
    };
    order.into_iter().find(|&along| {
        let long_enough = range(p, along).len() > 1;
        long_enough && (along != K || k_ok) && bytes(&halve(p.clone(), along).0)[largest] < sizes[largest]
    })
}

fn range(p: &Piece, along: Along) -> &Range<usize> {
    match along {
        Along::Entries => &p.entries,
        Along::Rows => &p.rows,
        Along::Cols => &p.cols,
        Along::K => &p.k,
    }
}

/// `p` cut in two along `along` (the first half at a multiple of [`CUT_ALIGN`] when long).
fn halve(p: Piece, along: Along) -> (Piece, Piece) {
    let split = |r: &Range<usize>| {
        let half = r.len() / 2;
        let at = if r.len() > 2 * CUT_ALIGN {
            half.next_multiple_of(CUT_ALIGN)
        } else {
            half
        };
        (r.start..r.start + at, r.start + at..r.end)
    };
    let (lo, hi) = split(range(&p, along));
    let with = |r: Range<usize>| {
        let mut q = p.clone();
        *match along {
            Along::Entries => &mut q.entries,
            Along::Rows => &mut q.rows,
            Along::Cols => &mut q.cols,
            Along::K => &mut q.k,
        } = r;
        q
    };
    (with(lo), with(hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense sizes: A rows x k, B k x cols, C rows x cols, `es` bytes each, per entry.
    fn dense(es: u64) -> impl Fn(&Piece) -> [u64; 3] {
        move |p| {
            let (e, r, c, k) = (
                p.entries.len() as u64,
                p.rows.len() as u64,
                p.cols.len() as u64,
                p.k.len() as u64,
            );
            [e * r * k * es, e * k * c * es, e * r * c * es]
        }
    }

    /// Every (entry, row, col, k) of `whole` is in exactly one piece, and the pieces of one block
    /// of C come in K order.
    fn assert_tiles(whole: &Piece, pieces: &[Piece]) {
        let vol = |p: &Piece| p.entries.len() * p.rows.len() * p.cols.len() * p.k.len();
        assert_eq!(pieces.iter().map(vol).sum::<usize>(), vol(whole));
        for (i, p) in pieces.iter().enumerate() {
            assert!(vol(p) > 0, "{p:?}");
            for q in &pieces[i + 1..] {
                let overlap = |a: &Range<usize>, b: &Range<usize>| a.start < b.end && b.start < a.end;
                let same_c = overlap(&p.entries, &q.entries) && overlap(&p.rows, &q.rows) && overlap(&p.cols, &q.cols);
                assert!(!(same_c && overlap(&p.k, &q.k)), "{p:?} and {q:?} overlap");
                if same_c {
                    assert!(p.k.end <= q.k.start, "{q:?} comes before {p:?} in K");
                }
            }
        }
    }

    #[test]
    fn a_fitting_problem_is_one_piece() {
        let whole = Piece::whole(1, 100, 100, 100);
        assert_eq!(cut(whole.clone(), 1 << 20, true, dense(4)).unwrap(), vec![whole]);
    }

    #[test]
    fn a_tall_a_is_cut_along_rows_only() {
        // A 5000 x 1000 f16 (10 MB) over a 4 MB limit; B and C fit.
        let whole = Piece::whole(1, 5000, 64, 1000);
        let pieces = cut(whole.clone(), 4 << 20, true, dense(2)).unwrap();
        assert_tiles(&whole, &pieces);
        assert!(pieces.iter().all(|p| p.cols == (0..64) && p.k == (0..1000)));
        assert!(pieces.len() >= 3 && pieces.len() <= 4, "{pieces:?}");
        assert!(pieces[0].rows.len() % CUT_ALIGN == 0);
    }

    #[test]
    fn a_wide_b_is_cut_along_columns_and_a_big_c_along_its_longer_side() {
        let whole = Piece::whole(1, 64, 9000, 1000);
        let pieces = cut(whole.clone(), 4 << 20, true, dense(2)).unwrap();
        assert_tiles(&whole, &pieces);
        assert!(pieces.iter().all(|p| p.rows == (0..64) && p.k == (0..1000)));
        let whole = Piece::whole(1, 3000, 2000, 8);
        let pieces = cut(whole.clone(), 1 << 20, true, dense(4)).unwrap();
        assert_tiles(&whole, &pieces);
        assert!(pieces.iter().all(|p| dense(4)(p).iter().all(|&s| s <= 1 << 20)));
        assert!(pieces.iter().all(|p| p.k == (0..8)));
    }

    #[test]
    fn k_is_cut_only_when_a_row_is_too_long_and_never_for_fused_epilogues() {
        // One row of A is 8 KiB over a 4 KiB limit.
        let whole = Piece::whole(1, 3, 2, 4096);
        let pieces = cut(whole.clone(), 4 << 10, true, dense(2)).unwrap();
        assert_tiles(&whole, &pieces);
        assert!(pieces.iter().any(Piece::accumulates));
        assert!(pieces.iter().all(|p| p.rows.len() == 1 || p.k == (0..4096)));
        let e = cut(whole, 4 << 10, false, dense(2)).unwrap_err();
        assert!(
            matches!(e, Error::TooLarge(_)) && e.to_string().contains("fused"),
            "{e}"
        );
    }

    #[test]
    fn cuts_that_padding_makes_useless_are_skipped() {
        // Row-major i8 operands whose rows are padded to 16 bytes, as vk-sgmat stores them: B's
        // 41 columns take 48 bytes a row, and no column cut brings 5000 rows under 4 KiB.
        let padded = |p: &Piece| {
            let row = |n: usize| n.next_multiple_of(16) as u64;
            let (r, c, k) = (p.rows.len() as u64, p.cols.len(), p.k.len());
            [r * row(k), k as u64 * row(c), r * row(c) * 4]
        };
        let whole = Piece::whole(1, 37, 41, 5000);
        let pieces = cut(whole.clone(), 4096, true, padded).unwrap();
        assert_tiles(&whole, &pieces);
        // Cutting to single columns, as a cut that ignores the padding would, takes 2460.
        assert!(pieces.len() <= 400, "{} pieces", pieces.len());
        assert!(pieces.iter().all(|p| p.cols.len() >= 8), "a cut that did not shrink B");
    }

    #[test]
    fn batches_are_cut_into_runs_of_entries_first() {
        let whole = Piece::whole(10, 100, 100, 100);
        let pieces = cut(whole.clone(), 100_000, true, dense(2)).unwrap();
        assert_tiles(&whole, &pieces);
        assert!(pieces
            .iter()
            .all(|p| p.rows == (0..100) && p.cols == (0..100) && p.k == (0..100)));
        assert_eq!(pieces.iter().map(|p| p.entries.len()).max(), Some(5));
    }

    #[test]
    fn impossible_and_absurd_cuts_are_errors() {
        // A 1x1x1 piece still over the limit.
        let e = cut(Piece::whole(1, 1, 1, 1), 8, true, |_| [16, 16, 16]).unwrap_err();
        assert!(matches!(e, Error::TooLarge(_)), "{e}");
        let e = cut(Piece::whole(1, 1 << 20, 1 << 20, 16), 1 << 10, true, dense(4)).unwrap_err();
        assert!(e.to_string().contains("pieces"), "{e}");
    }

    #[test]
    fn random_problems_tile_exactly_and_fit() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |hi: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            1 + state % hi
        };
        let mut cut_ok = 0;
        for _ in 0..300 {
            let whole = Piece::whole(
                next(4) as usize,
                next(2000) as usize,
                next(2000) as usize,
                next(2000) as usize,
            );
            let limit = 1 << (15 + next(9));
            let k_ok = next(2) == 1;
            match cut(whole.clone(), limit, k_ok, dense(2)) {
                Ok(pieces) => {
                    assert_tiles(&whole, &pieces);
                    assert!(pieces.iter().all(|p| dense(2)(p).iter().all(|&s| s <= limit)));
                    assert!(k_ok || pieces.iter().all(|p| !p.accumulates()));
                    cut_ok += usize::from(pieces.len() > 1);
                }
                // A 1x1x1 piece always fits: only a fused problem whose rows or columns alone
                // cannot fit, or one of too many pieces, may fail.
                Err(e) => {
                    let msg = e.to_string();
                    assert!((!k_ok && msg.contains("fused")) || msg.contains("pieces"), "{e}");
                }
            }
        }
        assert!(cut_ok > 100, "only {cut_ok} problems were cut");
    }
}
