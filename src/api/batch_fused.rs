//! Batched GEMMs with a fused epilogue: every entry's result goes through the same terms (one
//! bias for all entries, as a linear layer applies to each sequence of a batch; one activation;
//! C's type as the output cast), in the one dispatch of the batch.

use super::batch::{BatchMut, BatchOperand, BatchRef, DeviceBatch};
use super::context::Context;
use super::fused::Fused;
use super::matrix::Element;
use super::options::GemmOptions;
use crate::error::Result;
use crate::plan::GemmPlan;

impl Context {
    /// `c[i] = act(alpha * deq(a[i] * b[i]) + beta * c[i] + bias)` for every entry of host
    /// batches, in one dispatch ([`Context::gemm_batched`] with the terms of
    /// [`Context::gemm_fused`]). The bias (M values per row or N per column of an entry) and
    /// any dequantisation scales are shared by every entry. An f16 or bf16 C with 16-bit float
    /// inputs accumulates in f32 and rounds once at the store, as `torch.bmm` does.
    pub fn gemm_batched_fused<TA: Element, TB: Element, TC: Element>(
        &self,
        a: BatchRef<'_, TA>,
        b: BatchRef<'_, TB>,
        c: BatchMut<'_, TC>,
        options: &GemmOptions,
        fused: &Fused<'_>,
    ) -> Result<()> {
        self.batched(a, b, c, options, Some(*fused))
    }

    /// [`Context::gemm_batched_fused`] on device batches; A or B may be one
    /// [`DeviceMatrix`](crate::DeviceMatrix) shared by every entry.
    pub fn gemm_batched_fused_device<TA: Element, TB: Element, TC: Element>(
        &self,
        a: &impl BatchOperand<TA>,
        b: &impl BatchOperand<TB>,
        c: &mut DeviceBatch<TC>,
        options: &GemmOptions,
        fused: &Fused<'_>,
    ) -> Result<()> {
        let (plan, operands) = self.plan_batch(a, b, c, options, Some(fused))?;
        self.run_blocking(|core| self.enqueue_fused(core, &plan, operands, fused, TC::TYPE))
    }

    /// The plan [`Context::gemm_batched_fused_device`] would run on these operands (for
    /// inspection and benchmarks).
    pub fn plan_gemm_batched_fused<TA: Element, TB: Element, TC: Element>(
        &self,
        a: &impl BatchOperand<TA>,
        b: &impl BatchOperand<TB>,
        c: &DeviceBatch<TC>,
        options: &GemmOptions,
        fused: &Fused<'_>,
    ) -> Result<GemmPlan> {
        Ok(self.plan_batch(a, b, c, options, Some(fused))?.0)
    }
}
