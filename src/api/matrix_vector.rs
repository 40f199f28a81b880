//! The matrix-vector route: decode's shapes (a few rows of activations times weights) as one
//! dispatch of the matrix-vector kernel, where the options and the problem allow it; the
//! routing of every other GEMM is in `routing.rs`.

use super::context::Context;
use super::operand::Placed;
use super::options::GemmOptions;
use super::routing::{placed_problem, row_major_c};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::{Epilogue, SIMT_CONFIG};
use crate::plan::{gemv_dispatch, Batch, DispatchLimits, GemmPlan};
use crate::tiling::simt_scheme;

impl Context {
    /// The matrix-vector plan of one GEMM with C in either storage order (see
    /// [`Context::plan_gemv`]), its windows within `limits`: a quantized operand's dense view
    /// is planned with the binding limit lifted, since its blocks, not the view, are bound.
    pub(crate) fn plan_gemv_within(
        &self,
        (a, b, c): (Placed<'_>, Placed<'_>, Placed<'_>),
        [ta, tb, tc]: [ComponentType; 3],
        (options, terms): (&GemmOptions, Option<Epilogue>),
        limits: &DispatchLimits,
    ) -> Result<Option<GemmPlan>> {
        if let Some(([a, b, c], t, _, terms)) = row_major_c([a, b, c], [ta, tb, tc], Batch::ONE, terms) {
            let plan = self.plan_gemv((a, b, c), t, Batch::ONE, options, terms, limits)?;
            return Ok(plan.map(|p| GemmPlan { transposed: true, ..p }));
        }
        self.plan_gemv((a, b, c), [ta, tb, tc], Batch::ONE, options, terms, limits)
    }

    /// The matrix-vector plan of a GEMM (C row-major), where [`GemmOptions::matrix_vector`]
    /// allows it and [`gemv_dispatch`] takes the problem within `limits`.
    pub(super) fn plan_gemv(
        &self,
        (a, b, c): (Placed<'_>, Placed<'_>, Placed<'_>),
        [ta, tb, tc]: [ComponentType; 3],
        batch: Batch,
        options: &GemmOptions,
        terms: Option<Epilogue>,
        limits: &DispatchLimits,
    ) -> Result<Option<GemmPlan>> {
        use ComponentType::{Bf16, F16, F32};
        let plain = options.scheme.is_none() && matches!(options.split_k, None | Some(1));
        if options.matrix_vector == Some(false) || !plain || ta != tb || !matches!(tc, F32 | F16 | Bf16) {
            return Ok(None);
        }
        // Sums in f32, stored as C's type: a 16-bit C (or bias) needs 16-bit arithmetic and
        // storage in the kernel.
        let terms = Epilogue {
            output: (tc != F32).then_some(tc),
            ..terms.unwrap_or_default()
        };
        let features = &self.device.info().features;
        let sixteen = tc != F32 || terms.bias.is_some_and(|(_, t)| t != F32);
        if sixteen && !(features.shader_float16 && features.storage_buffer_16bit_access) {
            return Ok(None);
        }
        let problem = placed_problem((a, b, c), [ta, tb, tc], batch);
        let Some(dispatch) = gemv_dispatch(
            &problem,
            ta,
            ((options.alpha, options.beta), terms),
            (options.gemv_cols, options.gemv_unroll),
            limits,
        )?
        else {
            return Ok(None);
        };
        // A plan names a config and scheme; the matrix-vector kernel has neither, so it carries
        // the exact f32 kernel's, which it never dispatches.
        let scheme = simt_scheme(&self.device.info().limits, self.subgroup_size(), self.is_cpu())
            .ok_or_else(|| Error::InvalidTileScheme("no f32 kernel tile fits this device".into()))?;
        let plan = GemmPlan {
            problem,
            config: SIMT_CONFIG,
            scheme,
            dispatches: vec![dispatch],
            scratch_bytes: 0,
            zeroed_scratch_bytes: 0,
            scratch_words: Vec::new(),
            reads_c: options.beta != 0.0,
            transposed: false,
        };
        Ok(Some(plan))
    }
}
