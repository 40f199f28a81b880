//! Grouped GEMM over quantized experts (a mixture of experts as GGUF files hold it): group `g`'s
//! rows of A multiply expert `g` of a [`QuantMatrix`](super::QuantMatrix) into the same rows of
//! C. Each non-empty group is planned as the one-GEMM path plans a quantized weight, on its
//! rows of A and C and its expert's blocks: a decode-sized group (a token routed to an expert,
//! or a few) streams the expert's blocks through the matrix-vector kernel, a larger one
//! multiplies a dense copy of its expert made first, in scratch of its own. The groups then run
//! side by side in one plan ([`crate::plan::side_by_side`]): every group's passes (its copy,
//! or its activations rounded to 8 bits) together, one barrier, every group's GEMM together.
//! With the sizes on the device, decode streams the blocks of the experts that have rows (the
//! matrix-vector kernel taking its groups from a table the device builds from the counts);
//! larger work makes every expert's dense copy and runs the grouped GEMM with device counts
//! ([`super::grouped_counted`]) on them.

use super::context::Context;
use super::grouped::{check_groups, group_vectors, Columns};
use super::matmul::Matmul;
use super::matrix::Element;
use super::operand::Placed;
use super::quant::{quantized_operand, QuantView};
use super::work::{Counts, Planned, Plans};
use crate::config::ComponentType;
use crate::error::Result;
use crate::plan::{dequantized_first_each, side_by_side};
use crate::GemmOptions;

impl Context {
    /// Checks and plans `op` grouped by `rows` over the experts of `q` (read as `to`) as B,
    /// with A and C (row-major, `sum(rows)` rows) on the device.
    pub(crate) fn plan_quantized_groups<'o, TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'o>,
        (pa, (q, to), pc): (Placed<'o>, (QuantView<'o>, ComponentType), Placed<'o>),
        rows: &[usize],
    ) -> Result<Planned<'o>> {
        check_groups(rows, q.matrix.experts(), (pa.rows, pa.layout), (pc.rows, pc.layout))?;
        let seen = self.dense_view(q, &q.expert(0), to);
        self.check_placed(&[&pa, &seen, &pc])?;
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let terms = match &op.fused {
            Some(f) => Some(self.fused_terms(f, group_vectors(rows, pc.cols)?, types)?),
            None => None,
        };
        // The groups fill the GPU together: split-K's reduction, a barrier, would serialise them.
        let options = &GemmOptions {
            split_k: op.options.split_k.or(Some(1)),
            ..op.options.clone()
        };
        let es = (size_of::<TA>(), size_of::<TC>());
        let vectors = terms.map(|_| Columns::Group);
        let plans = self.plan_each_group(rows, ([pa, pc], es), vectors, |g, ga, gc| {
            let plan = self.plan_one_quantized([ga, seen, gc], 1, (&q.expert(g), to), types, (options, terms))?;
            Ok((plan, seen))
        })?;
        // Side by side in one plan where the groups' scratch allows (every copy, then every
        // GEMM); else one plan per group, recorded one after another.
        let whole = plans.first().map(|(p, _)| crate::plan::Problem {
            m: pa.rows,
            ..p.problem
        });
        let one = whole.and_then(|whole| {
            let each = plans.iter().map(|(p, _)| p.clone()).collect();
            side_by_side(each, whole, &self.limits)
        });
        let plans = match one {
            Some(plan) => {
                let operands = plan.bind_order([pa, seen, pc]);
                Plans::One([(plan, operands)])
            }
            None => Plans::Many(plans),
        };
        Ok(Planned {
            plans,
            whole: [pa, seen, pc],
            counts: None,
            output: TC::TYPE,
        })
    }

    /// Checks and plans `op` over the experts of `q` (read as `to`) as B, grouped by the sizes
    /// the device holds in `counts`. Decode's shapes (A's rows few enough for the
    /// matrix-vector kernel) stream the blocks of the experts that have rows
    /// ([`GemmPlan::gemv_grouped_counted`](crate::plan::GemmPlan::gemv_grouped_counted)).
    /// Elsewhere which experts a group routes to is not known here, so every expert is
    /// dequantized (a pass each, side by side, into one batch of copies in scratch) and the
    /// grouped GEMM with device counts runs on the copies, as on dense experts.
    pub(crate) fn plan_quantized_counted<'o, TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'o>,
        (pa, (q, to), pc): (Placed<'o>, (QuantView<'o>, ComponentType), Placed<'o>),
        counts: Placed<'o>,
    ) -> Result<Planned<'o>> {
        let experts = q.matrix.experts();
        let each: Vec<_> = (0..experts).map(|g| q.expert(g)).collect();
        let seen = self.dense_view(q, &each[0], to);
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let where_ = self.check_counted([pa, seen, pc], experts, counts)?;
        let terms = self.counted_terms(op.fused.as_ref(), (pa.rows, pc.cols, experts), types)?;
        let planned = |plan: crate::plan::GemmPlan| {
            let operands = plan.bind_order([pa, seen, pc]);
            Planned {
                plans: Plans::One([(plan, operands)]),
                whole: [pa, seen, pc],
                counts: Some(Counts {
                    at: counts,
                    where_,
                    groups: experts,
                }),
                output: TC::TYPE,
            }
        };
        let decode = self.plan_counted_decode(pa.rows, (experts, q.matrix.stride), where_, &op.options, || {
            let plan = self.plan_one_quantized([pa, seen, pc], 1, (&each[0], to), types, (&op.options, terms))?;
            Ok(Some(plan))
        })?;
        if let Some(plan) = decode {
            return Ok(planned(plan));
        }
        // Expert g's copy starts `rows * copy_ld` elements after expert g - 1's.
        let stride = each[0].rows * each[0].copy_ld(to);
        let plan = self.plan_counted_placed([pa, seen, pc], (experts, stride), where_, types, (&op.options, terms))?;
        let which = quantized_operand(1, &plan);
        let plan = dequantized_first_each(plan, which, &each, to, &self.limits)?;
        Ok(planned(plan))
    }
}
