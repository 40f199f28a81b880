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
    /// How many GEMMs of this shape, and where their operands lie ([`Batch::ONE`]: one GEMM).
    pub batch: Batch,
}

/// A strided batch: `count` GEMMs of one shape, entry `i` of A, B and C starting
/// `i * strides[j]` elements after entry 0. A stride of 0 gives every entry the same operand
/// (shared weights); C's entries never overlap.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Batch {
    /// Number of GEMMs (at least 1).
    pub count: usize,
    /// A's, B's and C's distance between entries, in elements.
    pub strides: [usize; 3],
}

impl Batch {
    /// One GEMM.
    pub const ONE: Batch = Batch {
        count: 1,
        strides: [0; 3],
    };

    /// Checks the batch against `p`'s shape: at least one entry, strides of whole 16-byte
    /// vectors (the kernels address A and B in vectors and keep C's tensor stores aligned), and
    /// C's entries disjoint, either stacked (each after the whole of the one before) or side by
    /// side within C's rows (`(count - 1) * stride + n <= ldc`, e.g. heads interleaved in a row).
    pub fn check(&self, p: &Problem) -> Result<()> {
        let bad = |msg: String| Err(Error::InvalidOperand(format!("batch: {msg}")));
        if self.count == 0 {
            return bad("the count must be at least 1".into());
        }
        if self.count == 1 {
            return Ok(());
        }
        let sizes = [p.a_bytes, p.b_bytes, p.c_bytes];
        for ((name, stride), es) in ["A", "B", "C"].into_iter().zip(self.strides).zip(sizes) {
            let Some(bytes) = stride.checked_mul(es) else {
                return bad(format!("{name}'s stride of {stride} elements overflows"));
            };
            if bytes % VECTOR_BYTES as usize != 0 {
                return bad(format!(
                    "{name}'s stride of {stride} elements is not a whole number of {VECTOR_BYTES}-byte vectors"
                ));
            }
            if bytes.checked_mul(self.count - 1).is_none() {
                return bad(format!("{} entries of {name} {bytes} bytes apart overflow", self.count));
            }
        }
        let s = self.strides[2];
        if !disjoint(self.count, s, (p.m, p.n), p.ldc) {
            return bad(format!(
                "C's entries ({}x{}, ldc {}) overlap at a stride of {s} elements: use a stride of at least {} (stacked) or entries side by side within ldc",
                p.m,
                p.n,
                p.ldc,
                (p.m - 1).saturating_mul(p.ldc).saturating_add(p.n)
            ));
        }
        Ok(())
    }

    /// Bytes between entries of operand `j` (0, 1, 2: A, B, C) of `p`.
    fn stride_bytes(&self, p: &Problem, j: usize) -> u64 {
        (self.strides[j] * [p.a_bytes, p.b_bytes, p.c_bytes][j]) as u64
    }
}

/// Whether `count` entries `stride` elements apart, each `outer` runs of `inner` elements `ld`
/// apart (storage order), never share an element: stacked (each after the whole of the one
/// before) or side by side within the runs (`(count - 1) * stride + inner <= ld`).
pub(crate) fn disjoint(count: usize, stride: usize, (outer, inner): (usize, usize), ld: usize) -> bool {
    if count <= 1 || outer == 0 || inner == 0 {
        return true; // empty entries share nothing
    }
    let entry = (outer - 1).checked_mul(ld).and_then(|e| e.checked_add(inner));
    let stacked = entry.is_some_and(|e| stride >= e);
    let side_by_side = stride >= inner
        && (count - 1)
            .checked_mul(stride)
            .and_then(|x| x.checked_add(inner))
            .is_some_and(|end| end <= ld);
    stacked || side_by_side
}

impl Default for Batch {
    fn default() -> Self {
        Self::ONE
    }
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

impl Window {
    /// The first `range` bytes of a buffer, its data starting there.
    pub fn from_start(range: u64) -> Self {
        Self {
            bind_offset: 0,
            bind_range: range,
            start: 0,
        }
    }
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
    /// First batch entry.
    pub batch0: usize,
    /// Batch entries in this pass (the grid's z).
    pub batch: usize,
    /// Workgroups along x (N), y (M) and z (batch entries).
    pub groups: [u32; 3],
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
    /// `maxComputeWorkGroupCount`.
    pub max_groups: [u32; 3],
    /// maxStorageBufferRange in bytes.
    pub max_range: u64,
    /// minStorageBufferOffsetAlignment in bytes.
    pub offset_alignment: u64,
    /// maxMemoryAllocationSize in bytes: no buffer vk-sgmat allocates is larger. Host GEMMs
    /// whose operands are larger run in pieces that fit it (`crate::plan::cut`).
    pub max_allocation: u64,
    /// `maxComputeSharedMemorySize` in bytes: no kernel vk-sgmat plans declares more workgroup
    /// memory.
    pub max_shared: u32,
}

impl DispatchLimits {
    /// The device's limits.
    pub fn from_device(l: &DeviceLimits) -> Self {
        Self {
            max_groups: l.max_workgroup_count,
            max_range: u64::from(l.max_storage_buffer_range),
            offset_alignment: l.min_storage_buffer_offset_alignment.max(1),
            // 0: the driver did not say (Vulkan 1.1 requires at least 1 GiB to be offered).
            max_allocation: match l.max_memory_allocation_size {
                0 => u64::MAX,
                n => n,
            },
            // 0: the driver did not say (Vulkan requires at least 16 KiB).
            max_shared: match l.max_shared_memory {
                0 => 16 << 10,
                n => n,
            },
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
        if self.max_allocation < 1 << 10 || self.max_allocation > device.max_allocation {
            return bad(format!(
                "max_allocation = {} must be 1024..={}",
                self.max_allocation, device.max_allocation
            ));
        }
        if self.max_shared < 1 << 10 || self.max_shared > device.max_shared {
            return bad(format!(
                "max_shared = {} must be 1024..={}",
                self.max_shared, device.max_shared
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
/// Why a band of a problem does not fit the device ([`plan`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Misfit {
    /// More tile rows than the grid's y count allows.
    GridM,
    /// More tile columns than the grid's x count allows.
    GridN,
    /// Operand `j`'s window (A, B, C) passes the binding range.
    Range(usize),
}

/// A dimension of the problem a band is cut along.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Dim {
    M,
    N,
    K,
}

pub(crate) fn span(
    outer0: usize,
    inner0: usize,
    outer: usize,
    inner: usize,
    ld: usize,
    es: usize,
    vec: bool,
) -> (u64, u64) {
    let start = (outer0 * ld + inner0) * es;
    let inner_bytes = if vec {
        (inner * es).next_multiple_of(VECTOR_BYTES as usize)
    } else {
        inner * es
    };
    let len = (outer - 1) * ld * es + inner_bytes;
    (start as u64, len as u64)
}

pub(crate) fn window(start: u64, len: u64, limits: &DispatchLimits) -> Window {
    let bind_offset = start - start % limits.offset_alignment;
    Window {
        bind_offset,
        bind_range: start - bind_offset + len,
        start: start - bind_offset,
    }
}

/// Splits `problem` into passes whose workgroup counts and buffer windows fit `limits`. Bands along
/// M and N are multiples of the workgroup tile and K chunks multiples of `k_step`, so every pass
/// starts 16-byte aligned. Passes along K after the first accumulate into C. A batch runs as
/// many entries per pass as the grid's z and the windows allow (all of them, within limits).
pub fn plan(problem: &Problem, geometry: &TileGeometry, limits: &DispatchLimits) -> Result<Vec<Pass>> {
    problem.batch.check(problem)?;
    let band = band_that_fits(problem, geometry, limits)?;
    Ok(cut(problem, geometry, band, limits))
}

/// Bytes the windows of `zb` consecutive entries of `p`'s batch add to one entry's, operand `j`.
fn batch_extra(p: &Problem, zb: usize, j: usize) -> u64 {
    (zb as u64 - 1).saturating_mul(p.batch.stride_bytes(p, j))
}

/// What keeps a band of `mb x nb x kb` (and `zb` entries) of `p` from fitting: a grid dimension
/// over the device's workgroup count, or an operand's window over the binding range.
fn misfit(
    p: &Problem,
    (bm, bn): (usize, usize),
    [mb, nb, kb, zb]: [usize; 4],
    limits: &DispatchLimits,
) -> Option<Misfit> {
    if mb.div_ceil(bm) > limits.max_groups[1] as usize {
        return Some(Misfit::GridM);
    }
    if nb.div_ceil(bn) > limits.max_groups[0] as usize {
        return Some(Misfit::GridN);
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
    [a.1, b.1, c.1]
        .iter()
        .enumerate()
        .position(|(j, &len)| len.saturating_add(batch_extra(p, zb, j)).saturating_add(slack) > limits.max_range)
        .map(Misfit::Range)
}

/// The band (`[mb, nb, kb, zb]`: rows, columns, depth and batch entries) each pass of `p` takes.
/// It starts from the whole problem and is cut until it fits: the batch first (its entries are
/// independent GEMMs), then the dimension that shrinks what does not fit (an operand's window
/// shrinks only along its outer dimension, the rows of a row-major one: halving another one
/// left B's 16384-wide rows as long and cut a 16384^3 GEMM into a million passes on a 128 MiB
/// range), M and N before K where either would do.
fn band_that_fits(p: &Problem, geometry: &TileGeometry, limits: &DispatchLimits) -> Result<[usize; 4]> {
    let (bm, bn, bk) = (geometry.bm as usize, geometry.bn as usize, geometry.bk as usize);
    let (mut mb, mut nb, mut kb) = (p.m, p.n, p.k);
    let mut zb = p.batch.count.min(limits.max_groups[2] as usize);
    let round = |v: usize, t: usize| v.div_ceil(t).max(1) * t;
    while let Some(misfit) = misfit(p, (bm, bn), [mb.min(p.m), nb.min(p.n), kb.min(p.k), zb], limits) {
        if zb > 1 {
            zb = zb.div_ceil(2);
            continue;
        }
        let can = [mb > bm, nb > bn, kb > bk];
        if can == [false; 3] {
            return Err(Error::TooLarge(format!(
                "even one {bm}x{bn}x{bk} tile of this problem (lda={}, ldb={}, ldc={}) needs a buffer window larger than the device's maxStorageBufferRange of {} bytes",
                p.lda, p.ldb, p.ldc, limits.max_range
            )));
        }
        let outer = match misfit {
            Misfit::GridM | Misfit::Range(2) => Dim::M,
            Misfit::GridN => Dim::N,
            Misfit::Range(0) if p.a_layout == Layout::RowMajor => Dim::M,
            Misfit::Range(1) if p.b_layout == Layout::ColMajor => Dim::N,
            Misfit::Range(_) => Dim::K,
        };
        // That dimension where it can still shrink, else M and N before K.
        let dim = match outer {
            Dim::M if can[0] => Dim::M,
            Dim::N if can[1] => Dim::N,
            Dim::K if can[2] => Dim::K,
            _ if can[0] && (mb >= nb || !can[1]) => Dim::M,
            _ if can[1] => Dim::N,
            _ => Dim::K,
        };
        match dim {
            Dim::M => mb = round(mb / 2, bm),
            Dim::N => nb = round(nb / 2, bn),
            Dim::K => kb = round(kb / 2, bk),
        }
    }
    Ok([mb, nb, kb, zb])
}

/// `p` cut into passes of `band` ([`band_that_fits`]), batch entries outermost, then M, N and K.
fn cut(p: &Problem, geometry: &TileGeometry, [mb, nb, kb, zb]: [usize; 4], limits: &DispatchLimits) -> Vec<Pass> {
    let (bm, bn) = (geometry.bm as usize, geometry.bn as usize);
    let batch = p.batch.count;
    let mut passes = Vec::new();
    for batch0 in (0..batch).step_by(zb) {
        let z = zb.min(batch - batch0);
        // Where this pass's first entry starts, and how far its windows reach past one entry's.
        let first = |j: usize| batch0 as u64 * p.batch.stride_bytes(p, j);
        let extra = |j: usize| batch_extra(p, z, j);
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
                        batch0,
                        batch: z,
                        groups: [n.div_ceil(bn) as u32, m.div_ceil(bm) as u32, z as u32],
                        accumulate: k0 > 0,
                        a: window(p.offsets[0] + first(0) + a0, alen + extra(0), limits),
                        b: window(p.offsets[1] + first(1) + b0, blen + extra(1), limits),
                        c: window(p.offsets[2] + first(2) + c0, clen + extra(2), limits),
                    });
                }
            }
        }
    }
    passes
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
    if p.batch.count != 1 {
        return None; // a batch fills the GPU with its entries
    }
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
            batch0: 0,
            batch: 1,
            m0: 0,
            n0: 0,
            k0,
            m: p.m,
            n: p.n,
            k,
            groups: [groups[0] as u32, groups[1] as u32, 1],
            accumulate: false,
            a: windows[0],
            b: windows[1],
            c: windows[2],
        });
    }
    Some(passes)
}

#[cfg(test)]
#[path = "passes_tests.rs"]
mod tests;
