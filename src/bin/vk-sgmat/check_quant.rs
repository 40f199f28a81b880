//! `vk-sgmat check`'s quantized weights: every block format, decode's and prefill's paths, f16
//! and f32 activations, against the f64 product of the activations and ggml's dequantized
//! weights (the CPU reference of `vk_sgmat::quant`).

use crate::report::CheckRow;
use crate::verify::{compare_rounded, random_vec, reference, unit_roundoff, Check, Rng};
use half::f16;
use vk_sgmat::quant::{dequantize, quantize, QuantType};
use vk_sgmat::{ComponentType, ComputeMode, Context, Element, GemmOptions, MatMut, MatRef, Matmul};

/// Rows of activations: one and three (the block-streaming matrix-vector kernel), 65 (a
/// dense copy first, then the GEMM).
const ROWS: [usize; 3] = [1, 3, 65];

/// Every format at each of [`ROWS`] with f16 activations (weights read as f16) and f32 ones
/// (read exactly), 17 weight rows of three blocks, alpha and beta set on every other case.
pub fn check_quantized(ctx: &Context, rng: &mut Rng) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    for q in QuantType::ALL {
        for (i, &m) in ROWS.iter().enumerate() {
            let scalars = if i % 2 == 0 { (1.0, 0.0) } else { (-1.5, 0.25) };
            let shape = (m, 17, 3 * q.block_values());
            for f32_act in [false, true] {
                let res = if f32_act {
                    case::<f32>(ctx, rng, q, shape, scalars)
                } else {
                    case::<f16>(ctx, rng, q, shape, scalars)
                };
                let (check, error) = match res {
                    Ok(c) => (Some(c), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                rows.push(CheckRow {
                    config: format!("{q} weights, {} x", if f32_act { "f32" } else { "f16" }),
                    shape,
                    layout: "nt".into(),
                    alpha: scalars.0,
                    beta: scalars.1,
                    rel_error: check.as_ref().map_or(f64::NAN, |c| c.rel_error),
                    tolerance: check.as_ref().map_or(0.0, |c| c.tolerance),
                    mismatches: check.as_ref().map_or(0, |c| c.mismatches),
                    passed: check.as_ref().is_some_and(|c| c.passed),
                    error,
                });
            }
        }
    }
    rows
}

/// `c = alpha * x * w^T + beta * c` for random `x` (`m x k`, `T`) and a random `n x k` weight
/// of `q` read as `T`, C f32.
fn case<T: Element>(
    ctx: &Context,
    rng: &mut Rng,
    q: QuantType,
    (m, n, k): (usize, usize, usize),
    (alpha, beta): (f64, f64),
) -> anyhow::Result<Check> {
    let values: Vec<f32> = random_vec(rng, n * k);
    let blocks = quantize(q, &values)?;
    let mut deq = vec![0.0f32; n * k];
    dequantize(q, &blocks, &mut deq)?;
    let w = ctx.upload_quantized(q, n, k, &blocks)?;
    let xs: Vec<T> = random_vec(rng, m * k);
    let x = ctx.upload(MatRef::new(&xs, m, k))?;
    let c_in: Vec<f32> = random_vec(rng, m * n);
    let mut c = ctx.upload(MatRef::new(&c_in, m, n))?;
    let exact = T::TYPE == ComponentType::F32;
    let options = GemmOptions {
        alpha,
        beta,
        compute: if exact {
            ComputeMode::Exact
        } else {
            ComputeMode::default()
        },
        ..Default::default()
    };
    let op = Matmul::with_options(&options);
    if exact {
        ctx.run(&op, &x, w.t().as_f32(), &mut c)?;
    } else {
        ctx.run(&op, &x, w.t(), &mut c)?;
    }
    let mut got = vec![f32::NAN; m * n];
    ctx.download(&c, MatMut::new(&mut got, m, n))?;
    let xf: Vec<f32> = xs.iter().map(|v| v.to_f64() as f32).collect();
    // W^T as a k x n matrix: the dequantized rows, column-major.
    let wt = MatRef::col_major(&deq, k, n);
    let all: Vec<usize> = (0..m).collect();
    let (want, mag) = reference(&MatRef::new(&xf, m, k), &wt, Some((&c_in, n)), alpha, beta, &all);
    Ok(compare_rounded(
        &got,
        n,
        n,
        &all,
        (&want, &mag),
        k,
        unit_roundoff(T::TYPE),
    ))
}
