//! GEMMs on host matrices over several devices: each device, on its own thread and stream,
//! receives B's columns for its block once, then its rows of A in bands; each band's multiply
//! runs while the next band is staged, and its block of C is copied into the caller's C while
//! the next band multiplies.

use super::split::{pipeline_blocks, Split, SplitKind};
use super::MultiContext;
use crate::api::{check_matrix, Context, Element, GemmOptions, MatMut, MatRef};
use crate::error::Result;
use crate::plan::check_shapes;
use crate::stream::Download;
use crate::tiling::Layout;
use std::collections::VecDeque;

impl MultiContext {
    /// `c = a * b` over every device (see [`MultiContext::gemm_with`]).
    pub fn gemm<TA: Element, TB: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: MatRef<'_, TB>,
        c: MatMut<'_, TC>,
    ) -> Result<()> {
        self.gemm_with(a, b, c, &GemmOptions::default())
    }

    /// `c = alpha * a * b + beta * c` on host matrices over every device, cut by
    /// [`SplitKind::Auto`]. The result is the one a single [`Context`] gives, bit for bit where
    /// both run the same kernel on a block (the tile scheme may differ with the block's size).
    /// On an error C's contents are unspecified.
    pub fn gemm_with<TA: Element, TB: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: MatRef<'_, TB>,
        c: MatMut<'_, TC>,
        options: &GemmOptions,
    ) -> Result<()> {
        let (m, n, k) = check_host(&a, &b, &c)?;
        let split = self.split::<TA, TB>(m, n, k, SplitKind::Auto)?;
        self.gemm_split(a, b, c, options, &split)
    }

    /// [`MultiContext::gemm_with`] cut as `split` says (from [`MultiContext::split`], or built
    /// by hand: it is checked).
    pub fn gemm_split<TA: Element, TB: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: MatRef<'_, TB>,
        c: MatMut<'_, TC>,
        options: &GemmOptions,
        split: &Split,
    ) -> Result<()> {
        let (m, n, k) = check_host(&a, &b, &c)?;
        split.check((m, n, k), self.contexts.len())?;
        if c.layout == Layout::ColMajor {
            // A column-major C is a row-major C^T = B^T A^T over the same memory.
            return self.gemm_split(b.t(), a.t(), c.t(), options, &split.transposed());
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
            run_part(&self.contexts[d], a, b, out, options)
        });
        self.first_error(results).map(|_| ())
    }
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

/// One device's part: B's columns once, then A's rows band by band, each band's C copied into
/// `out` (its rows of the caller's C) while the next band multiplies.
fn run_part<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    a: MatRef<'_, TA>,
    b: MatRef<'_, TB>,
    out: Vec<&mut [TC]>,
    options: &GemmOptions,
) -> Result<()> {
    let (k, cols) = (a.cols, b.cols);
    let reads_c = options.beta != 0.0;
    let bytes_per_row = k * size_of::<TA>() + cols * size_of::<TC>() * (1 + usize::from(reads_c));
    let mut s = ctx.stream()?;
    let bd = upload_pooled(ctx, &mut s, &b)?;
    s.submit()?; // B's copy starts while the first band is staged
    let mut pending: VecDeque<(Download<TC>, Vec<&mut [TC]>)> = VecDeque::new();
    let mut out = out.into_iter();
    let bands = pipeline_blocks(0..a.rows, bytes_per_row);
    let last = bands.len() - 1;
    for (i, band) in bands.into_iter().enumerate() {
        let dst: Vec<&mut [TC]> = out.by_ref().take(band.len()).collect();
        let ad = upload_pooled(ctx, &mut s, &a.block(band.clone(), 0..k))?;
        let mut cd = if reads_c {
            let old: Vec<TC> = dst.iter().flat_map(|r| r.iter().copied()).collect();
            upload_pooled(ctx, &mut s, &MatRef::new(&old, band.len(), cols))?
        } else {
            let cd = ctx.pooled_matrix::<TC>(band.len(), cols, Layout::RowMajor)?;
            s.core.hold(cd.buffer.clone(), true);
            cd
        };
        s.gemm(&ad, &bd, &mut cd, options)?;
        pending.push_back((s.download(&cd)?, dst));
        if i == last {
            s.core.hold(bd.buffer.clone(), true); // B returns to the pool after its last use
        }
        s.submit()?;
        if pending.len() > 1 {
            let (d, mut rows) = pending.pop_front().expect("two pending");
            d.wait_rows(&mut rows)?;
        }
    }
    for (d, mut rows) in pending {
        d.wait_rows(&mut rows)?;
    }
    Ok(())
}

/// Enqueues the upload of `m` into a pooled device matrix, which returns to the pool once the
/// stream's submission that carries it completes and nothing else holds it: band buffers are
/// reused from call to call (allocating device memory each time cost more than the copy).
fn upload_pooled<T: Element>(
    ctx: &Context,
    s: &mut crate::Stream<'_>,
    m: &MatRef<'_, T>,
) -> Result<crate::DeviceMatrix<T>> {
    let dm = ctx.pooled_matrix::<T>(m.rows, m.cols, m.layout)?;
    ctx.enqueue_upload(&mut s.core, m, &dm)?;
    s.core.hold(dm.buffer.clone(), true);
    Ok(dm)
}
