//! `vk-sgmat gemm --epilogue ... --out T`: one GEMM with a fused epilogue on random data,
//! checked element-wise against the f64 reference (`verify::fused`), and with `--repeat` timed
//! beside the plain GEMM of the same inputs (the epilogue's overhead).

use crate::args::bench_types;
use crate::args::{context_with, finish, parse_layout, parse_shapes};
use crate::cli::DeviceArgs;
use crate::cli::FusedArgs;
use crate::terms::parse;
use crate::types::Types;
use crate::verify::fused::{compare_fused, FusedRef};
use crate::verify::{random_vec, reference, rows_to_check, Check, Rng};
use anyhow::{bail, Result};
use half::{bf16, f16};
use std::time::{Duration, Instant};
use vk_sgmat::{
    Activation, Axis, ComponentType, Context, DeviceMatrix, Element, Fused, GemmOptions, Layout, MatMut, MatRef,
};
use vk_sgmat::{Matmul, Timing, Timings};

/// What one fused run measured.
#[derive(Debug, serde::Serialize)]
pub struct FusedReport {
    device: String,
    m: usize,
    n: usize,
    k: usize,
    types: String,
    epilogue: String,
    seed: u64,
    /// The fused GEMM's tile scheme.
    pub scheme: String,
    pub check: Check,
    fused_ms: f64,
    plain_ms: f64,
    overhead: f64,
    tflops: f64,
}

/// `gemm --epilogue/--out`: whether the check passed, or `None` when neither was given.
pub fn gemm_args(
    args: &FusedArgs,
    dev: &DeviceArgs,
    types: Types,
    mnk: (usize, usize, usize),
    layouts: (Layout, Layout),
    options: &GemmOptions,
    (reps, json): (u32, bool),
) -> Result<Option<bool>> {
    if args.epilogue.is_none() && args.out.is_none() {
        return Ok(None);
    }
    let (bias, act) = parse(args.epilogue.as_deref().unwrap_or("none"))?;
    let out = args.out_type(types.c)?;
    let ctx = context_with(dev, true)?;
    let spec = (bias, act, args.epilogue.clone().unwrap_or_else(|| "none".into()));
    let timed = (reps > 1).then_some(reps);
    if types.a != types.b {
        bail!(
            "--epilogue/--out with {},{} inputs: A and B of one type",
            types.a,
            types.b
        );
    }
    let report = run_types(&ctx, (types.a, out), mnk, layouts, options, &spec, timed)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let r = &report;
        println!(
            "{}: {}x{}x{} {} epilogue {} ({}): {} (worst error {:.3} of its bound, {} of {} checked){}",
            r.device,
            r.m,
            r.n,
            r.k,
            r.types,
            r.epilogue,
            r.scheme,
            if r.check.passed { "PASS" } else { "FAIL" },
            r.check.rel_error,
            r.check.compared - r.check.mismatches,
            r.check.compared,
            if r.fused_ms.is_nan() {
                String::new()
            } else {
                format!(
                    "; fused {:.4} ms ({:.1} TFLOP/s), plain {:.4} ms: overhead {:+.1}%",
                    r.fused_ms,
                    r.tflops,
                    r.plain_ms,
                    r.overhead * 100.0
                )
            }
        );
    }
    finish(&ctx, report.check.passed).map(Some)
}

/// `bench --epilogue/--out`: for each type pair and shape, the fused GEMM timed beside the plain
/// one (checked first); whether every check passed, or `None` when neither flag was given.
pub fn bench_args(
    args: &FusedArgs,
    dev: &DeviceArgs,
    types: &[String],
    shapes: &[String],
    (forced, scheme): (&GemmOptions, Option<&str>),
    layout: &str,
    (reps, json): (u32, bool),
) -> Result<Option<bool>> {
    if args.epilogue.is_none() && args.out.is_none() {
        return Ok(None);
    }
    let terms = args.epilogue.clone().unwrap_or_else(|| "none".into());
    let (bias, act) = parse(&terms)?;
    let ctx = context_with(dev, false)?;
    let layouts = parse_layout(layout)?;
    let mut shapes = parse_shapes(shapes)?;
    if shapes.is_empty() {
        shapes = if ctx.device_info().kind == vk_sgmat::device::DeviceKind::Cpu {
            vec![(128, 128, 128)]
        } else {
            vec![
                (1024, 1024, 1024),
                (4096, 4096, 4096),
                (8192, 8192, 8192),
                (4096, 11008, 4096),
            ]
        };
    }
    let mut reports = Vec::new();
    for t in bench_types(&ctx, types)? {
        if t.a != t.b {
            bail!("--epilogue/--out with {}: A and B of one type", t.name());
        }
        // Integer products are dequantised: to f32 unless told.
        let out = args.out_type(if t.c.is_float() { t.c } else { ComponentType::F32 })?;
        let options = crate::args::with_scheme(&ctx, t, forced, scheme)?;
        for &shape in &shapes {
            let spec = (bias, act, terms.clone());
            let r = run_types(&ctx, (t.a, out), shape, layouts, &options, &spec, Some(reps.max(2)))?;
            if !json {
                if reports.is_empty() {
                    println!("device: {}", r.device);
                    println!(
                        "{:>16} {:>9} {:>14} {:>6} {:>9} {:>9} {:>9} {:>8}  scheme",
                        "MxNxK", "types", "epilogue", "check", "fused ms", "TFLOP/s", "plain ms", "overhead"
                    );
                }
                println!(
                    "{:>16} {:>9} {:>14} {:>6} {:>9.4} {:>9.1} {:>9.4} {:>+7.1}%  {}",
                    format!("{}x{}x{}", r.m, r.n, r.k),
                    r.types,
                    r.epilogue,
                    if r.check.passed { "PASS" } else { "FAIL" },
                    r.fused_ms,
                    r.tflops,
                    r.plain_ms,
                    r.overhead * 100.0,
                    r.scheme
                );
            }
            reports.push(r);
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    let passed = reports.iter().all(|r| r.check.passed);
    finish(&ctx, passed).map(Some)
}

/// One fused GEMM of A and B of type `input` into C of type `out`: see [`run`].
pub fn run_types(
    ctx: &Context,
    (input, out): (ComponentType, ComponentType),
    mnk: (usize, usize, usize),
    layouts: (Layout, Layout),
    options: &GemmOptions,
    spec: &(Option<Axis>, Activation, String),
    timed: Option<u32>,
) -> Result<FusedReport> {
    use ComponentType::*;
    macro_rules! go {
        ($ta:ty, $tc:ty) => {
            run::<$ta, $tc>(ctx, mnk, layouts, options, spec, timed)?
        };
    }
    Ok(match (input, out) {
        (F16, F16) => go!(f16, f16),
        (F16, Bf16) => go!(f16, bf16),
        (F16, F32) => go!(f16, f32),
        (Bf16, Bf16) => go!(bf16, bf16),
        (Bf16, F16) => go!(bf16, f16),
        (Bf16, F32) => go!(bf16, f32),
        (F32, F32) => go!(f32, f32),
        (F32, F16) => go!(f32, f16),
        (F32, Bf16) => go!(f32, bf16),
        (I8, F16) => go!(i8, f16),
        (I8, F32) => go!(i8, f32),
        (U8, F16) => go!(u8, f16),
        (U8, F32) => go!(u8, f32),
        (a, c) => bail!(
            "--epilogue/--out with {a} inputs and {c} C: A and B of one type (f16, bf16, f32, i8, u8), C f16, bf16 or f32"
        ),
    })
}

fn run<T: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    (la, lb): (Layout, Layout),
    options: &GemmOptions,
    (bias_axis, act, name): &(Option<Axis>, Activation, String),
    reps: Option<u32>,
) -> vk_sgmat::Result<FusedReport> {
    let seed = Rng::fresh_seed();
    let mut rng = Rng::new(seed);
    let a: Vec<T> = random_vec(&mut rng, m * k);
    let b: Vec<T> = random_vec(&mut rng, k * n);
    let ld = |l: Layout, r: usize, c: usize| if l == Layout::RowMajor { c } else { r };
    let am = MatRef::stored(&a, m, k, la, ld(la, m, k));
    let bm = MatRef::stored(&b, k, n, lb, ld(lb, k, n));
    let c_in: Vec<TC> = (0..m * n).map(|_| TC::from_f64(rng.unit() - 0.5)).collect();
    let int = matches!(T::TYPE, ComponentType::I8 | ComponentType::U8);
    let len = |axis| if axis == Axis::Row { m } else { n };
    let bias: Vec<f32> = bias_axis.map_or(Vec::new(), |ax| {
        (0..len(ax)).map(|_| (rng.unit() * 2.0 - 1.0) as f32).collect()
    });
    // Scales of about 1 / (128 * sqrt(K)) keep dequantised sums near 1.
    let s = 1.0 / (128.0 * (k as f64).sqrt());
    let mut scale = |len: usize| -> Vec<f32> { (0..len).map(|_| (s * (0.5 + rng.unit())) as f32).collect() };
    let (rs, cs) = if int { (scale(m), scale(n)) } else { Default::default() };
    let da = ctx.upload(am)?;
    let db = ctx.upload(bm)?;
    let dbias = match bias_axis {
        Some(ax) => Some((*ax, ctx.upload(MatRef::new(&bias, 1, bias.len()))?)),
        None => None,
    };
    let dscales = if int {
        Some((ctx.upload(MatRef::new(&rs, 1, m))?, ctx.upload(MatRef::new(&cs, 1, n))?))
    } else {
        None
    };
    let mut fused = Fused::new().activation(*act);
    if let Some((ax, v)) = &dbias {
        fused = fused.bias(*ax, v);
    }
    if let Some((r, c)) = &dscales {
        fused = fused.scales(r, c);
    }
    let mut dc = ctx.upload(MatRef::new(&c_in, m, n))?;
    let scheme = ctx
        .prepare(&Matmul::with_options(options).fused(&fused), &da, &db, &mut dc)
        .map(|p| p.plans().next().expect("a plan").clone())?
        .kernel_name();
    ctx.run(&Matmul::with_options(options).fused(&fused), &da, &db, &mut dc)?;
    let mut out = vec![TC::from_f64(0.0); m * n];
    ctx.download(&dc, MatMut::new(&mut out, m, n))?;
    let rows = rows_to_check(m, n, 4096, 64, &mut rng);
    let products = reference::<T, T, TC>(&am, &bm, None, 1.0, 0.0, &rows);
    let f64s = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let r = FusedRef {
        alpha: options.alpha,
        beta: options.beta,
        bias: bias_axis.map(|ax| (ax, f64s(&bias))),
        activation: *act,
        scales: int.then(|| (f64s(&rs), f64s(&cs))),
    };
    let (want, magnitude) = fused_reference(&r, products, (&rows, n), &c_in);
    let acc = if int { ComponentType::I32 } else { ComponentType::F32 };
    let input_u = crate::verify::input_roundoff(T::TYPE, T::TYPE, options.compute)?;
    let check = compare_fused(&out, (n, n), &rows, (&want, &magnitude), (acc, k), input_u);
    let mut report = FusedReport {
        device: ctx.device_info().name.clone(),
        m,
        n,
        k,
        types: format!("{}:{}", T::TYPE, TC::TYPE),
        epilogue: name.clone(),
        seed,
        scheme,
        check,
        fused_ms: f64::NAN,
        plain_ms: f64::NAN,
        overhead: f64::NAN,
        tflops: f64::NAN,
    };
    let Some(reps) = reps else {
        return Ok(report);
    };
    let fused_s = timed(reps, &mut |r| {
        ctx.prepare(&Matmul::with_options(options).fused(&fused), &da, &db, &mut dc)
            .and_then(|p| p.time(Timing::Runs(r)))
            .map(Timings::into_seconds)
    })?;
    // The plain GEMM of the same inputs into the accumulator's type: what the epilogue replaces.
    let plain_s = match T::TYPE {
        ComponentType::U8 => time_plain::<T, u32>(ctx, (&da, &db), options, reps)?,
        ComponentType::I8 => time_plain::<T, i32>(ctx, (&da, &db), options, reps)?,
        _ => time_plain::<T, f32>(ctx, (&da, &db), options, reps)?,
    };
    report.fused_ms = fused_s * 1e3;
    report.plain_ms = plain_s * 1e3;
    report.overhead = fused_s / plain_s - 1.0;
    report.tflops = 2.0 * (m * n * k) as f64 / fused_s / 1e12;
    Ok(report)
}

/// `r` applied to the checked `rows` of the plain products `(dot, mag)` (row-major, `n` wide,
/// one row per checked row) beside C's old values: the fused GEMM's expected values and
/// their magnitudes.
fn fused_reference<TC: Element>(
    r: &FusedRef,
    (dot, mag): (Vec<f64>, Vec<f64>),
    (rows, n): (&[usize], usize),
    c_in: &[TC],
) -> (Vec<f64>, Vec<f64>) {
    let (mut want, mut magnitude) = (vec![0.0; rows.len() * n], vec![0.0; rows.len() * n]);
    for (ri, &i) in rows.iter().enumerate() {
        for j in 0..n {
            let e = ri * n + j;
            (want[e], magnitude[e]) = r.apply((i, j), (dot[e], mag[e]), c_in[i * n + j].to_f64());
        }
    }
    (want, magnitude)
}

/// The median of `reps` timed runs of `f` after untimed ones: three seconds (clocks rise), then
/// until two rounds' medians agree within 2% (NVIDIA runs a fresh workgroup-scope pipeline
/// slowly for seconds), at most 20 s in all.
fn timed(reps: u32, f: &mut dyn FnMut(u32) -> vk_sgmat::Result<Vec<f64>>) -> vk_sgmat::Result<f64> {
    let warm = Instant::now();
    let mut last = f64::INFINITY;
    while warm.elapsed() < Duration::from_secs(20) {
        let now = vk_sgmat::median(&mut f(16)?);
        if warm.elapsed() > Duration::from_secs(3) && (now - last).abs() <= 0.02 * now {
            break;
        }
        last = now;
    }
    Ok(vk_sgmat::median(&mut f(reps)?))
}

/// [`timed`] for the plain GEMM of `a` and `b` into a new `TC` matrix, first warmed until steady:
/// NVIDIA runs a fresh workgroup-scope pipeline slowly for seconds.
fn time_plain<T: Element, TC: Element>(
    ctx: &Context,
    (a, b): (&DeviceMatrix<T>, &DeviceMatrix<T>),
    options: &GemmOptions,
    reps: u32,
) -> vk_sgmat::Result<f64> {
    let mut c: DeviceMatrix<TC> = ctx.zeros(a.rows(), b.cols())?;
    ctx.prepare(&Matmul::with_options(options), a, b, &mut c)
        .and_then(|p| p.time(Timing::WarmUp(Duration::from_secs(2), Duration::from_secs(20))))
        .map(|t| t.median())?;
    timed(reps, &mut |r| {
        ctx.prepare(&Matmul::with_options(options), a, b, &mut c)
            .and_then(|p| p.time(Timing::Runs(r)))
            .map(Timings::into_seconds)
    })
}
