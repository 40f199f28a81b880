//! Grouped GEMMs whose group sizes the device holds: a mixture-of-experts router that counts
//! its tokens per expert on the GPU hands the counts to the grouped GEMM without a trip to the
//! host and back. A first pass builds the tile table from them
//! ([`crate::plan::GemmPlan::grouped_counted`]); the GEMM runs as the one dispatch a grouped
//! GEMM with host sizes takes.

use super::batch::DeviceBatch;
use super::context::Context;
use super::fused::Fused;
use super::matrix::{DeviceMatrix, Element};
use super::operand::{placed, Placed};
use super::options::GemmOptions;
use super::work::{Counts, Work};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::memory::BufferKind;
use crate::plan::{ComputeMode, DeviceCounts, GemmPlan};
use crate::record::Access;
use crate::submit::StreamCore;
use crate::tiling::Layout;

impl Context {
    /// Runs planned device work that `enqueue` records (freshly, or as a prepared operation
    /// binds it) and waits; a grouped GEMM's device counts are then read back: counts adding up
    /// to more rows than A's are an error, and C is then as it was (no group ran).
    pub(crate) fn run_checked(
        &self,
        work: Work<'_>,
        enqueue: impl FnOnce(&mut StreamCore) -> Result<()>,
    ) -> Result<()> {
        let Some(Counts { at: pc, where_, groups }) = work.counts else {
            return self.run_blocking(enqueue);
        };
        let a_rows = work.whole[0].rows;
        // The plan checked that it does not overflow.
        let span = where_.span(groups).unwrap_or(0);
        let staging = self.pool.take(span as u64, BufferKind::Readback)?;
        let ran = self.run_blocking(|core| {
            enqueue(core)?;
            core.access(&[pc.touch()], &[])?;
            let mut rec = core.recording()?;
            rec.copy_region(pc.raw, pc.offset, staging.raw(), 0, span as u64);
            rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
            Ok(())
        });
        let read = ran.and_then(|()| {
            let words: &[u32] = bytemuck::cast_slice(&staging.mapped()?[..span]);
            Ok(words.iter().step_by(where_.stride).map(|&x| u64::from(x)).sum::<u64>())
        });
        self.pool.give(staging);
        let total = read?;
        if total > a_rows as u64 {
            return Err(Error::ShapeMismatch(format!(
                "the device counts add up to {total} rows and A has {a_rows}: no group ran, C is as it was"
            )));
        }
        Ok(())
    }

    /// Checks the operands and the counts (B's count of u32 values in one row or column) and
    /// plans: the plan, its operands in bind order, and where the counts lie.
    pub(crate) fn plan_counted<'o, TA: Element, TB: Element, TC: Element>(
        &self,
        a: &'o DeviceMatrix<TA>,
        b: &'o DeviceBatch<TB>,
        c: &'o DeviceMatrix<TC>,
        pk: Placed<'_>,
        options: &GemmOptions,
        fused: Option<&Fused<'_>>,
    ) -> Result<(GemmPlan, [Placed<'o>; 3], DeviceCounts)> {
        let (pa, pc) = (placed(a), placed(c));
        let (pb, _, b_stride) = b.entries();
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let groups = b.count();
        let where_ = self.check_counted([pa, pb, pc], groups, pk)?;
        let terms = self.counted_terms(fused, (pa.rows, pc.cols, groups), types)?;
        let stride_bytes = b_stride * size_of::<TB>();
        let decode = self.plan_counted_decode(pa.rows, (groups, stride_bytes), where_, options, || {
            self.plan_gemv_within((pa, pb, pc), types, (options, terms), &self.limits)
        })?;
        let plan = match decode {
            Some(plan) => plan,
            None => self.plan_counted_placed([pa, pb, pc], (groups, b_stride), where_, types, (options, terms))?,
        };
        let operands = plan.bind_order([pa, pb, pc]);
        Ok((plan, operands, where_))
    }

    /// [`Context::plan_counted`] on placed operands ([`Context::check_counted`]'s, the counts
    /// where it found them, the fused terms [`Context::counted_terms`]'): B the first of
    /// `groups` weights, one every `b_stride` elements, as one grouped GEMM dispatch.
    pub(crate) fn plan_counted_placed(
        &self,
        [pa, pb, pc]: [Placed<'_>; 3],
        (groups, b_stride): (usize, usize),
        where_: DeviceCounts,
        types: [ComponentType; 3],
        (options, terms): (&GemmOptions, Option<crate::kernel::Epilogue>),
    ) -> Result<GemmPlan> {
        // One dispatch for every group: f32 operands are not converted in passes of their own
        // first, and the accurate split (whose largest-magnitude passes come first) gives way to
        // the exact kernel, as for a batch.
        let accurate_f32 = options.compute == ComputeMode::Accurate && types[..2] == [ComponentType::F32; 2];
        let options = &GemmOptions {
            convert_first: options.convert_first.or(Some(false)),
            compute: if accurate_f32 {
                ComputeMode::Exact
            } else {
                options.compute
            },
            ..options.clone()
        };
        // The grouped kernel itself passes the driver self-test; a drop plans again.
        loop {
            let plan = self.plan_rows_as_one([pa, pb, pc], types, options, terms)?;
            let plan = plan.grouped_counted(groups, where_, b_stride, &self.limits)?;
            if self.self_tested(&plan)? {
                return Ok(plan);
            }
        }
    }

    /// Decode's grouped GEMM with the sizes on the device (A of `rows` rows, the counts where
    /// [`Context::check_counted`] found them): `one` plans group 0's weight over every row of
    /// A; where that is the matrix-vector kernel, it runs every group, each workgroup row
    /// taking its group from the table a pass builds from the counts
    /// ([`GemmPlan::gemv_grouped_counted`]; the weights `stride_bytes` apart), so only the
    /// weights of groups with rows are read. `None` where A has more rows than the kernel
    /// takes or `one` plans another kernel.
    pub(crate) fn plan_counted_decode(
        &self,
        rows: usize,
        (groups, stride_bytes): (usize, usize),
        where_: DeviceCounts,
        options: &GemmOptions,
        one: impl FnOnce() -> Result<Option<GemmPlan>>,
    ) -> Result<Option<GemmPlan>> {
        use crate::kernel::GEMV_MAX_ROWS;
        if let Some(tile) = options.gemv_group_rows.filter(|t| !(1..=GEMV_MAX_ROWS).contains(t)) {
            return Err(Error::InvalidOption(format!(
                "gemv_group_rows = {tile}: use 1 to {GEMV_MAX_ROWS} rows of A per workgroup, or None"
            )));
        }
        if rows > GEMV_MAX_ROWS as usize || options.matrix_vector == Some(false) {
            return Ok(None);
        }
        let Some(plan) = one()? else {
            return Ok(None);
        };
        let Some(key) = plan.gemv_kernel().filter(|k| !k.c_transposed) else {
            return Ok(None);
        };
        let tile = options
            .gemv_group_rows
            .unwrap_or_else(|| crate::plan::counted_decode_rows(key.quant.is_some()));
        let tuning = (options.gemv_cols, options.gemv_unroll);
        let plan = plan.gemv_grouped_counted(groups, where_, stride_bytes, (tile, tuning), &self.limits)?;
        Ok(Some(plan))
    }

    /// The fused terms of a grouped GEMM of `rows` rows, each of `groups` groups with its own
    /// `cols` values of the column vectors.
    pub(crate) fn counted_terms(
        &self,
        fused: Option<&Fused<'_>>,
        (rows, cols, groups): (usize, usize, usize),
        types: [ComponentType; 3],
    ) -> Result<Option<crate::kernel::Epilogue>> {
        let Some(f) = fused else {
            return Ok(None);
        };
        let cols = cols.checked_mul(groups);
        let cols = cols.ok_or_else(|| Error::TooLarge("the groups' column vectors overflow".into()))?;
        Ok(Some(self.fused_terms(f, (rows, cols), types)?))
    }

    /// Checks the operands of a grouped GEMM whose `groups` sizes the device holds in `pk`
    /// (one u32 per group in one row or column; row-major A and C of as many rows): where the
    /// counts lie.
    pub(crate) fn check_counted(
        &self,
        [pa, pb, pc]: [Placed<'_>; 3],
        groups: usize,
        pk: Placed<'_>,
    ) -> Result<DeviceCounts> {
        let stride = match (pk.rows, pk.cols, pk.layout) {
            (1, _, Layout::RowMajor) | (_, 1, Layout::ColMajor) => 1,
            (1, _, Layout::ColMajor) | (_, 1, Layout::RowMajor) => pk.ld,
            _ => 0,
        };
        if stride == 0 || pk.rows * pk.cols != groups {
            return Err(Error::ShapeMismatch(format!(
                "counts of {}x{} for {groups} weights: one u32 per weight, in one row or one column",
                pk.rows, pk.cols
            )));
        }
        if pa.layout != Layout::RowMajor || pc.layout != Layout::RowMajor || pa.rows != pc.rows {
            return Err(Error::InvalidOperand(format!(
                "grouped GEMM takes row-major A and C of as many rows (A has {}, C {}): each group's rows follow the one before",
                pa.rows, pc.rows
            )));
        }
        self.check_placed(&[&pa, &pb, &pc, &pk])?;
        Ok(DeviceCounts {
            offset: pk.offset,
            stride,
        })
    }
}
