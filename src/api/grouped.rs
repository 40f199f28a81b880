//! Grouped GEMM (mixture of experts): G groups that share N and K, group `g` multiplying its
//! `rows[g]` rows of A (the groups' rows concatenated, as routed tokens are) by its own weight
//! `B[g]` into the same rows of C. The groups run as one dispatch whose grid rows are the
//! groups' tile rows, read from a table ([`crate::plan::GemmPlan::grouped`]). Where that cannot
//! be (operands converted first, the accurate split), each group is planned as its own GEMM
//! over windows of A and C and all are recorded without barriers between them, so the GPU runs
//! them concurrently (a group of 0 rows records nothing; split-K, whose reduction is a barrier,
//! is off unless asked).

use super::batch::{check_batch, BatchMut, BatchRef, DeviceBatch};
use super::context::Context;
use super::fused::Fused;
use super::matrix::{check_matrix, unpack, DeviceMatrix, Element, MatMut, MatRef};
use super::operand::{placed, Placed};
use super::options::GemmOptions;
use super::stored::Stored;
use crate::error::{Error, Result};
use crate::plan::{check_shapes, Batch, GemmPlan};
use crate::submit::StreamCore;
use crate::tiling::Layout;

impl Context {
    /// A grouped [`Context::run`] on host operands, with a fused epilogue where `fused` is given.
    pub(crate) fn grouped_host<TA: Element, TB: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: BatchRef<'_, TB>,
        c: MatMut<'_, TC>,
        rows: &[usize],
        options: &GemmOptions,
        fused: Option<&Fused<'_>>,
    ) -> Result<()> {
        check_groups(rows, b.count, (a.rows, a.layout), (c.rows, c.layout))?;
        if let Some(f) = fused {
            f.terms(group_vectors(rows, c.cols)?)?;
        }
        if a.rows == 0 {
            return Ok(()); // every group is empty
        }
        check_matrix("A", &a)?;
        check_matrix("C", &c.as_ref())?;
        check_batch("B", &b)?;
        check_shapes((a.rows, a.cols), (b.matrix.rows, b.matrix.cols), (c.rows, c.cols))?;
        let es = [size_of::<TA>(), size_of::<TB>(), size_of::<TC>()];
        let (bm, limit) = (&b.matrix, self.limits.max_allocation);
        let over = [
            Stored::new(a.rows, a.cols, Layout::RowMajor, es[0], 1),
            Stored::new(bm.rows, bm.cols, bm.layout, es[1], b.count),
            Stored::new(c.rows, c.cols, Layout::RowMajor, es[2], 1),
        ]
        .iter()
        .any(|s| s.bytes() > limit);
        if over {
            // Too large for one allocation (all of MoE's expert weights often are): a GEMM per
            // group, each cut into pieces that fit as any host GEMM is.
            return self.groups_one_by_one(a, b, c, rows, options, fused);
        }
        // Staged through the pool, as every host path is: the stream gives them back once done.
        let da = self.pooled_matrix::<TA>(a.rows, a.cols, Layout::RowMajor)?;
        let (db, stored) = self.alloc_batch(&b, true)?;
        // Every row of C belongs to a group, so C needs no clearing where beta is 0.
        let dc = self.pooled_matrix::<TC>(c.rows, c.cols, Layout::RowMajor)?;
        let plans = self.plan_groups(&da, &db, &dc, rows, options, fused)?;
        // Everything is validated; now move data and run, in one submission.
        let staging = self.run_blocking(|core| {
            self.enqueue_upload(core, &a, &da)?;
            self.enqueue_upload_batch(core, &b, &db, &stored)?;
            if options.beta != 0.0 {
                self.enqueue_upload(core, &c.as_ref(), &dc)?;
            }
            self.enqueue_groups(core, &plans, (&da, &db, &dc), fused)?;
            let down = self.enqueue_download(core, &dc)?;
            for buffer in [&da.buffer, &db.matrix().buffer, &dc.buffer] {
                core.hold(buffer.clone(), true);
            }
            Ok(down)
        })?;
        unpack(staging.mapped()?, dc.ld, c);
        self.pool.give(staging);
        Ok(())
    }

    /// A grouped GEMM as one host GEMM per group (with its rows and columns of the epilogue's
    /// vectors), each cut into pieces that fit as any host GEMM is, of checked operands.
    fn groups_one_by_one<TA: Element, TB: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: BatchRef<'_, TB>,
        mut c: MatMut<'_, TC>,
        rows: &[usize],
        options: &GemmOptions,
        fused: Option<&Fused<'_>>,
    ) -> Result<()> {
        let (n, k) = (c.cols, a.cols);
        let mut first = 0;
        for (g, &m) in rows.iter().enumerate() {
            if m > 0 {
                let (a_g, c_g) = (
                    a.block(first..first + m, 0..k),
                    c.reborrow().block(first..first + m, 0..n),
                );
                let f = fused
                    .map(|f| f.piece(&(first..first + m), &(g * n..(g + 1) * n)))
                    .transpose()?;
                let (a_g, b_g) = (BatchRef::strided(a_g, 1, 0), BatchRef::strided(b.entry(g), 1, 0));
                self.batched(a_g, b_g, BatchMut::strided(c_g, 1, 0), options, f)?;
            }
            first += m;
        }
        Ok(())
    }

    /// Checks the groups (and a fused epilogue's vectors: see [`group_vectors`]) and plans them,
    /// with their operands: one plan for all, or one per non-empty group.
    pub(crate) fn plan_groups<'o, TA: Element, TB: Element, TC: Element>(
        &self,
        a: &'o DeviceMatrix<TA>,
        b: &'o DeviceBatch<TB>,
        c: &'o DeviceMatrix<TC>,
        rows: &[usize],
        options: &GemmOptions,
        fused: Option<&Fused<'_>>,
    ) -> Result<Vec<(GemmPlan, [Placed<'o>; 3])>> {
        check_groups(rows, b.count(), (a.rows, a.layout), (c.rows, c.layout))?;
        let (pa, pc) = (placed(a), placed(c));
        let (pb, _, b_stride) = b.entries();
        self.check_placed(&[&pa, &pb, &pc])?;
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let terms = match fused {
            Some(f) => Some(self.fused_terms(f, group_vectors(rows, c.cols)?, types)?),
            None => None,
        };
        let plan = |a, b, c, options: &GemmOptions| self.plan_fused(a, b, c, types, Batch::ONE, options, terms);
        // The groups fill the GPU together: split-K's reduction, a barrier, would serialise them.
        let options = &GemmOptions {
            split_k: options.split_k.or(Some(1)),
            ..options.clone()
        };
        // The grouped kernel itself passes the driver self-test; a drop plans again.
        loop {
            let one = self.plan_rows_as_one([pa, pb, pc], types, options, terms).ok();
            let Some(plan) = one.and_then(|p| p.grouped(rows, b_stride, &self.limits)) else {
                break;
            };
            if self.self_tested(&plan)? {
                let operands = plan.bind_order([pa, pb, pc]);
                return Ok(vec![(plan, operands)]);
            }
        }
        let es = (size_of::<TA>(), size_of::<TC>());
        let vectors = terms.map(|_| Columns::Group);
        self.plan_each_group(rows, ([pa, pc], es), vectors, |g, ga, gc| {
            let gb = Placed {
                offset: pb.offset + (g * b_stride * size_of::<TB>()) as u64,
                ..pb
            };
            Ok((plan(ga, gb, gc, options)?, gb))
        })
    }

    /// Each non-empty group of `rows` planned apart by `plan(g, rows of A, rows of C)`, which
    /// gives the group's plan and its B; with fused-epilogue `vectors`, they are read as the
    /// whole GEMM's (row vectors from the group's first row, column vectors as [`Columns`]
    /// says). A and C (row-major for groups; C column-major too for chunks of one GEMM's rows)
    /// have elements of `es` bytes. The plans with their operands in bind order.
    pub(super) fn plan_each_group<'o>(
        &self,
        rows: &[usize],
        ([pa, pc], es): ([Placed<'o>; 2], (usize, usize)),
        vectors: Option<Columns>,
        mut plan: impl FnMut(usize, Placed<'o>, Placed<'o>) -> Result<(GemmPlan, Placed<'o>)>,
    ) -> Result<Vec<(GemmPlan, [Placed<'o>; 3])>> {
        let mut plans = Vec::new();
        let mut first = 0usize;
        for (g, &m) in rows.iter().enumerate() {
            if m == 0 {
                continue;
            }
            let ga = group_rows(pa, first..first + m, es.0);
            let gc = group_rows(pc, first..first + m, es.1);
            let (mut p, gb) = plan(g, ga, gc)?;
            if let Some(columns) = vectors {
                let (own, groups) = match columns {
                    Columns::Group => (g, rows.len()),
                    Columns::Shared => (0, 1),
                };
                p = p.group_vectors((first, own), (pa.rows, groups), &self.limits)?;
            }
            let operands = p.bind_order([ga, gb, gc]);
            plans.push((p, operands));
            first += m;
        }
        Ok(plans)
    }

    /// A grouped GEMM's rows (A and C, `placed`, with group 0's weight as B) planned as one
    /// GEMM that [`GemmPlan::grouped`] or [`GemmPlan::grouped_counted`] can make one grid of
    /// (not self-tested: the caller tests the grouped kernel, which this one's twin is not):
    /// split-K off unless asked (its reduction, a barrier, would serialise the groups), A and B
    /// read in place unless asked (a copy first would make it several dispatches), the GEMM
    /// kernels rather than the matrix-vector one unless asked, and the
    /// 128-row tile where the K-contiguous lead's taller ones would pad every group.
    pub(crate) fn plan_rows_as_one(
        &self,
        [pa, pb, pc]: [Placed<'_>; 3],
        types: [crate::ComponentType; 3],
        options: &GemmOptions,
        terms: Option<crate::kernel::Epilogue>,
    ) -> Result<GemmPlan> {
        let whole = GemmOptions {
            split_k: options.split_k.or(Some(1)),
            relayout: options.relayout.or(Some(false)),
            // One grid of every group's tiles is a GEMM kernel's (the matrix-vector kernel has
            // no group table); a lone group of a few rows still takes it below.
            matrix_vector: options.matrix_vector.or(Some(false)),
            ..options.clone()
        };
        let plan = |options: &GemmOptions| self.plan_pure(pa, pb, pc, types, Batch::ONE, options, terms);
        let one = plan(&whole)?;
        if options.scheme.is_some() || !pads_groups(&one, (pa.layout, pb.layout)) {
            return Ok(one);
        }
        // The K-contiguous lead's 256-row tiles pad every group's last tile row, and tiles on
        // an edge run clamped: 8 experts of an MoE layer in `nt` took 3.55 ms with them, 2.63
        // with the default order's 128x128 tile (H200, docs/perf/h200-37-5.txt; 3.50 and 2.65
        // in h200-edge-1.txt).
        let (config, q) = (one.config, one.problem);
        let scheme = self
            .scheme_lists(&config)
            .choose_default(&config, (q.m, q.n), 1, self.is_cpu())?;
        plan(&GemmOptions {
            scheme: Some(scheme),
            ..whole
        })
    }

    /// Records every group's plan on `core` after one ordering point for the whole of A, B and
    /// C (and a fused epilogue's vectors): no barriers between the groups (they write disjoint
    /// rows of C).
    pub(crate) fn enqueue_groups<TA: Element, TB: Element, TC: Element>(
        &self,
        core: &mut StreamCore,
        plans: &[(GemmPlan, [Placed<'_>; 3])],
        (a, b, c): (&DeviceMatrix<TA>, &DeviceBatch<TB>, &DeviceMatrix<TC>),
        fused: Option<&Fused<'_>>,
    ) -> Result<()> {
        let whole = [placed(a), placed(b.matrix()), placed(c)];
        self.enqueue_fused_plans(core, plans, whole, fused.unwrap_or(&Fused::new()), (TC::TYPE, None))
    }
}

/// Which of the whole GEMM's fused-epilogue column vectors (a column bias, column scales) a
/// group planned apart reads ([`Context::plan_each_group`]).
#[derive(Clone, Copy)]
pub(super) enum Columns {
    /// Its own group's N values, from the `g * N`-th: each expert's bias.
    Group,
    /// The same N values for every group: row chunks of one GEMM.
    Shared,
}

/// Rows `rows` of `p` (elements of `es` bytes): a group's rows of A or C. Row-major, their
/// offset in bytes stays 16-byte aligned (leading dimensions are whole vectors); column-major
/// (a chunk of C^T's columns) it moves by elements, which only C, addressed by element, takes.
fn group_rows(p: Placed<'_>, rows: std::ops::Range<usize>, es: usize) -> Placed<'_> {
    let row_step = match p.layout {
        Layout::RowMajor => p.ld,
        Layout::ColMajor => 1,
    };
    Placed {
        rows: rows.len(),
        offset: p.offset + (rows.start * row_step * es) as u64,
        ..p
    }
}

/// Whether `plan`, of a grouped GEMM's rows as one GEMM with f32 or integer results and A and B
/// stored `layouts`, took the K-contiguous lead
/// ([`crate::tiling::preferred::preferred_k_contiguous_schemes`]), whose tiles are taller than
/// the default's 128 rows. (i8 `nt` MoE layer, H200: 3.24 ms on the lead's 256-row tile, 1.95
/// on the subgroup-scope default; docs/perf/h200-grouped-4.txt.)
fn pads_groups(plan: &GemmPlan, layouts: (Layout, Layout)) -> bool {
    use crate::config::ComponentType::{F32, I32, U32};
    let k_contiguous = layouts == (Layout::RowMajor, Layout::ColMajor);
    let padded_result = matches!(plan.config.result_type, F32 | I32 | U32);
    k_contiguous && padded_result && plan.scheme.geometry(&plan.config).bm > 128
}

/// The lengths a grouped GEMM's fused-epilogue vectors take, as `(rows, columns)` of a C they
/// fit: row vectors (a row bias, row scales) run over every group's rows (`sum(rows)` values,
/// one per token); column vectors (a column bias, column scales) hold each group's own `n`
/// values, group after group (`rows.len() * n`: each expert's bias or channel scales).
pub(super) fn group_vectors(rows: &[usize], n: usize) -> Result<(usize, usize)> {
    let cols = n
        .checked_mul(rows.len())
        .ok_or_else(|| Error::TooLarge("the groups' column vectors overflow".into()))?;
    Ok((rows.iter().sum(), cols))
}

/// Checks a grouped GEMM's row counts against A and C (row-major, `sum(rows)` rows each) and
/// B's count.
pub(super) fn check_groups(
    rows: &[usize],
    weights: usize,
    (a_rows, a_layout): (usize, Layout),
    (c_rows, c_layout): (usize, Layout),
) -> Result<()> {
    if rows.is_empty() || rows.len() != weights {
        return Err(Error::ShapeMismatch(format!(
            "{} group sizes for {weights} weights: one size per weight, at least one",
            rows.len()
        )));
    }
    if a_layout != Layout::RowMajor || c_layout != Layout::RowMajor {
        return Err(Error::InvalidOperand(
            "grouped GEMM takes row-major A and C: each group's rows follow the one before".into(),
        ));
    }
    let total = rows
        .iter()
        .try_fold(0usize, |t, &m| t.checked_add(m))
        .ok_or_else(|| Error::TooLarge("the group sizes overflow".into()))?;
    if total != a_rows || total != c_rows {
        return Err(Error::ShapeMismatch(format!(
            "the groups hold {total} rows, A has {a_rows} and C {c_rows}"
        )));
    }
    Ok(())
}
