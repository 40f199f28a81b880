//! Passes: a GEMM split into dispatches that respect the device's workgroup-count and
//! storage-buffer-range limits, and split-K planning. Pure.

use crate::device::DeviceLimits;
use crate::error::{Error, Result};
use crate::tiling::{Layout, TileGeometry, VECTOR_BYTES};
use serde::Serialize;

/// A GEMM's shape: C (m x n) = A (m x k) * B (k x n), with device leading dimensions in elements.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// A's storage order.
    pub a_layout: Layout,
    /// B's storage order.
    pub b_layout: Layout,
    /// A's leading dimension (elements; a multiple of 16 bytes).
    pub lda: usize,
    /// B's leading dimension.
    pub ldb: usize,
    /// C's leading dimension (C is row-major).
    pub ldc: usize,
    /// Bytes per stored A element.
    pub a_bytes: usize,
    /// Bytes per stored B element.
    pub b_bytes: usize,
    /// Bytes per C element.
    pub c_bytes: usize,
    /// Bytes from the start of A's, B's and C's buffers to their first element (multiples of
    /// 16; zero for vk-sgmat's own matrices).
    pub offsets: [u64; 3],
}

/// A window of a buffer bound for one pass.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Byte offset of the binding (a multiple of minStorageBufferOffsetAlignment).
    pub bind_offset: u64,
    /// Bytes bound.
    pub bind_range: u64,
    /// Offset of the operand's first element from the binding, in bytes.
    pub start: u64,
}

/// One dispatch: the sub-GEMM C[m0.., n0..] (+)= A[m0.., k0..] * B[k0.., n0..].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pass {
    /// First row of C.
    pub m0: usize,
    /// First column of C.
    pub n0: usize,
    /// First k.
    pub k0: usize,
    /// Rows in this pass.
    pub m: usize,
    /// Columns in this pass.
    pub n: usize,
    /// K in this pass.
    pub k: usize,
    /// Workgroups along x (N) and y (M).
    pub groups: [u32; 2],
    /// Whether this pass adds to C (a K chunk after the first) instead of applying the caller's beta.
    pub accumulate: bool,
    /// A's binding.
    pub a: Window,
    /// B's binding.
    pub b: Window,
    /// C's binding.
    pub c: Window,
}

/// The limits [`plan`] respects.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DispatchLimits {
    /// `maxComputeWorkGroupCount[0]` and `[1]`.
    pub max_groups: [u32; 2],
    /// maxStorageBufferRange in bytes.
    pub max_range: u64,
    /// minStorageBufferOffsetAlignment in bytes.
    pub offset_alignment: u64,
}

impl DispatchLimits {
    /// The device's limits.
    pub fn from_device(l: &DeviceLimits) -> Self {
        Self {
            max_groups: [l.max_workgroup_count[0], l.max_workgroup_count[1]],
            max_range: u64::from(l.max_storage_buffer_range),
            offset_alignment: l.min_storage_buffer_offset_alignment.max(1),
        }
    }
}

impl DispatchLimits {
    /// Checks limits that replace `device`'s
    /// ([`ContextOptions::limits_override`](crate::ContextOptions::limits_override)): they may only
    /// be tighter, since the planner's windows are bound on the real device.
    pub fn check_within(&self, device: &DispatchLimits) -> Result<()> {
        let bad = |msg: String| Err(Error::InvalidOption(format!("limits_override: {msg}")));
        for (i, (&ours, &dev)) in self.max_groups.iter().zip(&device.max_groups).enumerate() {
            if ours == 0 || ours > dev {
                return bad(format!("max_groups[{i}] = {ours} must be 1..={dev}"));
            }
        }
        if self.max_range < 16 || self.max_range > device.max_range {
            return bad(format!(
                "max_range = {} must be 16..={}",
                self.max_range, device.max_range
            ));
        }
        let a = self.offset_alignment;
        if !a.is_power_of_two() || a < device.offset_alignment || a > 1 << 16 {
            return bad(format!(
                "offset_alignment = {a} must be a power of two from the device's {} to 65536",
                device.offset_alignment
            ));
        }
        Ok(())
    }
}

/// Bytes a kernel reads or writes from an operand stored `layout` with leading dimension `ld`,
/// starting at (outer0, inner0), covering `outer x inner` elements (inner rounded up to whole
/// vectors, as the kernel loads them).
fn span(outer0: usize, inner0: usize, outer: usize, inner: usize, ld: usize, es: usize, vec: bool) -> (u64, u64) {
    let start = (outer0 * ld + inner0) * es;
    let inner_bytes = if vec {
        (inner * es).next_multiple_of(VECTOR_BYTES as usize)
    } else {
        inner * es
    };
    let len = (outer - 1) * ld * es + inner_bytes;
    (start as u64, len as u64)
}

fn window(start: u64, len: u64, limits: &DispatchLimits) -> Window {
    let bind_offset = start - start % limits.offset_alignment;
    Window {
        bind_offset,
        bind_range: start - bind_offset + len,
        start: start - bind_offset,
    }
}

/// Splits `problem` into passes whose workgroup counts and buffer windows fit `limits`. Bands along
/// M and N are multiples of the workgroup tile and K chunks multiples of `k_step`, so every pass
/// starts 16-byte aligned. Passes along K after the first accumulate into C.
pub fn plan(problem: &Problem, geometry: &TileGeometry, limits: &DispatchLimits) -> Result<Vec<Pass>> {
    let (bm, bn, bk) = (geometry.bm as usize, geometry.bn as usize, geometry.bk as usize);
    let p = problem;
    let fits = |mb: usize, nb: usize, kb: usize| -> bool {
        if mb.div_ceil(bm) > limits.max_groups[1] as usize || nb.div_ceil(bn) > limits.max_groups[0] as usize {
            return false;
        }
        let slack = limits.offset_alignment - 1;
        let a = match p.a_layout {
            Layout::RowMajor => span(0, 0, mb, kb, p.lda, p.a_bytes, true),
            Layout::ColMajor => span(0, 0, kb, mb, p.lda, p.a_bytes, true),
        };
        let b = match p.b_layout {
            Layout::RowMajor => span(0, 0, kb, nb, p.ldb, p.b_bytes, true),
            Layout::ColMajor => span(0, 0, nb, kb, p.ldb, p.b_bytes, true),
        };
        let c = span(0, 0, mb, nb, p.ldc, p.c_bytes, false);
        [a.1, b.1, c.1].iter().all(|&len| len + slack <= limits.max_range)
    };
    // Start from the whole problem and halve the dimension that hurts most until a band fits.
    let (mut mb, mut nb, mut kb) = (p.m, p.n, p.k);
    let round = |v: usize, t: usize| v.div_ceil(t).max(1) * t;
    while !fits(mb.min(p.m), nb.min(p.n), kb.min(p.k)) {
        let can_m = mb > bm;
        let can_n = nb > bn;
        let can_k = kb > bk;
        if !(can_m || can_n || can_k) {
            return Err(Error::TooLarge(format!(
                "even one {bm}x{bn}x{bk} tile of this problem (lda={}, ldb={}, ldc={}) needs a buffer window larger than the device's maxStorageBufferRange of {} bytes",
                p.lda, p.ldb, p.ldc, limits.max_range
            )));
        }
        // Prefer splitting M/N (no extra K passes); split K last.
        if can_m && (mb >= nb || !can_n) {
            mb = round(mb / 2, bm);
        } else if can_n {
            nb = round(nb / 2, bn);
        } else {
            kb = round(kb / 2, bk);
        }
    }
    let mut passes = Vec::new();
    for m0 in (0..p.m).step_by(mb) {
        let m = mb.min(p.m - m0);
        for n0 in (0..p.n).step_by(nb) {
            let n = nb.min(p.n - n0);
            for k0 in (0..p.k).step_by(kb) {
                let k = kb.min(p.k - k0);
                let (a0, alen) = match p.a_layout {
                    Layout::RowMajor => span(m0, k0, m, k, p.lda, p.a_bytes, true),
                    Layout::ColMajor => span(k0, m0, k, m, p.lda, p.a_bytes, true),
                };
                let (b0, blen) = match p.b_layout {
                    Layout::RowMajor => span(k0, n0, k, n, p.ldb, p.b_bytes, true),
                    Layout::ColMajor => span(n0, k0, n, k, p.ldb, p.b_bytes, true),
                };
                let (c0, clen) = span(m0, n0, m, n, p.ldc, p.c_bytes, false);
                passes.push(Pass {
                    m0,
                    n0,
                    k0,
                    m,
                    n,
                    k,
                    groups: [n.div_ceil(bn) as u32, m.div_ceil(bm) as u32],
                    accumulate: k0 > 0,
                    a: window(p.offsets[0] + a0, alen, limits),
                    b: window(p.offsets[1] + b0, blen, limits),
                    c: window(p.offsets[2] + c0, clen, limits),
                });
            }
        }
    }
    Ok(passes)
}

/// How many K slices to run concurrently (split-K) for a problem whose grid has `tiles`
/// workgroups of `subgroups` subgroups: enough to bring the GPU to about `target_subgroups`
/// subgroups in flight, at most 16, each slice at least 256 deep in K. CPU drivers never split.
pub fn choose_split_k(tiles: usize, subgroups: usize, k: usize, cpu_device: bool) -> u32 {
    const TARGET_SUBGROUPS: usize = 1024;
    if cpu_device || k < 512 {
        return 1;
    }
    let in_flight = tiles * subgroups;
    let want = TARGET_SUBGROUPS.div_ceil(in_flight.max(1));
    want.min(16).min(k / 256).max(1) as u32
}

/// Passes for split-K: `splits` concurrent slices of K (multiples of `k_step`), each writing the
/// whole M x N partial product to its own slice of a scratch buffer laid out like C (`ldc`),
/// `slice_bytes` apart. `None` when a slice's windows would not fit the limits (plan instead).
pub fn plan_split_k(
    problem: &Problem,
    geometry: &TileGeometry,
    limits: &DispatchLimits,
    splits: u32,
    slice_bytes: u64,
) -> Option<Vec<Pass>> {
    let p = problem;
    let (bm, bn, bk) = (geometry.bm as usize, geometry.bn as usize, geometry.bk as usize);
    let groups = [p.n.div_ceil(bn), p.m.div_ceil(bm)];
    if groups[0] > limits.max_groups[0] as usize || groups[1] > limits.max_groups[1] as usize {
        return None;
    }
    let kc = p.k.div_ceil(splits as usize).next_multiple_of(bk);
    let mut passes = Vec::new();
    for (s, k0) in (0..p.k).step_by(kc).enumerate() {
        let k = kc.min(p.k - k0);
        let (a0, alen) = match p.a_layout {
            Layout::RowMajor => span(0, k0, p.m, k, p.lda, p.a_bytes, true),
            Layout::ColMajor => span(k0, 0, k, p.m, p.lda, p.a_bytes, true),
        };
        let (b0, blen) = match p.b_layout {
            Layout::RowMajor => span(k0, 0, k, p.n, p.ldb, p.b_bytes, true),
            Layout::ColMajor => span(0, k0, p.n, k, p.ldb, p.b_bytes, true),
        };
        let (_, clen) = span(0, 0, p.m, p.n, p.ldc, p.c_bytes, false);
        let windows = [
            window(p.offsets[0] + a0, alen, limits),
            window(p.offsets[1] + b0, blen, limits),
            window(s as u64 * slice_bytes, clen, limits),
        ];
        if windows.iter().any(|w| w.bind_range > limits.max_range) {
            return None;
        }
        passes.push(Pass {
            m0: 0,
            n0: 0,
            k0,
            m: p.m,
            n: p.n,
            k,
            groups: [groups[0] as u32, groups[1] as u32],
            accumulate: false,
            a: windows[0],
            b: windows[1],
            c: windows[2],
        });
    }
    Some(passes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tiling::test_support::lavapipe_limits;

    fn problem(m: usize, n: usize, k: usize, a: Layout, b: Layout) -> Problem {
        let ld = |outer_inner: (usize, usize)| outer_inner.1.next_multiple_of(8);
        Problem {
            m,
            n,
            k,
            a_layout: a,
            b_layout: b,
            lda: ld(a.outer_inner(m, k)),
            ldb: ld(b.outer_inner(k, n)),
            ldc: n.next_multiple_of(4),
            a_bytes: 2,
            b_bytes: 2,
            c_bytes: 4,
            offsets: [0; 3],
        }
    }

    fn geom() -> TileGeometry {
        TileGeometry {
            bm: 32,
            bn: 32,
            bk: 16,
            threads: 32,
            shared_bytes: 0,
        }
    }

    /// Every output element is covered exactly once per K range, and K is covered exactly once.
    fn assert_covers(p: &Problem, passes: &[Pass], limits: &DispatchLimits) {
        let mut hits = vec![0usize; p.m * p.n];
        for pass in passes {
            assert!(pass.groups[0] <= limits.max_groups[0] && pass.groups[1] <= limits.max_groups[1]);
            for w in [pass.a, pass.b, pass.c] {
                assert!(w.bind_range <= limits.max_range, "{w:?}");
                assert_eq!(w.bind_offset % limits.offset_alignment, 0);
                assert_eq!(w.start % 16, 0, "operand start must stay 16-byte aligned");
            }
            for r in pass.m0..pass.m0 + pass.m {
                for c in pass.n0..pass.n0 + pass.n {
                    hits[r * p.n + c] += pass.k;
                }
            }
            assert_eq!(pass.accumulate, pass.k0 > 0);
        }
        assert!(hits.iter().all(|&h| h == p.k), "every output must see all of K once");
    }

    #[test]
    fn one_pass_when_it_fits() {
        let p = problem(257, 129, 65, Layout::RowMajor, Layout::ColMajor);
        let l = DispatchLimits::from_device(&lavapipe_limits());
        let passes = plan(&p, &geom(), &l).unwrap();
        assert_eq!(passes.len(), 1);
        assert_eq!(passes[0].groups, [5, 9]);
        assert_covers(&p, &passes, &l);
    }

    #[test]
    fn operand_offsets_shift_every_window() {
        let mut p = problem(100, 70, 50, Layout::ColMajor, Layout::RowMajor);
        let l = DispatchLimits {
            max_groups: [65535; 2],
            max_range: 1 << 30,
            offset_alignment: 256,
        };
        let at0 = plan(&p, &geom(), &l).unwrap();
        p.offsets = [48, 4096 + 32, 16];
        let moved = plan(&p, &geom(), &l).unwrap();
        for (x, y) in at0.iter().zip(&moved) {
            for (i, (w0, w)) in [(x.a, y.a), (x.b, y.b), (x.c, y.c)].into_iter().enumerate() {
                assert_eq!(w.bind_offset + w.start, w0.bind_offset + w0.start + p.offsets[i]);
                assert_eq!(w.bind_offset % 256, 0);
                assert_eq!(w.start % 16, 0);
                assert_eq!(w.bind_range - w.start, w0.bind_range - w0.start);
            }
        }
    }

    #[test]
    fn splits_for_workgroup_count() {
        let p = problem(300, 700, 5, Layout::RowMajor, Layout::RowMajor);
        let l = DispatchLimits {
            max_groups: [4, 3],
            max_range: u64::MAX,
            offset_alignment: 64,
        };
        let passes = plan(&p, &geom(), &l).unwrap();
        assert!(passes.len() > 1);
        assert_covers(&p, &passes, &l);
    }

    #[test]
    fn splits_for_buffer_range_in_every_layout() {
        for a in [Layout::RowMajor, Layout::ColMajor] {
            for b in [Layout::RowMajor, Layout::ColMajor] {
                let p = problem(200, 150, 333, a, b);
                let l = DispatchLimits {
                    max_groups: [65535; 2],
                    max_range: 24 << 10,
                    offset_alignment: 256,
                };
                let passes = plan(&p, &geom(), &l).unwrap();
                assert!(passes.len() > 1, "{a:?}{b:?}");
                assert_covers(&p, &passes, &l);
            }
        }
    }

    #[test]
    fn k_splits_accumulate() {
        // Column-major A with a long K: only K chunks can shrink A's window.
        let p = problem(32, 32, 4000, Layout::ColMajor, Layout::RowMajor);
        let l = DispatchLimits {
            max_groups: [65535; 2],
            max_range: 32 << 10,
            offset_alignment: 16,
        };
        let passes = plan(&p, &geom(), &l).unwrap();
        assert!(passes.iter().filter(|p| p.accumulate).count() >= 1);
        assert_covers(&p, &passes, &l);
    }

    #[test]
    fn split_k_heuristic_and_plan() {
        // 16x4096x4096 with 32x32 tiles of one subgroup: 128 subgroups, so 8 slices of 512.
        assert_eq!(choose_split_k(128, 1, 4096, false), 8);
        assert_eq!(choose_split_k(1024, 4, 4096, false), 1, "a full GPU needs no split");
        assert_eq!(choose_split_k(1, 1, 700, false), 2, "slices stay at least 256 deep");
        assert_eq!(choose_split_k(1, 1, 100_000, true), 1, "never on CPU drivers");
        let p = problem(16, 4096, 4096, Layout::RowMajor, Layout::ColMajor);
        let l = DispatchLimits {
            max_groups: [65535; 2],
            max_range: u64::MAX,
            offset_alignment: 256,
        };
        let slice = (p.m * p.ldc * p.c_bytes) as u64;
        let passes = plan_split_k(&p, &geom(), &l, 8, slice).unwrap();
        assert_eq!(passes.len(), 8);
        assert_eq!(passes.iter().map(|x| x.k).sum::<usize>(), 4096);
        assert!(passes
            .iter()
            .all(|x| x.k0 % 16 == 0 && !x.accumulate && x.c.start % 16 == 0));
        assert_eq!(passes[3].c.bind_offset + passes[3].c.start, 3 * slice);
        // Uneven K: the last slice is shorter and K is still covered once.
        let p = problem(16, 64, 1000, Layout::ColMajor, Layout::RowMajor);
        let passes = plan_split_k(&p, &geom(), &l, 3, 1 << 20).unwrap();
        assert_eq!(passes.iter().map(|x| x.k).sum::<usize>(), 1000);
    }

    #[test]
    fn impossible_window_is_an_error() {
        let mut p = problem(64, 64, 64, Layout::RowMajor, Layout::RowMajor);
        p.lda = 1 << 20;
        let l = DispatchLimits {
            max_groups: [65535; 2],
            max_range: 1 << 20,
            offset_alignment: 16,
        };
        assert!(matches!(plan(&p, &geom(), &l), Err(Error::TooLarge(_))));
    }
}
