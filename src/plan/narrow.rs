//! GEMMs whose operands are copied first, each by a pass of its own into scratch, and then
//! multiplied from the copies:
//! - rounded ([`plan_copied`], [`crate::kernel::narrow`]): an f32 operand's copy keeps its
//!   storage order with the leading dimension padded to whole vectors, and the GEMM is planned
//!   as one of 16-bit operands;
//! - transposed ([`plan_copied`], [`crate::kernel::transpose`]): the copy (of a 16-bit or 8-bit
//!   operand, or an f32 one rounded on the way) is stored in the other order, and the GEMM is
//!   planned with that operand's layout flipped ([`PlanRequest::relayout`]);
//! - split for the accurate mode ([`plan_planes`]): after the largest-magnitude passes, `hi` and
//!   `lo` f16 planes one after the other along K, each padded with zeros to whole K steps, and a
//!   workgroup-scope GEMM of [`Load::Planes`] over twice the padded K.
//!
//! Scratch holds the scale words (planes), then the copies (each at an offset-aligned start),
//! then whatever scratch the GEMM itself needs (split-K slices).

use super::device_ld;
use super::gemm::{Dispatch, GemmPlan, Kernel, Operand, PlanRequest, SplitK};
use super::passes::{span, window, DispatchLimits, Problem, Window};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::{absmax, narrow, transpose, Load, PushConstants};
use crate::tiling::{Layout, VECTOR_BYTES};

const VEC: u64 = VECTOR_BYTES as u64;

/// An operand of the problem as stored: which it is, its window, `outer` rows of `inner`
/// elements in storage order, its leading dimension, its element size, and whether K is its
/// contiguous dimension.
struct Source {
    which: Operand,
    window: Window,
    outer: usize,
    inner: usize,
    ld: usize,
    bytes: usize,
    k_inner: bool,
}

impl Source {
    /// Operand `j` (0: A, 1: B) of `p`, which must be stored with elements of `bytes` (4: f32
    /// converted, 2 or 1: transposed as it is) and fit one binding.
    fn new(p: &Problem, j: usize, bytes: usize, limits: &DispatchLimits) -> Result<Self> {
        let (rows, cols, layout, ld, stored) = if j == 0 {
            (p.m, p.k, p.a_layout, p.lda, p.a_bytes)
        } else {
            (p.k, p.n, p.b_layout, p.ldb, p.b_bytes)
        };
        let name = ["A", "B"][j];
        if stored != bytes {
            let what = if bytes == 4 {
                "only f32 operands are converted"
            } else {
                "only 16-bit and 8-bit operands (or f32 ones converted first) are copied transposed"
            };
            return Err(Error::InvalidOperand(format!(
                "{name} has {stored}-byte elements; {what}"
            )));
        }
        let (outer, inner) = layout.outer_inner(rows, cols);
        let (_, len) = span(0, 0, outer, inner, ld, bytes, true);
        let window = window(p.offsets[j], len, limits);
        if window.bind_range > limits.max_range {
            return Err(Error::TooLarge(format!(
                "copying {name} ({rows}x{cols}) first needs a window of {} bytes, over maxStorageBufferRange ({}); read it where it is: convert it as it loads (convert_first: Some(false)), in its own layout (relayout: Some(false))",
                window.bind_range, limits.max_range
            )));
        }
        Ok(Self {
            which: [Operand::A, Operand::B][j],
            window,
            outer,
            inner,
            ld,
            bytes,
            k_inner: (j == 0) == (layout == Layout::RowMajor),
        })
    }

    /// A transposing dispatch of `kernel` writing `copy` in scratch: `copy_rows` rows (the
    /// source's `inner`, then zeros) of `outer` elements of `copy_bytes` bytes at `copy_ld`
    /// apart, with `extra` push constants set.
    fn transpose(
        &self,
        kernel: Kernel,
        copy: Window,
        (copy_rows, copy_ld, copy_bytes): (usize, usize, usize),
        limits: &DispatchLimits,
        extra: impl FnOnce(&mut PushConstants),
    ) -> Dispatch {
        let (tile_rows, tile_cols) = transpose::tile(copy_bytes as u32);
        let tiles = self.outer.div_ceil(tile_rows as usize) * copy_rows.div_ceil(tile_cols as usize);
        let groups = tiles.min(transpose::MAX_GROUPS.min(limits.max_groups[0]) as usize) as u32;
        let mut push = PushConstants {
            m: self.outer as u32,
            n: self.inner as u32,
            ldc: copy_rows as u32,
            k: groups,
            lda_vec: (self.ld as u64 * self.bytes as u64 / VEC) as u32,
            a_off_vec: (self.window.start / VEC) as u32,
            ldb_vec: (copy_ld as u64 * copy_bytes as u64 / VEC) as u32,
            c_off: 0,
            ..Default::default()
        };
        extra(&mut push);
        self.copying(kernel, copy, push, groups)
    }

    /// A dispatch of `kernel`, `groups` workgroups, reading this operand and writing `copy`.
    fn copying(&self, kernel: Kernel, copy: Window, push: PushConstants, groups: u32) -> Dispatch {
        Dispatch {
            kernel,
            bindings: [
                (self.which, self.window),
                (self.which, self.window),
                (Operand::Scratch, copy),
            ],
            aux: None,
            vectors: [None; 3],
            push,
            groups: [groups, 1, 1],
            after_previous: false,
        }
    }

    /// A converting dispatch of `kernel` writing `copy` in scratch: `rows` copy rows of
    /// `row_vecs` vectors at `copy_ld` elements apart, with `extra` push constants set.
    fn dispatch(
        &self,
        kernel: Kernel,
        copy: Window,
        (rows, row_vecs, copy_ld): (usize, usize, usize),
        limits: &DispatchLimits,
        extra: impl FnOnce(&mut PushConstants),
    ) -> Dispatch {
        let groups = (rows * row_vecs)
            .div_ceil(narrow::THREADS as usize)
            .min(narrow::MAX_GROUPS.min(limits.max_groups[0]) as usize) as u32;
        let mut push = PushConstants {
            m: rows as u32,
            row0: self.outer as u32,
            n: row_vecs as u32,
            k: groups,
            ldc: self.inner as u32,
            lda_vec: (self.ld as u64 * 4 / VEC) as u32,
            a_off_vec: (self.window.start / VEC) as u32,
            ldb_vec: (copy_ld as u64 * 2 / VEC) as u32,
            c_off: 0,
            ..Default::default()
        };
        extra(&mut push);
        self.copying(kernel, copy, push, groups)
    }
}

/// Scratch grows by `bytes` from `end` (offset-aligned); the window of the new stretch.
fn claim(end: &mut u64, bytes: u64, limits: &DispatchLimits) -> Result<Window> {
    if bytes > limits.max_range {
        return Err(Error::TooLarge(format!(
            "an operand copied first would take {bytes} bytes, over maxStorageBufferRange ({}); read it where it is: convert it as it loads (convert_first: Some(false)), in its own layout (relayout: Some(false))",
            limits.max_range
        )));
    }
    let w = Window {
        bind_offset: *end,
        bind_range: bytes,
        start: 0,
    };
    *end = (*end + bytes).next_multiple_of(limits.offset_alignment.max(VEC));
    Ok(w)
}

/// Plans `req` (whose `convert_first` is set and which has an operand loaded with
/// [`Load::Round`], or whose `relayout` names an operand) as copying passes followed by a GEMM
/// of the copies: 16-bit operands, each flipped operand in the other storage order.
pub(super) fn plan_copied(req: &PlanRequest, limits: &DispatchLimits) -> Result<GemmPlan> {
    let p = &req.problem;
    one_gemm(p)?;
    let mut staged = *p;
    let mut copies = Vec::new();
    let mut end = 0u64;
    let to = req.config.component_type;
    for (j, &load) in req.loads.iter().enumerate() {
        let converts = req.convert_first && load == Load::Round;
        let flips = req.relayout[j];
        if !converts && !flips {
            continue;
        }
        let name = ["A", "B"][j];
        let rounds_to = match load {
            Load::Round if converts => Some(to),
            Load::Native if matches!(to.size_bytes(), 1 | 2) => None,
            _ => {
                return Err(Error::Unsupported(format!(
                    "{name} is loaded as {load:?} of {to}: only 16-bit and 8-bit operands, and f32 ones converted first, are copied transposed"
                )))
            }
        };
        // The copy's elements: the 16-bit type rounded to, or the operand's own.
        let bytes = to.size_bytes() as usize;
        let src = Source::new(p, j, if converts { 4 } else { bytes }, limits)?;
        // A transposed copy has the source's `inner` rows of `outer`; a rounded one its shape.
        let (rows, cols) = if flips {
            (src.inner, src.outer)
        } else {
            (src.outer, src.inner)
        };
        let copy_ld = device_ld(cols, bytes);
        let copy = claim(&mut end, (rows * copy_ld * bytes) as u64, limits)?;
        copies.push(if flips {
            let kernel = Kernel::Transpose {
                rounds_to,
                bytes: bytes as u8,
            };
            src.transpose(kernel, copy, (rows, copy_ld, bytes), limits, |_| {})
        } else {
            let rows = (rows, cols.div_ceil(8), copy_ld);
            src.dispatch(Kernel::Narrow { to }, copy, rows, limits, |_| {})
        });
        stage(&mut staged, j, (copy_ld, bytes), copy.bind_offset);
        if flips {
            flip(&mut staged, j);
        }
    }
    let inner = PlanRequest {
        problem: staged,
        // The copies are 16-bit operands.
        loads: if req.convert_first {
            req.loads.map(Load::converted_first)
        } else {
            req.loads
        },
        convert_first: false,
        relayout: [false; 2],
        ..*req
    };
    finish(p, GemmPlan::new(&inner, limits)?, copies, end, limits)
}

/// Plans `req` (the accurate split, `convert_first` set) as the two largest-magnitude passes,
/// a split pass per operand writing its planes, and one workgroup-scope GEMM over them.
pub(super) fn plan_planes(req: &PlanRequest, limits: &DispatchLimits) -> Result<GemmPlan> {
    let p = &req.problem;
    one_gemm(p)?;
    if req.relayout.contains(&true) {
        return Err(Error::Unsupported(
            "the accurate split's planes are always written A column-major, B row-major by their own pass; relayout does not apply".into(),
        ));
    }
    let bk = req.scheme.geometry(&req.config).bk as usize;
    let kp = p.k.next_multiple_of(bk);
    let words = scale_words(limits);
    let mut end = words.bind_range;
    let mut staged = Problem { k: 2 * kp, ..*p };
    let mut passes = Vec::new();
    let mut splits = Vec::new();
    for j in 0..2 {
        let src = Source::new(p, j, 4, limits)?;
        passes.push(absmax_dispatch(
            (src.which, src.window),
            (src.outer, src.inner),
            src.ld,
            (j as u32, words),
        ));
        // kp rows of hi along K (those past K zero), then kp rows of lo: an operand with K along
        // its rows is split transposed, so the GEMM reads A column-major and B row-major, the
        // order its workgroup-scope kernel reads fastest (H200, 4096^3: 89.2 TFLOP/s against
        // 67.2 for planes split in A's order, nn; perf/h200-relayout-5.txt).
        let transposed = src.k_inner;
        let kernel = Kernel::SplitPlanes { transposed };
        let copy_ld = device_ld(if transposed { src.outer } else { src.inner }, 2);
        let lo_off = kp * copy_ld / 8;
        let copy = claim(&mut end, (2 * kp * copy_ld * 2) as u64, limits)?;
        let scale_push = |push: &mut PushConstants| {
            push.b_off_vec = lo_off as u32;
            push.col0 = j as u32;
        };
        let mut d = if transposed {
            src.transpose(kernel, copy, (kp, copy_ld, 2), limits, scale_push)
        } else {
            src.dispatch(kernel, copy, (kp, src.inner.div_ceil(8), copy_ld), limits, scale_push)
        };
        d.aux = Some((Operand::Scratch, words));
        d.after_previous = j == 0;
        splits.push(d);
        stage(&mut staged, j, (copy_ld, 2), copy.bind_offset);
        if transposed {
            flip(&mut staged, j);
        }
    }
    passes.append(&mut splits);
    let inner = PlanRequest {
        problem: staged,
        loads: [Load::Planes; 2],
        split_k: SplitK::Slices(1),
        convert_first: false,
        relayout: [false; 2],
        ..*req
    };
    let gemm = GemmPlan::new(&inner, limits)?;
    if gemm.dispatches.len() != 1 {
        return Err(Error::TooLarge(format!(
            "the accurate f32 mode runs a GEMM in one pass, and this one needs {} for the device's limits; use ComputeMode::Exact",
            gemm.dispatches.len()
        )));
    }
    let mut plan = finish(p, gemm, passes, end, limits)?;
    plan.dispatches.last_mut().expect("the GEMM").aux = Some((Operand::Scratch, words));
    plan.zeroed_scratch_bytes = 16;
    Ok(plan)
}

/// Whether converting f32 operands first pays for an `m x n` result, on a device whose 16-bit
/// GEMM then takes its workgroup-scope kernel: the pass costs about `k (m + n)` element moves
/// against the GEMM's `m n k` multiply-adds, so it pays where `1/m + 1/n` is small enough. The
/// bound, `1/m + 1/n <= 9/4096`, is the H200's (fast f32, TFLOP/s first against as loaded):
/// 1024^3 88 vs 53 and 512x4096x4096 124 vs 51 convert first; 768^3 40 vs 39, 512^3 17 vs 19
/// and 128x4096x4096 48 vs 58 do not (perf/h200-convert-first-small.txt).
pub fn conversion_pays(m: usize, n: usize) -> bool {
    // In u128: m and n are at most MAX_DIM.
    4096 * (m as u128 + n as u128) <= 9 * m as u128 * n as u128
}

/// The storage orders of A and B that NVIDIA's workgroup-scope kernel reads fastest, into which
/// operands are copied first ([`PlanRequest::relayout`]): for 16-bit floats A column-major and
/// B row-major, each contiguous along M or N (4096^3 f16->f32 on the H200: `tn` 291-294
/// TFLOP/s, the others 259-283); for 8-bit integers the other way round, A row-major and B
/// column-major, both contiguous along K (4096^3 i8->i32: `nt` 534 TOPS, `nn` 298, `tt` 284,
/// `tn` 176; u8 alike; perf/h200-int8-layouts-1.txt).
pub fn fast_order(component: ComponentType) -> (Layout, Layout) {
    if component.size_bytes() == 1 {
        (Layout::RowMajor, Layout::ColMajor)
    } else {
        (Layout::ColMajor, Layout::RowMajor)
    }
}

/// Where an 8-bit operand's copy pays (see [`relayout_pays`]): K at least `k`, and N at least
/// `a_from` for a copy of A (it costs against the GEMM as 1/N), M at least `b_from` for one of B.
pub const INT8_RELAYOUT: Int8Relayout = Int8Relayout {
    k: 512,
    a_from: 512,
    b_from: 1024,
};

/// The bounds of [`INT8_RELAYOUT`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Int8Relayout {
    /// The least K.
    pub k: usize,
    /// The least N for a copy of A.
    pub a_from: usize,
    /// The least M for a copy of B.
    pub b_from: usize,
}

/// Where both 16-bit operands of an `nt` GEMM (both K-contiguous) are copied into
/// [`fast_order`] (see [`relayout_pays`]): a K the `nt` leads do not take (under two whole
/// 1024-deep iterations, or under 4096 and no whole number of the 512-deep ones), where `nt`
/// would run the 128x128 tile in place, 13-17% slower than in `tn` order; and M and N long
/// enough to repay the two copies, which run side by side and cost about 5 us at 4096x256 each
/// (a fixed cost more than bandwidth). H200, f16 -> f32, TFLOP/s in place against copied
/// (perf/h200-z-1.txt, -z-2.txt, -z-3.txt, two passes each): 4096x4096x256 151.9-152.4 against
/// 156.6-157.3, x512 198.9-199.9 against 216.9-217.4, x1024 232.9-233.6 against 250.1-252.6,
/// x1536 241.6-249.7 against 266.0-266.3, x3000 226.6-228.0 against 258.3-262.5, 8192x8192x256
/// 166.7-166.9 against 176.4-176.5, 8192x8192x1024 227.7-227.9 against 260.2-261.6,
/// 4096x11008x256 153.8-153.9 against 163.4-164.1, 3072x3072x256 118.2 against 119.5-119.7,
/// 3072x3072x384 132.8-133.9 against 137.1-137.6, 3072x3072x512 152.4-152.8 against
/// 162.4-162.8; bf16 4096x4096x256 152.7-153.0 against 156.5-156.7. Not: 4096x4096x2048 (the
/// sixteen-step lead) 291.3-291.9 against 262.4-263.8, 4096x4096x192 125.8-125.9 against
/// 124.0-125.0, 4096x4096x128 98.1-98.3 against 95.1, 2048x4096x256 139.8 against 132.6-133.0,
/// 2048^2x256 124.7-125.7 against 106.5-106.7. A copy of B alone (`nt` -> `nn`) was slower than
/// both everywhere (4096x4096x256: 148.2-149.1).
pub const NT_RELAYOUT: NtRelayout = NtRelayout {
    k: 256..4096,
    whole_from: 2048,
    whole: 512,
    side: 3072,
};

/// The bounds of [`NT_RELAYOUT`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NtRelayout {
    /// The K copied for ...
    pub k: std::ops::Range<usize>,
    /// ... but from this K on, not where K is a whole number of ...
    pub whole_from: usize,
    /// ... this (the `nt` leads take it).
    pub whole: usize,
    /// The least M and N.
    pub side: usize,
}

impl NtRelayout {
    /// Whether an `m x n x k` `nt` GEMM of 16-bit operands copies both.
    pub fn holds(&self, (m, n, k): (usize, usize, usize)) -> bool {
        let led = k >= self.whole_from && k % self.whole == 0;
        self.k.contains(&k) && !led && m.min(n) >= self.side
    }
}

/// Which operands of an `m x n x k` GEMM of `component` operands and `result`s stored `(a, b)` are worth
/// copying first into [`fast_order`]. A copy costs a pass over the operand and a barrier; the
/// gain is the layout's shortfall.
///
/// 16-bit operands: measured on the H200, f16 -> f32, TFLOP/s in place against relaid
/// (perf/h200-relayout-1.txt): `nn` 4096^3 261.5 -> 279.0, 8192^3 279.5 -> 290.9, but 2048^3
/// 275.7 -> 256.1 and 4096x4096x256 163.3 -> 159.1; `tt` likewise (259.3 -> 279.7, 267.9 ->
/// 293.9); `nt`, whose two copies must both be made, 282.5 -> 265.7 at 4096^3 and 283.0 ->
/// 288.9 at 8192^3. With the copy in registers (perf/h200-relayout-8.txt, -10.txt) one copy
/// also pays at K = 1024 to 2048 (4096x4096x1024 `nn` 252.5 -> 266.0, `tt` 250.9 -> 262.7;
/// 8192x8192x1024 `tt` +10%), at K = 512 only in `nn` (+3.5%, `tt` +0-1%), and two still only
/// at 8192^3 (4096^3 `nt` 279.6 -> 271.2). With the `tn` kernel's grouped raster two also pay
/// where one side is long (perf/h200-two-copies-1.txt, `nt` in place -> copied: 4096x11008x4096
/// 261.9 -> 276.8, 8192x8192x4096 273.0 -> 285.2, 4096x8192x4096 272.5 -> 274.2,
/// 11008x4096x4096 273.4 -> 275.6; but 4096^3 277.9 -> 274.3 and 2048^3 285.4 -> 253.2,
/// perf/h200-check-6.txt). Since the `nt` leads walk large grids in groups of tile rows, `nt`
/// in place beats both copies wherever they had paid (perf/h200-y-3.txt, `bench`, TFLOP/s in
/// place against copied: 4096x11008x4096 291.3 against 280.0, 11008x4096x4096 290.5 against
/// 278.0, 8192^3 309.6 against 305.6, 8192x8192x4096 297.4 against 293.3). So one copy where M
/// and N are 4096 or more and K 1024 or more (a copy costs against the GEMM as 1/N for A and
/// 1/M for B; a short K leaves the barrier's fixed cost). Two for `nt` only where K is too short
/// for its leads ([`NT_RELAYOUT`]), for f32 results; one alone from `nt` (giving `nn`) is slower
/// than both. (f16 results have their own `nt` lead from K = 1024: 4096x4096x1024 f16 -> f16
/// 255.3-255.7 in place against 252.9-253.3 copied; at K = 256 the copies gained 1.5%, 139.2
/// against 141.1-141.6, which is not taken; perf/h200-z-4.txt.)
///
/// 8-bit operands, each on its own ([`INT8_RELAYOUT`]; i8 -> i32 on the H200, TOPS in place
/// against relaid, perf/h200-int8-relayout-1.txt, -2.txt, -3.txt): the workgroup-scope kernel
/// reads the other orders at 0.3-0.56 of `nt`, so 4096^3 `nn` 295 -> 508, `tt` 174 -> 511, `tn`
/// 155 -> 491, 1024x4096x4096 `nn` 277 -> 436, 4096x1024x4096 `tt` 171 -> 457. The
/// subgroup-scope kernel (grids too small for the other, or K not a whole number of its
/// iterations) also reads A faster row-major: 4096x4096x4000 `tt` 173 -> 292, 4096x512x4096
/// 122 -> 144, 1024x1024x4096 `tn` 80 -> 105 (A alone); at N = 256 it gains 1%. B column-major
/// it reads faster only on some tiles (1024x1024x4096 `nn` 119 -> 157, but 512x4096x4096 150 ->
/// 135 and 4096x4096x4000 294 -> 287), so B's copy is dropped where the GEMM does not take the
/// workgroup-scope kernel. That kernel runs int8 from K = 512, where both copies pay
/// (perf/h200-int8-k512-1.txt: 4096x4096x512 `nn` 162.8 -> 269.5, `tt` 124.6 -> 276.3, `tn`
/// 115.5 -> 272.8).
pub fn relayout_pays(
    (component, result): (ComponentType, ComponentType),
    (a, b): (Layout, Layout),
    (m, n, k): (usize, usize, usize),
) -> [bool; 2] {
    let fast = fast_order(component);
    let other = [a != fast.0, b != fast.1];
    if component.size_bytes() == 1 {
        let r = INT8_RELAYOUT;
        return [
            other[0] && n >= r.a_from && k >= r.k,
            other[1] && m >= r.b_from && k >= r.k,
        ];
    }
    let one = m.min(n) >= 4096 && k >= 1024;
    match other {
        [true, true] => [result == ComponentType::F32 && NT_RELAYOUT.holds((m, n, k)); 2],
        [a, b] => [a && one, b && one],
    }
}

/// Which of the copies `relayout` (as [`relayout_pays`] chose them) still pay where the GEMM
/// then does not take the workgroup-scope kernel: only an 8-bit A's, which the subgroup-scope
/// kernel also reads faster row-major (see [`relayout_pays`]).
pub fn relayout_without_workgroup(component: ComponentType, relayout: [bool; 2]) -> [bool; 2] {
    [relayout[0] && component.size_bytes() == 1, false]
}

/// Copying first runs one GEMM at a time.
fn one_gemm(p: &Problem) -> Result<()> {
    if p.batch.count > 1 {
        return Err(Error::Unsupported(format!(
            "copying operands first (converting or transposing them) runs one GEMM at a time, and this is a batch of {}; a batch reads them where they are",
            p.batch.count
        )));
    }
    Ok(())
}

/// Operand `j` of `staged` becomes the copy at `offset` in scratch, `copy_ld` elements of
/// `bytes` bytes apart.
fn stage(staged: &mut Problem, j: usize, (copy_ld, bytes): (usize, usize), offset: u64) {
    if j == 0 {
        (staged.a_bytes, staged.lda) = (bytes, copy_ld);
    } else {
        (staged.b_bytes, staged.ldb) = (bytes, copy_ld);
    }
    staged.offsets[j] = offset;
}

/// Operand `j` of `staged` is read in the other storage order.
fn flip(staged: &mut Problem, j: usize) {
    if j == 0 {
        staged.a_layout = staged.a_layout.transposed();
    } else {
        staged.b_layout = staged.b_layout.transposed();
    }
}

/// The plan of the converted problem (`plan`), its copies bound from scratch and its own scratch
/// moved past them (`end`), after the converting dispatches (`first`); the caller's problem `p`.
fn finish(
    p: &Problem,
    mut plan: GemmPlan,
    mut first: Vec<Dispatch>,
    end: u64,
    limits: &DispatchLimits,
) -> Result<GemmPlan> {
    let converted: Vec<Operand> = first
        .iter()
        .filter(|d| {
            matches!(
                d.kernel,
                Kernel::Narrow { .. } | Kernel::SplitPlanes { .. } | Kernel::Transpose { .. }
            )
        })
        .map(|d| d.bindings[0].0)
        .collect();
    for d in &mut plan.dispatches {
        for (op, w) in d.bindings.iter_mut().chain(d.aux.iter_mut()) {
            if *op == Operand::Scratch {
                w.bind_offset += end;
            } else if converted.contains(op) {
                *op = Operand::Scratch;
            }
        }
    }
    plan.dispatches[0].after_previous = true;
    plan.scratch_bytes += end;
    if plan.scratch_bytes > limits.max_allocation {
        return Err(Error::TooLarge(format!(
            "copying operands first needs {} bytes of scratch, over the device's largest allocation ({}); read them where they are: convert them as they load (convert_first: Some(false)), in their own layouts (relayout: Some(false))",
            plan.scratch_bytes, limits.max_allocation
        )));
    }
    first.append(&mut plan.dispatches);
    plan.dispatches = first;
    plan.problem = *p;
    Ok(plan)
}

/// The accurate split's scale words at the start of scratch (A's largest magnitude in word 0,
/// B's in word 1), a window of one offset alignment; the plan zeroes their 16 bytes.
pub(super) fn scale_words(limits: &DispatchLimits) -> Window {
    Window::from_start(limits.offset_alignment.max(VEC))
}

/// The largest-magnitude pass over an f32 operand (`which`, bound at `window`, `outer` rows of
/// `inner` elements in storage order, leading dimension `ld`) into scale word `word` of the
/// zeroed `words`.
pub(super) fn absmax_dispatch(
    (which, window): (Operand, Window),
    (outer, inner): (usize, usize),
    ld: usize,
    (word, words): (u32, Window),
) -> Dispatch {
    let row_vectors = (inner * 4).div_ceil(VECTOR_BYTES as usize);
    let groups = (outer * row_vectors)
        .div_ceil(absmax::THREADS as usize)
        .min(absmax::MAX_GROUPS as usize) as u32;
    Dispatch {
        kernel: Kernel::AbsMax,
        bindings: [(which, window), (which, window), (Operand::Scratch, words)],
        aux: None,
        vectors: [None; 3],
        push: PushConstants {
            m: outer as u32,
            n: row_vectors as u32,
            lda_vec: (ld * 4 / VECTOR_BYTES as usize) as u32,
            a_off_vec: (window.start / u64::from(VECTOR_BYTES)) as u32,
            c_off: word,
            k: groups,
            ..Default::default()
        },
        groups: [groups, 1, 1],
        after_previous: false,
    }
}

#[cfg(test)]
#[path = "narrow_tests.rs"]
mod tests;
