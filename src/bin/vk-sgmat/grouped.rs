//! `gemm --groups M1,M2,...` and `bench --groups`: a grouped GEMM (mixture of experts) on random
//! data, optionally with a fused epilogue (`--epilogue`, `--out`: each group's own column bias,
//! a row bias over every group's rows; 8-bit inputs dequantised by random per-row scales and
//! each group's own column scales), with the group sizes on the device (`--counts-on-device`)
//! or the host, checked on sampled rows of every group against the f64 reference and timed
//! with GPU timestamps.

use crate::checking::{view, worse};
use crate::terms::{fused_terms, Terms};
use crate::types::{with_types, Types};
use crate::verify::fused::{compare_fused, FusedRef};
use crate::verify::{compare_rounded, input_roundoff, random_vec, reference, rows_to_check, Check, Rng};
use anyhow::{bail, Result};
use half::{bf16, f16};
use serde::Serialize;
use std::time::{Duration, Instant};
use vk_sgmat::Matmul;
use vk_sgmat::{Axis, BatchRef, ComponentType, Context, DeviceMatrix, Element, Fused, GemmOptions, Layout, MatRef};

/// One grouped GEMM, checked and timed.
#[derive(Serialize)]
pub struct GroupedReport {
    pub device: String,
    pub groups: Vec<usize>,
    pub n: usize,
    pub k: usize,
    pub types: String,
    /// The fused epilogue's terms (`--epilogue`), `none`, or `-` for a plain GEMM.
    pub epilogue: String,
    pub b_layout: String,
    pub seed: u64,
    pub check: Check,
    /// Median GPU time of all groups (one submission, no barrier between groups).
    pub median_ms: f64,
    pub tflops: f64,
    /// One grouped dispatch's tile scheme, or how many GEMMs the groups ran as.
    pub kernel: String,
}

/// A grouped GEMM's random host data: A (every group's rows), the weights, C's old values, and
/// a fused epilogue's vectors (a bias, dequantisation scales per row and N per group).
struct Inputs<TA, TB, TC> {
    a: Vec<TA>,
    w: Vec<TB>,
    c_in: Vec<TC>,
    bias: Vec<f32>,
    scales: Option<(Vec<f32>, Vec<f32>)>,
}

impl<TA: Element, TB: Element, TC: Element> Inputs<TA, TB, TC> {
    fn new(rng: &mut Rng, rows: &[usize], (n, k): (usize, usize), terms: Option<&Terms>) -> Self {
        let total: usize = rows.iter().sum();
        let a = random_vec::<TA>(rng, total * k);
        let w = random_vec::<TB>(rng, rows.len() * k * n);
        let c_in: Vec<TC> = random_vec(rng, total * n);
        let bias_len = match terms.and_then(|t| t.bias) {
            Some(Axis::Row) => total,
            Some(Axis::Col) => rows.len() * n,
            None => 0,
        };
        let bias: Vec<f32> = (0..bias_len).map(|_| (4.0 * rng.unit() - 2.0) as f32).collect();
        let int = matches!(TA::TYPE, ComponentType::I8 | ComponentType::U8);
        let scales = (int && terms.is_some()).then(|| {
            let mut v = |len: usize| -> Vec<f32> { (0..len).map(|_| (0.001 + 0.03 * rng.unit()) as f32).collect() };
            (v(total), v(rows.len() * n))
        });
        Self {
            a,
            w,
            c_in,
            bias,
            scales,
        }
    }
}

/// Runs a grouped GEMM (rows per group, shared N and K, a weight per group stored `lb`) on
/// random data, with `terms` fused (a row bias of `sum(rows)` values, or a column bias of N per
/// group), the sizes on the device where `counted`, checks sampled rows of every group, and
/// with `reps` times it.
pub fn run_grouped<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    rows: &[usize],
    (n, k): (usize, usize),
    lb: Layout,
    (options, terms, counted): (&GemmOptions, Option<&Terms>, bool),
    reps: Option<u32>,
) -> vk_sgmat::Result<GroupedReport> {
    let seed = Rng::fresh_seed();
    let mut rng = Rng::new(seed);
    let total: usize = rows.iter().sum();
    let input = Inputs::<TA, TB, TC>::new(&mut rng, rows, (n, k), terms);
    let w_batch = BatchRef::strided(view(&input.w, k, n, lb), rows.len(), k * n);
    let da = ctx.upload(MatRef::new(&input.a, total, k))?;
    let dw = ctx.upload_batch(w_batch)?;
    let mut dc = ctx.upload(MatRef::new(&input.c_in, total, n))?;
    // The epilogue's vectors on the device (timing binds device vectors).
    let bias_dev = (!input.bias.is_empty())
        .then(|| ctx.upload(MatRef::new(&input.bias, 1, input.bias.len())))
        .transpose()?;
    let scales_dev = match &input.scales {
        Some((r, c)) => Some((
            ctx.upload(MatRef::new(r, 1, r.len()))?,
            ctx.upload(MatRef::new(c, 1, c.len()))?,
        )),
        None => None,
    };
    let fused = terms.map(|t| {
        let mut f = Fused::new().activation(t.activation);
        if let (Some(axis), Some(v)) = (t.bias, &bias_dev) {
            f = f.bias(axis, v);
        }
        if let Some((r, c)) = &scales_dev {
            f = f.scales(r, c);
        }
        f
    });
    let sizes: Vec<u32> = rows.iter().map(|&m| m as u32).collect();
    let counts = ctx.upload(MatRef::new(&sizes, 1, sizes.len()))?;
    let op = {
        let op = Matmul::with_options(options);
        let op = if counted {
            op.grouped_by_device_counts(&counts)
        } else {
            op.grouped(rows)
        };
        match &fused {
            Some(f) => op.fused(f),
            None => op,
        }
    };
    let plans = ctx
        .prepare(&op, &da, &dw, &mut dc)
        .map(|p| p.plans().cloned().collect::<Vec<_>>())?;
    let kernel = match plans.as_slice() {
        [one] if one.counts_on_device() => format!("table pass + one dispatch, {}", one.kernel_name()),
        [one] if one.gemv_kernel().is_none() && one.main_kernel().grouped => {
            format!("one dispatch, {}", one.scheme.name())
        }
        _ => format!("{} GEMMs", plans.len()),
    };
    let span = |dc: &mut DeviceMatrix<TC>| {
        ctx.stream()
            .and_then(|mut s| s.timed(|s| s.run(&op, &da, &dw, dc).map(|()| 1)))
            .map(|t| t.gpu_span_s)
    };
    span(&mut dc)?;
    let mut out = vec![TC::from_f64(0.0); total * n];
    ctx.download(&dc, vk_sgmat::MatMut::new(&mut out, total, n))?;
    let input_u = input_roundoff(TA::TYPE, TB::TYPE, options.compute)?;
    let worst = check_groups(&input, &out, (rows, n, k, lb), (options, terms), input_u, &mut rng);
    let mut report = GroupedReport {
        device: ctx.device_info().name.clone(),
        groups: rows.to_vec(),
        n,
        k,
        types: Types::name_of::<TA, TB, TC>(),
        epilogue: terms.map_or("-".into(), |t| t.label.clone()),
        b_layout: lb.letter().to_string(),
        seed,
        check: worst.ok_or(vk_sgmat::Error::ZeroSize { m: 0, n, k })?,
        median_ms: f64::NAN,
        tflops: f64::NAN,
        kernel,
    };
    if let Some(reps) = reps {
        let warm = Instant::now();
        while warm.elapsed() < Duration::from_millis(1500) {
            span(&mut dc)?;
        }
        let mut times = (0..reps.max(1))
            .map(|_| span(&mut dc))
            .collect::<vk_sgmat::Result<Vec<f64>>>()?;
        let median = vk_sgmat::median(&mut times);
        report.median_ms = median * 1e3;
        report.tflops = 2.0 * (total * n * k) as f64 / median / 1e12;
    }
    Ok(report)
}

/// The worst check over sampled rows of every non-empty group of `out` (C after the GEMM)
/// against the f64 reference of `input`, with the fused terms where given.
fn check_groups<TA: Element, TB: Element, TC: Element>(
    input: &Inputs<TA, TB, TC>,
    out: &[TC],
    (rows, n, k, lb): (&[usize], usize, usize, Layout),
    (options, terms): (&GemmOptions, Option<&Terms>),
    input_u: f64,
    rng: &mut Rng,
) -> Option<Check> {
    let int = matches!(TA::TYPE, ComponentType::I8 | ComponentType::U8);
    let (mut first, mut worst): (usize, Option<Check>) = (0, None);
    for (g, &m) in rows.iter().enumerate() {
        if m > 0 {
            let ag = MatRef::new(&input.a[first * k..], m, k);
            let wg = view(&input.w[g * k * n..], k, n, lb);
            let sample = rows_to_check(m, n, 4096, 32, rng);
            let c0 = &input.c_in[first * n..];
            let got = match terms {
                None => {
                    let (want, mag) = reference(&ag, &wg, Some((c0, n)), options.alpha, options.beta, &sample);
                    compare_rounded(&out[first * n..], n, n, &sample, (&want, &mag), k, input_u)
                }
                Some(t) => {
                    // The group's rows of a row bias, its own N values of a column bias.
                    let part = match t.bias {
                        Some(Axis::Row) => first..first + m,
                        _ => g * n..(g + 1) * n,
                    };
                    let f64s = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
                    let r = FusedRef {
                        alpha: options.alpha,
                        beta: options.beta,
                        bias: t.bias.map(|axis| (axis, f64s(&input.bias[part]))),
                        activation: t.activation,
                        scales: input
                            .scales
                            .as_ref()
                            .map(|(r, c)| (f64s(&r[first..first + m]), f64s(&c[g * n..(g + 1) * n]))),
                    };
                    let (mut want, mut mag) = reference(&ag, &wg, None::<(&[TC], usize)>, 1.0, 0.0, &sample);
                    for (x, (v, g)) in want.iter_mut().zip(mag.iter_mut()).enumerate() {
                        let (i, j) = (sample[x / n], x % n);
                        (*v, *g) = r.apply((i, j), (*v, *g), c0[i * n + j].to_f64());
                    }
                    let acc = (if int { ComponentType::I32 } else { ComponentType::F32 }, k);
                    compare_fused(&out[first * n..], (n, n), &sample, (&want, &mag), acc, input_u)
                }
            };
            worst = worse(worst, got);
        }
        first += m;
    }
    worst
}

/// `gemm --groups` and `bench --groups`: every type's grouped GEMM (with `--epilogue`/`--out`
/// fused); whether each check passed.
pub fn command(
    ctx: &Context,
    types: &[Types],
    rows: &[usize],
    (n, k): (usize, usize),
    lb: Layout,
    (options, fused, counted): (&GemmOptions, &crate::cli::FusedArgs, bool),
    (reps, json): (u32, bool),
) -> Result<bool> {
    use ComponentType::*;
    let mut reports = Vec::new();
    for &t in types {
        let (t, terms) = fused_terms(fused, t, true)?;
        let args = (options, terms.as_ref(), counted);
        // Output casts the plain types list has not: 8-bit inputs dequantised into a float C,
        // bf16 stores.
        let r = match (t.a, t.b, t.c) {
            (F16, F16, Bf16) => run_grouped::<f16, f16, bf16>(ctx, rows, (n, k), lb, args, Some(reps))?,
            (Bf16, Bf16, Bf16) => run_grouped::<bf16, bf16, bf16>(ctx, rows, (n, k), lb, args, Some(reps))?,
            (Bf16, Bf16, F16) => run_grouped::<bf16, bf16, f16>(ctx, rows, (n, k), lb, args, Some(reps))?,
            (I8, I8, F16) => run_grouped::<i8, i8, f16>(ctx, rows, (n, k), lb, args, Some(reps))?,
            (I8, I8, F32) => run_grouped::<i8, i8, f32>(ctx, rows, (n, k), lb, args, Some(reps))?,
            (U8, U8, F16) => run_grouped::<u8, u8, f16>(ctx, rows, (n, k), lb, args, Some(reps))?,
            (U8, U8, F32) => run_grouped::<u8, u8, f32>(ctx, rows, (n, k), lb, args, Some(reps))?,
            (I8 | U8, _, c) if terms.is_some() => bail!("--groups dequantises 8-bit inputs into f16 or f32, not {c}"),
            _ => with_types!(t, |TA, TB, TC| run_grouped::<TA, TB, TC>(
                ctx,
                rows,
                (n, k),
                lb,
                args,
                Some(reps)
            )?),
        };
        if !json {
            if reports.is_empty() {
                println!("device: {}", r.device);
            }
            let check = match (r.check.passed, r.epilogue.as_str()) {
                (false, _) => "FAILED".to_string(),
                (true, "-") => format!("ok ({:.1e})", r.check.rel_error),
                // The fused check's figure is the worst error as a fraction of its bound.
                (true, _) => format!("ok ({:.2}/bound)", r.check.rel_error),
            };
            let epilogue = if r.epilogue == "-" {
                String::new()
            } else {
                format!(" epilogue {}", r.epilogue)
            };
            println!(
                "grouped {:?} x {}x{} {} B {}{epilogue}: check {check}, {:.4} ms, {:.2} TFLOP/s ({})",
                r.groups, r.n, r.k, r.types, r.b_layout, r.median_ms, r.tflops, r.kernel
            );
        }
        reports.push(r);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(reports.iter().all(|r| r.check.passed))
}
