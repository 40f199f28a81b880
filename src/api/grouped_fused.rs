//! Grouped GEMMs with a fused epilogue: each expert of a mixture-of-experts layer is a linear
//! layer with its own bias (or, for 8-bit weights, its own channel scales), applied in the one
//! dispatch of every group.

use super::batch::{BatchRef, DeviceBatch};
use super::context::Context;
use super::fused::Fused;
use super::matrix::{DeviceMatrix, Element, MatMut, MatRef};
use super::options::GemmOptions;
use crate::error::Result;
use crate::plan::GemmPlan;

impl Context {
    /// `C[rows of g] = act(alpha * deq(A[rows of g] * B[g]) + beta * C[rows of g] + bias)` for
    /// every group `g` ([`Context::gemm_grouped`] with the terms of [`Context::gemm_fused`]).
    /// Vectors along C's rows (a row bias, row scales) hold one value per row of A, every
    /// group's rows in order (`sum(rows)` values: per token); vectors along C's columns (a
    /// column bias, column scales) hold each group's own N values, group after group
    /// (`rows.len() * N` values: each expert's bias or channel scales; repeat a shared one). An
    /// f16 or bf16 C with 16-bit float inputs accumulates in f32 and rounds once at the store.
    pub fn gemm_grouped_fused<TA: Element, TB: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: BatchRef<'_, TB>,
        c: MatMut<'_, TC>,
        rows: &[usize],
        options: &GemmOptions,
        fused: &Fused<'_>,
    ) -> Result<()> {
        self.grouped_host(a, b, c, rows, options, Some(fused))
    }

    /// [`Context::gemm_grouped_fused`] on device matrices (A and C row-major).
    pub fn gemm_grouped_fused_device<TA: Element, TB: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceBatch<TB>,
        c: &mut DeviceMatrix<TC>,
        rows: &[usize],
        options: &GemmOptions,
        fused: &Fused<'_>,
    ) -> Result<()> {
        let plans = self.plan_groups(a, b, c, rows, options, Some(fused))?;
        self.run_blocking(|core| self.enqueue_groups(core, &plans, (a, b, c), Some(fused)))
    }

    /// What [`Context::gemm_grouped_fused_device`] would record, as plain data (see
    /// [`Context::plan_gemm_grouped`]).
    pub fn plan_gemm_grouped_fused<TA: Element, TB: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceBatch<TB>,
        c: &DeviceMatrix<TC>,
        rows: &[usize],
        options: &GemmOptions,
        fused: &Fused<'_>,
    ) -> Result<Vec<GemmPlan>> {
        let plans = self.plan_groups(a, b, c, rows, options, Some(fused))?;
        Ok(plans.into_iter().map(|(p, _)| p).collect())
    }
}
