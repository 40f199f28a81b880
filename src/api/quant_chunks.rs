//! A few rows of activations over quantized weights (a handful of sequences decoding together,
//! a draft's tokens checked at once): more rows than the matrix-vector kernel takes, too few
//! for a dense copy of the weights and the GEMM on it to pay. The rows are cut into chunks the
//! kernel takes, each planned as decode on its rows of A and C, streaming the blocks; the
//! chunks then run side by side in one plan ([`crate::plan::side_by_side`]): every chunk's
//! rounding pass, one barrier, every chunk's matrix-vector product, all reading the same
//! blocks at once. Weights as A (`w * x^T`, ggml's orientation) are chunked by x's rows, C's
//! columns: the GEMM's transpose is chunked and the plan flipped back.

use super::context::Context;
use super::grouped::Columns;
use super::operand::Placed;
use super::routing::transposed_gemm;
use crate::config::ComponentType;
use crate::error::Result;
use crate::kernel::{Epilogue, GEMV_MAX_ROWS};
use crate::plan::{side_by_side, Batch, GemmPlan, Problem, Quantized};
use crate::GemmOptions;

/// Most rows of activations of type `elem` over quantized weights that run as decode in chunks
/// by default ([`GemmOptions::matrix_vector`]); more multiply a dense copy. Measured on the H200
/// (docs/perf/h200-47-2.txt, us, 22016x4096, chunks / dense copy, f32 C): f16 activations
/// (rounded to 8 bits) q4_K 9 rows 55.5 / 238.6, 16 83.6 / 196.4, 32 160.6 / 254.5, 48 237.1 /
/// 262.4, 64 314.1 / 216.0, and the same crossing between 48 and 64 rows in q8_0, q6_K, q4_0
/// and MXFP4 (48: 246.0 / 269.8 in q8_0, 258.8 / 268.9 in q6_K); f32 activations (multiplied
/// in f32) q4_K 32 rows 825.3 / 891.3, 48 1234.2 / 911.4.
fn chunked_rows(elem: ComponentType) -> usize {
    match elem {
        ComponentType::F16 => 48,
        _ => 32,
    }
}

impl Context {
    /// `[pa, pb, pc]` with operand `j` (0 = A, 1 = B) the dense view of `quantized` read as
    /// `to`, as decode in chunks ([`Context::plan_chunks_of_rows`]): chunks of A's rows where
    /// the weights are B (`x * w^T`), of B's columns where they are A (`w * x^T`, planned as
    /// its transpose `x * w^T` and flipped back), or `None` where chunks do not apply.
    pub(super) fn plan_quantized_chunks(
        &self,
        (operands, quantized): ([Placed<'_>; 3], (&Quantized, ComponentType)),
        j: usize,
        types: [ComponentType; 3],
        (options, terms): (&GemmOptions, Option<Epilogue>),
    ) -> Result<Option<GemmPlan>> {
        if j == 1 {
            return self.plan_chunks_of_rows(operands, quantized, types, (options, terms));
        }
        let (flipped, types, _, terms) = transposed_gemm((operands, types, Batch::ONE, terms));
        let plan = self.plan_chunks_of_rows(flipped, quantized, types, (options, terms))?;
        Ok(plan.map(|p| GemmPlan {
            transposed: !p.transposed,
            ..p
        }))
    }

    /// `[pa, pb, pc]` (`pb` the dense view of `quantized` read as `to`) as decode in chunks of
    /// at most [`GEMV_MAX_ROWS`] rows of A and C, as even as they come, side by side; `None`
    /// where that does not apply: A's rows within one chunk, or past [`chunked_rows`] unless
    /// asked, or `Some(false)`; a chunk the matrix-vector kernel does not take (A not
    /// contiguous along K, its types, a forced scheme or split); chunks whose scratch together
    /// is over the device's largest allocation.
    fn plan_chunks_of_rows(
        &self,
        [pa, pb, pc]: [Placed<'_>; 3],
        (quantized, to): (&Quantized, ComponentType),
        types: [ComponentType; 3],
        (options, terms): (&GemmOptions, Option<Epilogue>),
    ) -> Result<Option<GemmPlan>> {
        let rows = pa.rows;
        let asked = match options.matrix_vector {
            Some(on) => on,
            None => rows <= chunked_rows(types[0]),
        };
        if !asked || rows <= GEMV_MAX_ROWS as usize {
            return Ok(None);
        }
        let chunks = rows.div_ceil(GEMV_MAX_ROWS as usize);
        // Each chunk takes its share of the rows the chunks before it left, rounded up.
        let (mut sizes, mut taken) = (Vec::with_capacity(chunks), 0);
        for left in (1..=chunks).rev() {
            let m = (rows - taken).div_ceil(left);
            sizes.push(m);
            taken += m;
        }
        let es = (types[0].size_bytes() as usize, types[2].size_bytes() as usize);
        let vectors = terms.map(|_| Columns::Shared);
        let planned = self.plan_each_group(&sizes, ([pa, pc], es), vectors, |_, ga, gc| {
            let plan = self.plan_one_quantized([ga, pb, gc], 1, (quantized, to), types, (options, terms))?;
            Ok((plan, pb))
        })?;
        if !planned.iter().all(|(plan, _)| plan.gemv_kernel().is_some()) {
            return Ok(None);
        }
        let plans: Vec<GemmPlan> = planned.into_iter().map(|(plan, _)| plan).collect();
        // A chunk whose C is column-major is planned as its transpose: rows are its N.
        let first = plans[0].problem;
        let whole = match plans[0].transposed {
            false => Problem { m: rows, ..first },
            true => Problem { n: rows, ..first },
        };
        Ok(side_by_side(plans, whole, &self.limits))
    }
}
