//! `vk-sgmat bench --weights FORMAT`: GEMMs whose B is a weight in a ggml block format.

use crate::bench_cmd::{time_point, Point, Timing};
use crate::verify::{random_vec, Rng};
use anyhow::{bail, Result};
use half::f16;
use vk_sgmat::quant::{quantize, QuantType};
use vk_sgmat::{ComponentType, Context, Element, GemmOptions, Layout, MatRef, Matmul};

/// Distinct random rows quantized for a bench weight, repeated down its N rows: quantizing a
/// whole 22016 x 4096 weight on the CPU would take longer than timing it, and the GPU's caches
/// cannot tell repeated rows from distinct ones this far apart.
const DISTINCT_ROWS: usize = 64;

/// `bench --weights`: the weights' format, and which operand they are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BenchWeights {
    /// Their ggml block format.
    pub quant: QuantType,
    /// They are A (`C = W * X^T`, ggml's orientation; `--weights-first`), not B (`X * W^T`).
    pub first: bool,
}

/// A bench point: `x` times a random weight of `q` read as `TB` (f16, or f32 exactly), into a
/// row-major C of `TC`: `x` (`m x k`, `TA`) times the `n x k` weight transposed, or with the
/// weight first, the `m x k` weight times `x` (`n x k`) transposed.
pub(crate) fn bench_point<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    BenchWeights { quant: q, first }: BenchWeights,
    (m, n, k): (usize, usize, usize),
    options: &GemmOptions,
    timing: &Timing,
) -> Result<Point> {
    let mut rng = Rng::new(Rng::fresh_seed());
    let (tokens, rows) = if first { (n, m) } else { (m, n) };
    let w = ctx.upload_quantized(q, rows, k, &weights(q, rows, k, &mut rng)?)?;
    let x = random_vec::<TA>(&mut rng, tokens * k);
    // With the weight first, X^T: the tokens' rows of K values as the columns of a K x N matrix.
    let x = match first {
        false => ctx.upload(MatRef::new(&x, m, k))?,
        true => ctx.upload(MatRef::col_major(&x, k, n))?,
    };
    let mut c = ctx.zeros::<TC>(m, n)?;
    let op = Matmul::with_options(options);
    let gemm = match (TB::TYPE, first) {
        (ComponentType::F16, false) => ctx.prepare::<TA, f16, TC>(&op, &x, w.t(), &mut c)?,
        (ComponentType::F32, false) => ctx.prepare::<TA, f32, TC>(&op, &x, w.t().as_f32(), &mut c)?,
        (ComponentType::F16, true) => ctx.prepare::<f16, TA, TC>(&op, &w, &x, &mut c)?,
        (ComponentType::F32, true) => ctx.prepare::<f32, TA, TC>(&op, w.as_ref().as_f32(), &x, &mut c)?,
        (t, _) => bail!("quantized weights are read as f16 or f32, not {t}: use --types f16:f32 or f32:f32"),
    };
    time_point(&gemm, (m, n, k), (Layout::RowMajor, Layout::ColMajor), timing)
}

/// `n x k` values of `q`: [`DISTINCT_ROWS`] rows of uniform random values in [-1, 1) quantized,
/// then repeated.
fn weights(q: QuantType, n: usize, k: usize, rng: &mut Rng) -> Result<Vec<u8>> {
    let distinct = n.min(DISTINCT_ROWS);
    let values: Vec<f32> = random_vec(rng, distinct * k);
    let rows = quantize(q, &values)?;
    let row_bytes = rows.len() / distinct;
    Ok((0..n)
        .flat_map(|r| &rows[(r % distinct) * row_bytes..][..row_bytes])
        .copied()
        .collect())
}
