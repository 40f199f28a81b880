//! GEMMs on host matrices over several devices: each device, on its own thread and stream,
//! receives B's columns for its block once, then its rows of A in bands; each band's multiply
//! runs while the next band is staged, and its block of C is copied into the caller's C while
//! the next band multiplies. Pinned operands ([`PinnedMatrix`]) skip the host copies: each
//! device's copy engine reads A and B and writes C in place.

use super::trace::{HostMarks, PipelineStep, PipelineTrace, Tracer};
use super::MultiContext;
use crate::api::{
    check_matrix, input, output, Context, Direct, Element, GemmOptions, In, Input, Lines, MatMut, MatRef, Matmul, Out,
    Output, PinnedMatrix,
};
use crate::error::{Error, Result};
use crate::plan::check_shapes;
use crate::plan::{pipeline_blocks, Split, SplitKind};
use crate::stream::{Download, Stream};
use crate::submit::{StreamCore, Ticket};
use crate::tiling::Layout;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Where the devices find A, B and C in place: pinned operands' imports, or `None` (staged).
type Directs = [Option<Direct>; 3];

/// The imports of pinned A, B and C.
fn directs<TA: Element, TB: Element, TC: Element>(
    a: &PinnedMatrix<TA>,
    b: &PinnedMatrix<TB>,
    c: &PinnedMatrix<TC>,
) -> Directs {
    [Some(a.direct()), Some(b.direct()), Some(c.direct())]
}

/// `direct` for C^T = B^T A^T (A and B trade places; C's memory is the same).
fn transposed([a, b, c]: &Directs) -> Directs {
    [b.clone(), a.clone(), c.clone()]
}

impl MultiContext {
    /// Runs `op` over every device and waits: host matrices ([`MatRef`], [`MatMut`]) cut as
    /// [`Matmul::split`] says (default [`SplitKind::Auto`]), each device receiving B's columns
    /// for its block once, then its rows of A in bands that overlap the multiplies; pinned
    /// matrices ([`PinnedMatrix`], made by [`MultiContext::pinned_matrix`]) likewise, each
    /// device's copy engine reading and writing them in place where it imported them; or
    /// [`DistMatrix`](crate::DistMatrix)es already on the devices (made by
    /// [`MultiContext::distribute`] for one split; the split is theirs), where no data moves.
    /// The result is the one a single [`Context`] gives, bit for bit where both run the same
    /// kernel on a block (the tile scheme may differ with the block's size). Plain GEMMs only (no
    /// fused epilogue, no groups). On an error C's contents are unspecified; an error of one
    /// device names it.
    pub fn run<'a, 'b, 'c, TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        a: impl Input<'a, TA>,
        b: impl Input<'b, TB>,
        c: impl Output<'c, TC>,
    ) -> Result<()> {
        op.plain_only("several GPUs (run the rest on each device's Context)")?;
        let options = &op.options;
        match (input(a), input(b), output(c)) {
            (In::Host(a), In::Host(b), Out::Host(c)) => {
                let split = self.split_of::<TA, TB>(op, check_host(&a, &b, &c)?)?;
                self.split_with(a, b, c, options, &split, (&[None, None, None], false))
                    .map(|_| ())
            }
            (In::Pinned(a), In::Pinned(b), Out::Pinned(c)) => {
                let split = self.split_of::<TA, TB>(op, (a.rows(), b.cols(), a.cols()))?;
                self.pinned_parts(a, b, c, options, &split, false).map(|_| ())
            }
            (In::Dist(a), In::Dist(b), Out::Dist(c)) => self.gemm_distributed(a, b, c, options),
            (a, b, c) => Err(Error::Unsupported(format!(
                "A is {}, B {} and C {}: several GPUs take three host, three pinned or three distributed matrices",
                a.residency(),
                b.residency(),
                c.residency()
            ))),
        }
    }

    /// The cut of an `m x n x k` GEMM `op` asks for ([`Matmul::split`]), else
    /// [`SplitKind::Auto`]'s.
    pub(crate) fn split_of<TA: Element, TB: Element>(
        &self,
        op: &Matmul<'_>,
        (m, n, k): (usize, usize, usize),
    ) -> Result<Split> {
        match op.split {
            Some(s) => Ok(s.clone()),
            None => self.split::<TA, TB>(m, n, k, SplitKind::Auto),
        }
    }

    /// [`MultiContext::run`] on pinned matrices cut as `split` says, each part traced where `trace` says.
    pub(crate) fn pinned_parts<TA: Element, TB: Element, TC: Element>(
        &self,
        a: &PinnedMatrix<TA>,
        b: &PinnedMatrix<TB>,
        c: &mut PinnedMatrix<TC>,
        options: &GemmOptions,
        split: &Split,
        trace: bool,
    ) -> Result<Vec<Option<PipelineTrace>>> {
        let direct = directs(a, b, c);
        self.split_with(a.as_ref(), b.as_ref(), c.as_mut(), options, split, (&direct, trace))
    }

    /// A zeroed `rows x cols` host matrix stored `layout`, imported into every device of this
    /// set that can (see [`PinnedMatrix`]), for [`MultiContext::run`].
    pub fn pinned_matrix<T: Element>(&self, rows: usize, cols: usize, layout: Layout) -> Result<PinnedMatrix<T>> {
        let devices: Vec<_> = self.contexts.iter().map(|c| &c.device).collect();
        PinnedMatrix::new(&devices, rows, cols, layout)
    }

    /// [`MultiContext::run`] on host matrices cut as `split` says, with operands found in place where `direct` says; each
    /// part's trace where `trace` asks for them.
    fn split_with<TA: Element, TB: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: MatRef<'_, TB>,
        c: MatMut<'_, TC>,
        options: &GemmOptions,
        split: &Split,
        (direct, trace): (&Directs, bool),
    ) -> Result<Vec<Option<PipelineTrace>>> {
        let call = Instant::now();
        let (m, n, k) = check_host(&a, &b, &c)?;
        split.check((m, n, k), self.contexts.len())?;
        if c.layout == Layout::ColMajor {
            // A column-major C is a row-major C^T = B^T A^T over the same memory.
            let split = split.transposed();
            return self.split_with(b.t(), a.t(), c.t(), options, &split, (&transposed(direct), trace));
        }
        self.plan_parts::<TA, TB, TC>(split, (a.layout, b.layout), options)?;
        let outs = carve(c, split);
        let parts = split
            .parts
            .iter()
            .zip(outs)
            .map(|(p, out)| (p.device, (p, out)))
            .collect();
        let results = super::on_each(parts, |d, (p, out)| {
            let (a, b) = (a.block(p.rows.clone(), 0..k), b.block(0..k, p.cols.clone()));
            run_part(
                &self.contexts[d],
                (a, b, out),
                options,
                direct,
                trace.then_some((d, call)),
            )
        });
        self.first_error(results)
    }
}

impl Context {
    /// `c = alpha * a * b + beta * c` on pinned host matrices, on this device alone: B is copied
    /// in place once, then A's rows in bands, each band's multiply overlapping the next band's
    /// copy and the last band's C (see [`MultiContext::run`]). Matrices this device
    /// cannot import are staged, with the same result.
    pub(crate) fn gemm_pinned<TA: Element, TB: Element, TC: Element>(
        &self,
        a: &PinnedMatrix<TA>,
        b: &PinnedMatrix<TB>,
        c: &mut PinnedMatrix<TC>,
        options: &GemmOptions,
    ) -> Result<()> {
        let direct = directs(a, b, c);
        pinned_alone(self, a.as_ref(), b.as_ref(), c.as_mut(), options, &direct)
    }
}

/// `Context::gemm_pinned` on views of the pinned matrices.
fn pinned_alone<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    a: MatRef<'_, TA>,
    b: MatRef<'_, TB>,
    c: MatMut<'_, TC>,
    options: &GemmOptions,
    direct: &Directs,
) -> Result<()> {
    let (m, n, k) = check_host(&a, &b, &c)?;
    if c.layout == Layout::ColMajor {
        return pinned_alone(ctx, b.t(), a.t(), c.t(), options, &transposed(direct));
    }
    ctx.plan::<TA, TB, TC>(&Matmul::with_options(options), (m, n, k), (a.layout, b.layout))?;
    let whole = Split::new((m, n, k), &[1.0], SplitKind::Rows, (size_of::<TA>(), size_of::<TB>()))?;
    let rows = carve(c, &whole).pop().expect("one part");
    run_part(ctx, (a, b, rows), options, direct, None).map(|_| ())
}

/// Checks host operands and returns (M, N, K).
fn check_host<TA, TB, TC>(a: &MatRef<'_, TA>, b: &MatRef<'_, TB>, c: &MatMut<'_, TC>) -> Result<(usize, usize, usize)> {
    check_matrix("A", a)?;
    check_matrix("B", b)?;
    check_matrix("C", &c.as_ref())?;
    check_shapes((a.rows, a.cols), (b.rows, b.cols), (c.rows, c.cols))
}

/// The rows of each part's block of a row-major C, as disjoint slices (parts in split order).
fn carve<'a, T>(c: MatMut<'a, T>, split: &Split) -> Vec<Vec<&'a mut [T]>> {
    let mut outs: Vec<Vec<&'a mut [T]>> = split.parts.iter().map(|p| Vec::with_capacity(p.rows.len())).collect();
    let mut by_col: Vec<usize> = (0..split.parts.len()).collect();
    by_col.sort_by_key(|&i| split.parts[i].cols.start);
    let mut rest: &'a mut [T] = c.data;
    for r in 0..c.rows {
        let len = if r + 1 < c.rows { c.ld } else { c.cols };
        let (row, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        let mut row: &'a mut [T] = row;
        let mut at = 0;
        for &i in by_col.iter().filter(|&&i| split.parts[i].rows.contains(&r)) {
            let cols = &split.parts[i].cols;
            let (_, from) = std::mem::take(&mut row).split_at_mut(cols.start - at);
            let (mine, after) = from.split_at_mut(cols.len());
            outs[i].push(mine);
            row = after;
            at = cols.end;
        }
    }
    outs
}

/// A band of C on its way to the caller's rows: through readback memory, or copied in place.
enum Pending<'o, T: Element> {
    Staged(Download<T>, Vec<&'o mut [T]>),
    /// The submission that writes the rows; they stay borrowed until it completes.
    Direct(Ticket, Vec<&'o mut [T]>),
}

impl<T: Element> Pending<'_, T> {
    fn finish(self) -> Result<()> {
        match self {
            Self::Staged(d, mut rows) => d.wait_rows(&mut rows),
            Self::Direct(ticket, _rows) => ticket.wait(),
        }
    }
}

/// One device's part: B's columns once, then A's rows band by band, each band's C copied into
/// `out` (its rows of the caller's C). Three streams: copies in, multiplies, copies out; the
/// stream cores order them on the GPU by the buffers they share, so band `i + 1` comes in and
/// band `i - 1` goes out while band `i` multiplies (on the copy engines where the device has a
/// copy-only queue family). A band buffer is held for the pool by every stream that uses it:
/// whichever finishes with it last returns it. On an error the streams' drops wait for what was
/// submitted, so nothing writes `out` after this returns.
fn run_part<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (a, b, out): (MatRef<'_, TA>, MatRef<'_, TB>, Vec<&mut [TC]>),
    options: &GemmOptions,
    direct: &Directs,
    trace: Option<(usize, Instant)>,
) -> Result<Option<PipelineTrace>> {
    let (k, cols) = (a.cols, b.cols);
    let reads_c = options.beta != 0.0;
    let bytes_per_row = k * size_of::<TA>() + cols * size_of::<TC>() * (1 + usize::from(reads_c));
    let bands = pipeline_blocks(0..a.rows, bytes_per_row, ctx.pool.max_allocation());
    let mut s = PartStreams::new(ctx, trace, bands.len())?;
    let mut bd = None;
    s.timed((PipelineStep::BIn, 0, bytes(k, cols, size_of::<TB>())), &mut |core| {
        bd = Some(upload_pooled(ctx, core, &b, direct[1].as_ref())?);
        Ok(())
    })?;
    let bd = bd.expect("recorded");
    s.inp.submit()?;
    let first_submit = Instant::now();
    let mut waiting = Duration::ZERO;
    let mut wait = |p: Pending<'_, TC>| {
        let t = Instant::now();
        let done = p.finish();
        waiting += t.elapsed();
        done
    };
    // Bands in flight: two where the copy engines read A in place, one where the CPU stages
    // it (it packs the next band while the GPU works on this one).
    let depth = match direct[0]
        .as_ref()
        .is_some_and(|d| d.lines_of(&ctx.device, &a).is_some())
    {
        true => 2,
        false => 1,
    };
    let shared = PartShared {
        a,
        bd: &bd,
        options,
        direct,
        reads_c,
    };
    let mut pending: VecDeque<Pending<'_, TC>> = VecDeque::new();
    let mut out = out.into_iter();
    for (i, band) in bands.iter().enumerate() {
        let dst: Vec<&mut [TC]> = out.by_ref().take(band.len()).collect();
        pending.push_back(run_band(
            ctx,
            &mut s,
            &shared,
            (i, band.clone(), i + 1 == bands.len()),
            dst,
        )?);
        while pending.len() > depth {
            wait(pending.pop_front().expect("more than depth"))?;
        }
    }
    for p in pending {
        wait(p)?;
    }
    let t = Instant::now();
    // B's buffer goes back to the pool when the multiplies' stream lets go of it last (a copy
    // of the handle kept here would free it instead: 512 MiB allocated per call at 16384^3).
    drop(bd);
    let tracer = s.finish(); // every step's timestamps are written once their streams are done
    waiting += t.elapsed();
    tracer
        .map(|tracer| tracer.finish(ctx, HostMarks { first_submit, waiting }))
        .transpose()
}

/// Bytes of a `rows x cols` matrix of `es`-byte elements.
fn bytes(rows: usize, cols: usize, es: usize) -> u64 {
    (rows * cols * es) as u64
}

/// A part's three streams (A's and C's bands in, the multiplies, C out) and its tracer where
/// the part is traced.
struct PartStreams<'c> {
    inp: Stream<'c>,
    mm: Stream<'c>,
    outp: Stream<'c>,
    tracer: Option<Tracer>,
}

impl<'c> PartStreams<'c> {
    fn new(ctx: &'c Context, trace: Option<(usize, Instant)>, bands: usize) -> Result<Self> {
        let (mut inp, mut mm, outp) = (ctx.copy_stream(0)?, ctx.stream()?, ctx.copy_stream(1)?);
        let tracer = match trace {
            Some(at) => {
                let tracer = Tracer::new(ctx, at, &mut mm.core, bands)?;
                inp.wait_for(&mm.submit()?)?; // the queries are reset before any step writes them
                Some(tracer)
            }
            None => None,
        };
        Ok(PartStreams { inp, mm, outp, tracer })
    }

    /// Records `f` as `step` (of a band, doing some work) on the step's stream, between
    /// timestamps where the part is traced.
    fn timed(
        &mut self,
        step: (PipelineStep, usize, u64),
        f: &mut dyn FnMut(&mut StreamCore) -> Result<()>,
    ) -> Result<()> {
        let core = match step.0 {
            PipelineStep::BIn | PipelineStep::AIn => &mut self.inp.core,
            PipelineStep::Multiply => &mut self.mm.core,
            PipelineStep::COut => &mut self.outp.core,
        };
        match self.tracer.as_mut() {
            Some(t) => t.around(core, step, |core| f(core)),
            None => f(core),
        }
    }

    /// The tracer, once the streams are done (their drops wait for what they submitted).
    fn finish(self) -> Option<Tracer> {
        let PartStreams { inp, mm, outp, tracer } = self;
        drop((inp, mm, outp));
        tracer
    }
}

/// What every band of a part shares: A, B on the device, the options, the host matrices the
/// copy engines read in place, and whether beta reads C.
struct PartShared<'p, TA: Element, TB: Element> {
    a: MatRef<'p, TA>,
    bd: &'p crate::DeviceMatrix<TB>,
    options: &'p GemmOptions,
    direct: &'p Directs,
    reads_c: bool,
}

/// Band `i` (rows `band` of A and C; `last` the part's last) through the three streams: its
/// rows of A (and of C where beta reads them) copied in, multiplied, and C copied out into
/// `dst` (in place where the copy engines write the caller's rows), submitted; what the host
/// waits for before `dst` is written.
fn run_band<'o, TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    s: &mut PartStreams<'_>,
    shared: &PartShared<'_, TA, TB>,
    (i, band, last): (usize, std::ops::Range<usize>, bool),
    dst: Vec<&'o mut [TC]>,
) -> Result<Pending<'o, TC>> {
    let PartShared {
        a,
        bd,
        options,
        direct,
        reads_c,
    } = shared;
    let (r, k, cols) = (band.len(), a.cols, bd.cols());
    let in_place = direct[2].as_ref().and_then(|d| d.rows_of(&ctx.device, &dst));
    let mut operands = None;
    let c_in = if *reads_c { bytes(r, cols, size_of::<TC>()) } else { 0 };
    let a_in = bytes(r, k, size_of::<TA>()) + c_in;
    s.timed((PipelineStep::AIn, i, a_in), &mut |core| {
        let ad = upload_pooled(ctx, core, &a.block(band.clone(), 0..k), direct[0].as_ref())?;
        let cd = band_c(ctx, core, (&dst, cols), in_place.as_ref(), *reads_c)?;
        operands = Some((ad, cd));
        Ok(())
    })?;
    let (ad, mut cd) = operands.expect("recorded");
    s.inp.submit()?;
    let flops = 2 * (r * cols * k) as u64;
    s.timed((PipelineStep::Multiply, i, flops), &mut |core| {
        ctx.enqueue_run(core, &Matmul::with_options(options), &ad, *bd, &mut cd)
    })?;
    s.mm.core.hold(ad.buffer.clone(), true);
    s.mm.core.hold(cd.buffer.clone(), true);
    if last {
        s.mm.core.hold(bd.buffer.clone(), true);
    }
    s.mm.submit()?;
    let mut staged = None;
    s.timed((PipelineStep::COut, i, bytes(r, cols, size_of::<TC>())), &mut |core| {
        match &in_place {
            Some((import, lines)) => ctx.enqueue_copy_out(core, &cd.buffer, ld_bytes(&cd), (import, lines.clone()))?,
            None => staged = Some(ctx.download_on(core, &cd)?),
        }
        Ok(())
    })?;
    let pending = match staged {
        Some(download) => Pending::Staged(download, dst),
        None => Pending::Direct(s.outp.core.next_ticket(), dst),
    };
    s.outp.core.hold(cd.buffer.clone(), true);
    s.outp.submit()?;
    Ok(pending)
}

/// A band's C on the device, its rows `dst` of the caller's C (`cols` wide): where the GEMM
/// reads C (`reads_c`), copied in by the copy engines from `in_place` (the rows as they sit in
/// pinned memory) or else staged; where it does not, a pooled matrix to write.
fn band_c<TC: Element>(
    ctx: &Context,
    core: &mut StreamCore,
    (dst, cols): (&[&mut [TC]], usize),
    in_place: Option<&(&std::sync::Arc<crate::memory::Buffer>, Lines)>,
    reads_c: bool,
) -> Result<crate::DeviceMatrix<TC>> {
    let r = dst.len();
    match (in_place, reads_c) {
        (Some((import, lines)), true) => {
            let cd = ctx.pooled_matrix::<TC>(r, cols, Layout::RowMajor)?;
            ctx.enqueue_copy_in(core, (import, lines.clone()), &cd.buffer, ld_bytes(&cd))?;
            core.hold(cd.buffer.clone(), true);
            Ok(cd)
        }
        (None, true) => {
            let old: Vec<TC> = dst.iter().flat_map(|r| r.iter().copied()).collect();
            upload_pooled(ctx, core, &MatRef::new(&old, r, cols), None)
        }
        (_, false) => ctx.pooled_matrix::<TC>(r, cols, Layout::RowMajor),
    }
}

/// Bytes from one row of a band's C on the device to the next (what the copy engines step by).
fn ld_bytes<TC: Element>(cd: &crate::DeviceMatrix<TC>) -> u64 {
    (cd.ld() * size_of::<TC>()) as u64
}

/// Enqueues the upload of `m` into a pooled device matrix, which returns to the pool once the
/// stream's submission that carries it completes and nothing else holds it: band buffers are
/// reused from call to call (allocating device memory each time cost more than the copy).
/// A pinned `m` is copied in place where `direct` finds it on this device.
fn upload_pooled<T: Element>(
    ctx: &Context,
    core: &mut StreamCore,
    m: &MatRef<'_, T>,
    direct: Option<&Direct>,
) -> Result<crate::DeviceMatrix<T>> {
    let dm = ctx.pooled_matrix::<T>(m.rows, m.cols, m.layout)?;
    match direct.and_then(|d| d.lines_of(&ctx.device, m)) {
        Some((import, lines)) => {
            let ld_bytes = (dm.ld() * size_of::<T>()) as u64;
            ctx.enqueue_copy_in(core, (import, lines), &dm.buffer, ld_bytes)?
        }
        None => ctx.enqueue_upload(core, m, &dm)?,
    }
    core.hold(dm.buffer.clone(), true);
    Ok(dm)
}
