//! `gemm --batch B` and `bench --batch B`: strided-batched GEMMs on random data, verified entry by
//! entry against the f64 reference, timed with GPU timestamps, beside the loop of single GEMMs
//! they replace.

use crate::args::bench_types;
use crate::args::{context_with, finish, parse_layout, parse_shapes};
use crate::checking::{view, worse};
use crate::cli::{BatchArgs, DeviceArgs};
use crate::terms::{fused_terms, Terms};
use crate::types::{with_types, Types};
use crate::verify::fused::{compare_fused, FusedRef};
use crate::verify::{compare_rounded, input_roundoff, random_vec, reference, rows_to_check, Check, Rng};
use anyhow::{bail, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;
use vk_sgmat::device::DeviceKind;
use vk_sgmat::{
    Axis, BatchRef, ComponentType, Context, DeviceBatch, DeviceMatrix, Element, Fused, GemmOptions, Layout, MatRef,
};
use vk_sgmat::{Matmul, Timing, Timings};

/// Entries checked in full (or on sampled rows) per run: the first, the last and a few between.
const CHECKED_ENTRIES: usize = 6;

/// One batched GEMM, checked and timed.
#[derive(Serialize)]
pub struct BatchedReport {
    pub device: String,
    pub batch: usize,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub types: String,
    /// The fused epilogue's terms (`--epilogue`), `none`, or `-` for a plain GEMM.
    pub epilogue: String,
    pub layout: String,
    /// Whether every entry multiplies the same B.
    pub shared_b: bool,
    pub scheme: String,
    pub seed: u64,
    pub entries_checked: usize,
    pub check: Check,
    /// Median GPU time of the batch, one dispatch.
    pub median_ms: f64,
    pub tflops: f64,
    /// `batch` times the median GPU time of one entry's GEMM alone: what a loop of single
    /// GEMMs costs at the least (it adds a dispatch and a barrier per entry).
    pub loop_ms: f64,
}

/// B on the device: one matrix every entry shares, or one per entry.
enum B<T: Element> {
    Shared(DeviceMatrix<T>),
    Own(DeviceBatch<T>),
}

/// Runs `count` GEMMs of `(m, n, k)` as one batch on random data, B shared where asked, and
/// checks it; with `reps`, also times it.
#[allow(clippy::too_many_arguments)]
pub fn run<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    count: usize,
    shared_b: bool,
    (la, lb): (Layout, Layout),
    options: &GemmOptions,
    terms: Option<&Terms>,
    reps: Option<u32>,
) -> vk_sgmat::Result<BatchedReport> {
    let seed = Rng::fresh_seed();
    let mut rng = Rng::new(seed);
    let entry = |rows: usize, cols: usize| rows * cols;
    let a = random_vec::<TA>(&mut rng, count * entry(m, k));
    let b = random_vec::<TB>(&mut rng, if shared_b { 1 } else { count } * entry(k, n));
    let c_in: Vec<TC> = random_vec(&mut rng, count * entry(m, n));
    let a_batch = BatchRef::strided(view(&a, m, k, la), count, entry(m, k));
    let b_stride = if shared_b { 0 } else { entry(k, n) };
    let b_batch = BatchRef::strided(view(&b, k, n, lb), count, b_stride);
    let da = ctx.upload_batch(a_batch)?;
    let mut dc = ctx.upload_batch(BatchRef::new(&c_in, count, m, n))?;
    let db = if shared_b {
        B::Shared(ctx.upload(b_batch.matrix)?)
    } else {
        B::Own(ctx.upload_batch(b_batch)?)
    };
    // The bias, shared by every entry, on the device (timing binds device vectors).
    let bias_len = match terms.and_then(|t| t.bias) {
        Some(Axis::Row) => m,
        Some(Axis::Col) => n,
        None => 0,
    };
    let bias: Vec<f32> = (0..bias_len).map(|_| (4.0 * rng.unit() - 2.0) as f32).collect();
    let bias_dev = terms
        .and_then(|t| t.bias)
        .map(|_| ctx.upload(MatRef::new(&bias, 1, bias_len)))
        .transpose()?;
    let fused = terms.map(|t| {
        let f = Fused::new().activation(t.activation);
        match (t.bias, &bias_dev) {
            (Some(axis), Some(v)) => f.bias(axis, v),
            _ => f,
        }
    });
    let op = match &fused {
        Some(f) => Matmul::with_options(options).fused(f),
        None => Matmul::with_options(options),
    };
    let time = |c: &mut DeviceBatch<TC>, reps| match &db {
        B::Shared(w) => timed(ctx.prepare(&op, &da, w, c)?, reps),
        B::Own(bb) => timed(ctx.prepare(&op, &da, bb, c)?, reps),
    };
    // One run, then the check: alpha * A B + beta * C_in for sampled entries and rows.
    let (_, scheme) = time(&mut dc, 1)?;
    let mut out = vec![TC::from_f64(0.0); count * m * n];
    ctx.download(dc.matrix(), vk_sgmat::MatMut::new(&mut out, count * m, n))?;
    let entries = checked_entries(count);
    let input_u = input_roundoff(TA::TYPE, TB::TYPE, options.compute)?;
    let operands = (a_batch, b_batch, c_in.as_slice(), bias.as_slice());
    let check = entries
        .iter()
        .map(|&i| check_entry(operands, &out, (i, (m, n, k)), (options, terms), input_u, &mut rng))
        .fold(None, worse)
        .expect("at least one entry is checked");
    let mut report = BatchedReport {
        device: ctx.device_info().name.clone(),
        batch: count,
        m,
        n,
        k,
        types: Types::name_of::<TA, TB, TC>(),
        epilogue: terms.map_or("-".into(), |t| t.label.clone()),
        layout: format!("{}{}", la.letter(), lb.letter()),
        shared_b,
        scheme,
        seed,
        entries_checked: entries.len(),
        check,
        median_ms: f64::NAN,
        tflops: f64::NAN,
        loop_ms: f64::NAN,
    };
    let Some(reps) = reps else {
        return Ok(report);
    };
    let median = crate::timing::warm_median(Duration::from_millis(1500), reps, |r| Ok(time(&mut dc, r)?.0))?;
    // Entry 0 alone, on matrices of its own: the loop's floor.
    let a1 = ctx.upload(view(&a, m, k, la))?;
    let b1 = ctx.upload(view(&b, k, n, lb))?;
    let mut c1 = ctx.zeros::<TC>(m, n)?;
    let single = |r| Ok(timed(ctx.prepare(&op, &a1, &b1, &mut c1)?, r)?.0);
    let one_ms = crate::timing::warm_median(Duration::from_millis(300), reps, single)? * 1e3;
    report.median_ms = median * 1e3;
    report.tflops = 2.0 * (count * m * n * k) as f64 / median / 1e12;
    report.loop_ms = one_ms * count as f64;
    Ok(report)
}

/// Up to [`CHECKED_ENTRIES`] entries of a batch of `count`, spread from the first to the last.
fn checked_entries(count: usize) -> Vec<usize> {
    let mut entries: Vec<usize> = (0..CHECKED_ENTRIES.min(count))
        .map(|i| i * (count - 1) / (CHECKED_ENTRIES - 1).max(1))
        .collect();
    entries.dedup();
    entries
}

/// `prepared` run `reps` times, each timed alone (GPU seconds), and its GEMM's kernel name.
fn timed(prepared: vk_sgmat::Prepared<'_>, reps: u32) -> vk_sgmat::Result<(Vec<f64>, String)> {
    let kernel = prepared.plans().next().map(|p| p.kernel_name()).unwrap_or_default();
    let times = prepared.time(Timing::Runs(reps)).map(Timings::into_seconds)?;
    Ok((times, kernel))
}

/// The check of batch entry `i` of `out` (every entry's C, back to back) on sampled rows,
/// against the f64 reference of its A, B (the shared one where B's stride is 0) and old C,
/// with the fused terms (a bias shared by every entry) where given.
fn check_entry<TA: Element, TB: Element, TC: Element>(
    (a, b, c_in, bias): (BatchRef<'_, TA>, BatchRef<'_, TB>, &[TC], &[f32]),
    out: &[TC],
    (i, (m, n, k)): (usize, (usize, usize, usize)),
    (options, terms): (&GemmOptions, Option<&Terms>),
    input_u: f64,
    rng: &mut Rng,
) -> Check {
    let ai = MatRef {
        data: &a.matrix.data[i * a.stride..],
        ..a.matrix
    };
    let bi = MatRef {
        data: &b.matrix.data[i * b.stride..],
        ..b.matrix
    };
    let rows = rows_to_check(m, n, 4096, 64, rng);
    let c0 = &c_in[i * m * n..];
    let got = &out[i * m * n..];
    match terms {
        None => {
            let (want, mag) = reference(&ai, &bi, Some((c0, n)), options.alpha, options.beta, &rows);
            compare_rounded(got, n, n, &rows, (&want, &mag), k, input_u)
        }
        Some(t) => {
            let r = FusedRef {
                alpha: options.alpha,
                beta: options.beta,
                bias: t.bias.map(|axis| (axis, bias.iter().map(|&x| f64::from(x)).collect())),
                activation: t.activation,
                scales: None,
            };
            let (mut want, mut mag) = reference(&ai, &bi, None::<(&[TC], usize)>, 1.0, 0.0, &rows);
            for (x, (w, g)) in want.iter_mut().zip(mag.iter_mut()).enumerate() {
                let (i, j) = (rows[x / n], x % n);
                (*w, *g) = r.apply((i, j), (*w, *g), c0[i * n + j].to_f64());
            }
            compare_fused(got, (n, n), &rows, (&want, &mag), (ComponentType::F32, k), input_u)
        }
    }
}

/// `gemm --batch` or `gemm --groups`: whether the checks passed, or `None` for a plain GEMM.
/// `single`: no --devices or column-major C were asked for (neither mode takes them); `scheme`:
/// a tile scheme by name (`--batch`: the batch and the loop of single GEMMs it is timed against
/// both run it; `--groups`: the one dispatch of every group, where the groups run as one).
#[allow(clippy::too_many_arguments)]
pub fn gemm_args(
    args: &BatchArgs,
    fused: &crate::cli::FusedArgs,
    dev: &DeviceArgs,
    types: Types,
    (m, n, k): (usize, usize, usize),
    layouts: (Layout, Layout),
    (single, scheme): (bool, Option<&str>),
    options: &GemmOptions,
    run: (u32, bool),
) -> Result<Option<bool>> {
    if args.counts_on_device && args.groups.is_empty() {
        bail!("--counts-on-device gives a grouped GEMM's sizes (--groups) to the device; there are no groups");
    }
    if args.batch.is_none() && args.groups.is_empty() {
        return Ok(None);
    }
    if !single || (args.batch.is_some() && !args.groups.is_empty()) {
        bail!("--batch and --groups take neither each other, --devices nor --c-layout t");
    }
    let ctx = context_with(dev, false)?;
    let options = &crate::args::with_scheme(&ctx, types, options, scheme)?;
    let passed = if let Some(count) = args.batch {
        command(
            &ctx,
            &[types],
            &[(m, n, k)],
            count,
            args.shared_b,
            layouts,
            (options, fused),
            run,
        )?
    } else {
        let sum: usize = args.groups.iter().sum();
        if sum != m || layouts.0 != Layout::RowMajor {
            bail!("--groups: the groups' rows ({sum}) must sum to M ({m}), and A is row-major");
        }
        crate::grouped::command(
            &ctx,
            &[types],
            &args.groups,
            (n, k),
            layouts.1,
            (options, fused, args.counts_on_device),
            run,
        )?
    };
    finish(&ctx, passed).map(Some)
}

/// `bench --batch` or `bench --groups`, as [`gemm_args`].
pub fn bench_args(
    (args, fused): (&BatchArgs, &crate::cli::FusedArgs),
    dev: &DeviceArgs,
    types: &[String],
    shapes: &[String],
    (forced, scheme): (&GemmOptions, Option<&str>),
    layout: &str,
    run: (u32, bool),
) -> Result<Option<bool>> {
    if args.counts_on_device && args.groups.is_empty() {
        bail!("--counts-on-device gives a grouped GEMM's sizes (--groups) to the device; there are no groups");
    }
    if args.batch.is_none() && args.groups.is_empty() {
        return Ok(None);
    }
    let ctx = context_with(dev, false)?;
    let (types, layouts) = (bench_types(&ctx, types)?, parse_layout(layout)?);
    // A scheme is named for one config: with several types it would fit at most one of them.
    let options = match (scheme, types.as_slice()) {
        (None, _) => forced.clone(),
        (Some(_), [t]) => crate::args::with_scheme(&ctx, *t, forced, scheme)?,
        (Some(_), _) => bail!("--scheme names one config's scheme: give one --types with it"),
    };
    let mut shapes = parse_shapes(shapes)?;
    let passed = if let Some(count) = args.batch {
        if shapes.is_empty() {
            shapes = vec![(128, 128, 64), (1024, 1024, 128), (2048, 2048, 128), (2048, 128, 2048)];
            if ctx.device_info().kind == DeviceKind::Cpu {
                shapes.truncate(1);
            }
        }
        command(
            &ctx,
            &types,
            &shapes,
            count,
            args.shared_b,
            layouts,
            (&options, fused),
            run,
        )?
    } else {
        let (n, k) = match shapes.as_slice() {
            [] => (14336, 4096),
            [(_, n, k)] => (*n, *k),
            _ => bail!("--groups takes one --shapes MxNxK (N and K)"),
        };
        crate::grouped::command(
            &ctx,
            &types,
            &args.groups,
            (n, k),
            layouts.1,
            (&options, fused, args.counts_on_device),
            run,
        )?
    };
    finish(&ctx, passed).map(Some)
}

/// Runs and reports batched GEMMs of every shape and type; whether every check passed.
#[allow(clippy::too_many_arguments)]
pub fn command(
    ctx: &Context,
    types: &[Types],
    shapes: &[(usize, usize, usize)],
    count: usize,
    shared_b: bool,
    layouts: (Layout, Layout),
    (options, fused): (&GemmOptions, &crate::cli::FusedArgs),
    (reps, json): (u32, bool),
) -> Result<bool> {
    let mut reports = Vec::new();
    for &t in types {
        let (t, terms) = fused_terms(fused, t, false)?;
        for &shape in shapes {
            let r = with_types!(t, |TA, TB, TC| run::<TA, TB, TC>(
                ctx,
                shape,
                count,
                shared_b,
                layouts,
                options,
                terms.as_ref(),
                Some(reps)
            )?);
            if !json {
                print!("{}", render(&r, reports.is_empty()));
            }
            reports.push(r);
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(reports.iter().all(|r| r.check.passed))
}

fn render(r: &BatchedReport, header: bool) -> String {
    let mut s = String::new();
    if header {
        let _ = writeln!(s, "device: {}", r.device);
        let _ = writeln!(
            s,
            "{:>6} {:>18} {:>9} {:>12} {:>6} {:>7} {:>10} {:>9} {:>10} {:>8} {:>10}  scheme",
            "batch", "MxNxK", "types", "epilogue", "layout", "B", "check", "ms", "TFLOP/s", "loop ms", "vs loop"
        );
    }
    let _ = writeln!(
        s,
        "{:>6} {:>18} {:>9} {:>12} {:>6} {:>7} {:>10} {:>9.4} {:>10.2} {:>8.3} {:>9.2}x  {}",
        r.batch,
        format!("{}x{}x{}", r.m, r.n, r.k),
        r.types,
        r.epilogue,
        r.layout,
        if r.shared_b { "shared" } else { "own" },
        match (r.check.passed, r.epilogue.as_str()) {
            (false, _) => "FAILED".into(),
            // The fused check's figure is the worst error as a fraction of its bound.
            (true, "-") => format!("{:.1e}", r.check.rel_error),
            (true, _) => format!("{:.2}/bound", r.check.rel_error),
        },
        r.median_ms,
        r.tflops,
        r.loop_ms,
        r.loop_ms / r.median_ms,
        r.scheme
    );
    s
}
