//! Quantized weights in the CLI: `vk-sgmat check`'s cases (every block format, decode's and
//! prefill's paths, f16 and f32 activations) and `vk-sgmat gemm --weights`, each against the
//! f64 product of the activations and ggml's dequantized weights (the CPU reference of
//! `vk_sgmat::quant`).

use crate::report::CheckRow;
use crate::types::Types;
use crate::verify::{compare_rounded, random_vec, reference, unit_roundoff, Check, Rng};
use half::f16;
use vk_sgmat::quant::{dequantize, quantize, QuantType};
use vk_sgmat::{ComponentType, ComputeMode, Context, Element, GemmOptions, MatMut, MatRef, Matmul};

/// Rows of activations: one and three (the block-streaming matrix-vector kernel), 23 (that
/// kernel in chunks of 8, 8 and 7 rows side by side), 65 (a dense copy first, then the GEMM).
const ROWS: [usize; 4] = [1, 3, 23, 65];

/// Groups of a grouped GEMM over quantized experts: decode-sized ones, an empty one, and one
/// that takes its expert's dense copy.
const EXPERT_GROUPS: [usize; 4] = [1, 0, 3, 65];

/// Every format at each of [`ROWS`] with f16 activations (weights read as f16; decode rounds
/// them to 8 bits where the device has packed dot products, checked by ggml's NMSE) and f32
/// ones (read exactly), 17 weight rows of three blocks, alpha and beta set on every other case;
/// then grouped over experts, one per group of [`EXPERT_GROUPS`].
pub fn check_quantized(ctx: &Context, rng: &mut Rng) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    let experts: usize = EXPERT_GROUPS.iter().sum();
    let groups = |on_device| Some((&EXPERT_GROUPS[..], on_device));
    let cases = ROWS
        .iter()
        .map(|&m| (m, None))
        .chain([(experts, groups(false)), (experts, groups(true))]);
    for q in QuantType::ALL {
        for (i, (m, groups)) in cases.clone().enumerate() {
            let scalars = if i % 2 == 0 { (1.0, 0.0) } else { (-1.5, 0.25) };
            let shape = (m, 17, 3 * q.block_values());
            for f32_act in [false, true] {
                let res = if f32_act {
                    case::<f32>(ctx, rng, q, shape, (&scaled(scalars), groups), 0)
                } else {
                    case::<f16>(ctx, rng, q, shape, (&scaled(scalars), groups), 0)
                }
                .map(|(check, ..)| check);
                let (check, error) = match res {
                    Ok(c) => (Some(c), None),
                    Err(e) => (None, Some(e.to_string())),
                };
                let grouped = groups.map_or(String::new(), |(g, on_device)| {
                    let counts = if on_device { " on the device" } else { "" };
                    format!(", experts in groups {g:?}{counts}")
                });
                rows.push(CheckRow {
                    config: format!("{q} weights, {} x{grouped}", if f32_act { "f32" } else { "f16" }),
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

/// `vk-sgmat gemm M N K --weights FORMAT [--groups M1,M2,... [--counts-on-device]]`: one
/// checked GEMM on a random weight (or grouped, over a random expert per group, the sizes on
/// the host or the device), then `repeat` timed runs; prints the check and the median, with
/// the weights' bytes per second. Whether it passed.
pub fn gemm_quantized(
    ctx: &Context,
    (q, groups): (QuantType, Groups<'_>),
    types: Types,
    shape: (usize, usize, usize),
    options: &GemmOptions,
    repeat: usize,
) -> anyhow::Result<bool> {
    if types.c != ComponentType::F32 {
        anyhow::bail!("--weights writes an f32 C: use --types f16:f32 or f32:f32");
    }
    let mut rng = Rng::new(Rng::fresh_seed());
    let (check, seconds, bytes, kernels) = match types.a {
        ComponentType::F16 => case::<f16>(ctx, &mut rng, q, shape, (options, groups), repeat)?,
        ComponentType::F32 => case::<f32>(ctx, &mut rng, q, shape, (options, groups), repeat)?,
        t => anyhow::bail!("--weights takes f16 or f32 activations, not {t}"),
    };
    let (m, n, k) = shape;
    let grouped = groups.map_or(String::new(), |(g, on_device)| {
        format!(
            " in groups {g:?}{}",
            if on_device { " (counts on the device)" } else { "" }
        )
    });
    println!(
        "device: {}
{q} weights {m}x{n}x{k}{grouped}, {} activations: {} ({})",
        ctx.device_info().name,
        types.a,
        kernels.join(", "),
        if check.passed { "verified" } else { "FAILED" }
    );
    println!(
        "  rel.err {:.2e} (bound {:.2e}), median {:.1} us of {repeat} runs, {:.3} TFLOP/s, weights {:.1} GB/s",
        check.rel_error,
        check.tolerance,
        seconds * 1e6,
        2.0 * (m * n * k) as f64 / seconds / 1e12,
        bytes as f64 / seconds / 1e9
    );
    Ok(check.passed)
}

/// A grouped GEMM's rows per expert, and whether their sizes go to the device; `None`: one GEMM.
pub type Groups<'a> = Option<(&'a [usize], bool)>;

/// What [`case`] measured: the check, the median seconds of its timed runs (0 without any), the
/// bytes of the weights it reads (the experts its groups route to) and the kernels that ran.
type Measured = (Check, f64, usize, Vec<String>);

/// `c = alpha * x * w^T + beta * c` for random `x` (`m x k`, `T`) and a random `n x k` weight
/// of `q` read as `T` (or, with `groups`, each group's rows of x and c through an expert of its
/// own, the sizes on the device where asked), C f32; checked, then run `repeat` more times,
/// timed by GPU timestamps.
fn case<T: Element>(
    ctx: &Context,
    rng: &mut Rng,
    q: QuantType,
    (m, n, k): (usize, usize, usize),
    (base, groups): (&GemmOptions, Groups<'_>),
    repeat: usize,
) -> anyhow::Result<Measured> {
    // A ragged K is named as such before the whole weight is.
    q.bytes_for(k)?;
    let experts = groups.map_or(1, |(g, _)| g.len());
    // The sizes as u32 on the device, where the GEMM reads them there.
    let counts = match groups {
        Some((g, true)) => {
            let sizes: Vec<u32> = g.iter().map(|&r| r as u32).collect();
            Some(ctx.upload(MatRef::new(&sizes, 1, sizes.len()))?)
        }
        _ => None,
    };
    let values: Vec<f32> = random_vec(rng, experts * n * k);
    let blocks = quantize(q, &values)?;
    let mut deq = vec![0.0f32; experts * n * k];
    dequantize(q, &blocks, &mut deq)?;
    let w = ctx.upload_quantized_experts(q, experts, n, k, &blocks)?;
    let xs: Vec<T> = random_vec(rng, m * k);
    let x = ctx.upload(MatRef::new(&xs, m, k))?;
    let c_in: Vec<f32> = random_vec(rng, m * n);
    let mut c = ctx.upload(MatRef::new(&c_in, m, n))?;
    let exact = T::TYPE == ComponentType::F32;
    let (alpha, beta) = (base.alpha, base.beta);
    let options = GemmOptions {
        compute: if exact { ComputeMode::Exact } else { base.compute },
        ..base.clone()
    };
    let op = Matmul::with_options(&options);
    let op = match (groups, &counts) {
        (Some(_), Some(counts)) => op.grouped_by_device_counts(counts),
        (Some((rows, _)), None) => op.grouped(rows),
        (None, _) => op,
    };
    let gemm = if exact {
        ctx.prepare(&op, &x, w.t().as_f32(), &mut c)?
    } else {
        ctx.prepare(&op, &x, w.t(), &mut c)?
    };
    gemm.run()?;
    let kernels: Vec<String> = gemm.plans().flat_map(|p| p.kernels()).map(|k| k.label()).collect();
    // The grouped matrix-vector kernel reads only the routed experts' blocks.
    let routed_only = gemm.plans().any(|p| p.gemv_kernel().is_some_and(|k| k.grouped));
    let mut got = vec![f32::NAN; m * n];
    ctx.download(&c, MatMut::new(&mut got, m, n))?;
    let seconds = match (repeat, groups) {
        (0, _) => 0.0,
        (_, None) => gemm.time(vk_sgmat::Timing::Runs(repeat as u32))?.median(),
        // Groups planned apart are timed as one stream's GPU span each (a prepared GEMM times
        // one plan).
        (_, Some(_)) => {
            drop(gemm);
            stream_median(repeat, || {
                ctx.stream().and_then(|mut s| {
                    s.timed(|s| {
                        match exact {
                            true => s.run(&op, &x, w.t().as_f32(), &mut c),
                            false => s.run(&op, &x, w.t(), &mut c),
                        }
                        .map(|()| 1)
                    })
                })
            })?
        }
    };
    let xf: Vec<f32> = xs.iter().map(|v| v.to_f64() as f32).collect();
    let one = [m];
    let group_rows = groups.map_or(&one[..], |(g, _)| g);
    let (want, mag) = reference_by_group((&xf, &deq, &c_in), (n, k), group_rows, (alpha, beta));
    let all: Vec<usize> = (0..m).collect();
    let mut check = compare_rounded(&got, n, n, &all, (&want, &mag), k, unit_roundoff(T::TYPE));
    if kernels.iter().any(|k| k.ends_with("_x8")) {
        // Activations rounded to 8 bits (GemmOptions::int8_activations): ggml's own metric,
        // an NMSE of at most 5e-4, as a relative error.
        check.tolerance = check.tolerance.max(5e-4f64.sqrt());
        check.passed = check.mismatches == 0 && check.rel_error <= check.tolerance;
    }
    // Bytes of the weights read: the experts some group routes to (every one where the sizes
    // on the device make a dense copy of each; the grouped matrix-vector kernel reads only
    // the routed ones).
    let read = match groups {
        Some((g, on_device)) if !on_device || routed_only => g.iter().filter(|&&rows| rows > 0).count(),
        _ => experts,
    };
    Ok((check, seconds, w.bytes() / experts * read, kernels))
}

/// The median GPU span of `repeat` runs of `span` after half a second of warm-up.
fn stream_median(
    repeat: usize,
    mut span: impl FnMut() -> vk_sgmat::Result<vk_sgmat::StreamTiming>,
) -> vk_sgmat::Result<f64> {
    let warm = std::time::Duration::from_millis(500);
    crate::timing::warm_median(warm, repeat as u32, |runs| {
        (0..runs).map(|_| span().map(|t| t.gpu_span_s)).collect()
    })
}

/// The f64 reference (and magnitudes) of `alpha x w_g^T + beta c` for each group's rows of
/// `x` (`k` wide) against its expert's dequantized `n x k` weights in `deq`, one group after
/// the other.
fn reference_by_group(
    (x, deq, c_in): (&[f32], &[f32], &[f32]),
    (n, k): (usize, usize),
    group_rows: &[usize],
    (alpha, beta): (f64, f64),
) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut mag) = (Vec::new(), Vec::new());
    let mut first = 0;
    for (g, &rows) in group_rows.iter().enumerate() {
        // Expert g's W^T, a k x n matrix: its dequantized rows, column-major.
        let wt = MatRef::col_major(&deq[g * n * k..(g + 1) * n * k], k, n);
        let x_g = MatRef::new(&x[first * k..(first + rows) * k], rows, k);
        let c_g = &c_in[first * n..(first + rows) * n];
        let all: Vec<usize> = (0..rows).collect();
        let (w_g, m_g) = reference(&x_g, &wt, Some((c_g, n)), alpha, beta, &all);
        want.extend(w_g);
        mag.extend(m_g);
        first += rows;
    }
    (want, mag)
}

/// Options of `alpha` and `beta`, the rest default.
fn scaled((alpha, beta): (f64, f64)) -> GemmOptions {
    GemmOptions {
        alpha,
        beta,
        ..Default::default()
    }
}
