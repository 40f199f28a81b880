//! `gemm --devices` and `bench --devices`: one GEMM over several devices, verified against the
//! f64 reference, and its speedup over one device of the same machine in the same run.

use crate::checking::FULL_CHECK;
use crate::types::{with_types, Types};
use crate::verify::{compare_rounded, input_roundoff, random_matrix, reference, rows_to_check, Check, Rng};
use anyhow::{bail, Result};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Instant;
use vk_sgmat::Matmul;
use vk_sgmat::{
    ComponentType, ContextOptions, DeviceSet, Element, GemmOptions, Layout, MatMut, MatRef, MultiContext, PinnedMatrix,
    Split, SplitKind,
};

/// The multi-device handle for `--devices` (`all` or `0,1`), with the validation layer and
/// `copy_queues` copy-engine queues as asked.
pub fn multi_context(devices: &str, (validation, copy_queues): (bool, u32)) -> Result<MultiContext> {
    let options = ContextOptions {
        validation,
        copy_queues,
        ..Default::default()
    };
    Ok(MultiContext::with_options(&DeviceSet::parse(devices), options)?)
}

pub fn parse_split(s: &str) -> Result<SplitKind> {
    match SplitKind::parse(s) {
        Some(k) => Ok(k),
        None => bail!("--split {s:?}: use auto, rows, cols or a grid PxQ (e.g. 2x4)"),
    }
}

/// What `gemm --devices` prints.
#[derive(Serialize)]
pub struct MultiGemmReport {
    pub devices: Vec<String>,
    pub weights: Vec<f64>,
    pub split: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub types: String,
    pub layout: String,
    pub seed: u64,
    pub rows_checked: usize,
    pub check: Check,
    pub runs: usize,
    /// Host operands, transfers included.
    pub host_ms: f64,
    pub host_tflops: f64,
    /// Operands already on the devices.
    pub resident_ms: f64,
    pub resident_tflops: f64,
    /// Pinned host operands (`Context::run`/`MultiContext::run` on pinned matrices), checked on the same rows.
    pub pinned_check: Check,
    /// How many devices imported the pinned operands (the others staged them).
    pub pinned_imported_on: usize,
    pub pinned_ms: f64,
    pub pinned_tflops: f64,
}

/// "2x1: 0 rows 0..8192, 1 rows 8192..16384" (columns named where a part does not span C).
fn describe(split: &Split) -> String {
    let parts: Vec<String> = split
        .parts
        .iter()
        .map(|p| {
            if p.cols == (0..split.n) {
                format!("{} rows {:?}", p.device, p.rows)
            } else {
                format!("{} rows {:?} cols {:?}", p.device, p.rows, p.cols)
            }
        })
        .collect();
    format!("{}x{}: {}", split.grid.0, split.grid.1, parts.join(", "))
}

/// Rows to check: each part's first and last, and `sample` more spread over C.
fn check_rows(split: &Split, sample: usize, rng: &mut Rng) -> Vec<usize> {
    let mut rows = rows_to_check(split.m, split.n, FULL_CHECK, sample, rng);
    rows.extend(split.parts.iter().flat_map(|p| [p.rows.start, p.rows.end - 1]));
    rows.sort_unstable();
    rows.dedup();
    rows
}

fn median_ms(reps: usize, f: impl FnMut() -> vk_sgmat::Result<()>) -> Result<f64> {
    logged_median_ms(reps, None, f)
}

/// [`median_ms`], the samples written on a line of `log` under its label where there is one.
fn logged_median_ms(
    reps: usize,
    log: Option<(&mut String, String)>,
    mut f: impl FnMut() -> vk_sgmat::Result<()>,
) -> Result<f64> {
    // Pipelines and staging memory, and every GPU the call uses at its clock: one idle through
    // the series before took ~4 calls of 16384^3 to reach it (docs/perf/h200x2-3.sh).
    let warm = Instant::now();
    while warm.elapsed().as_secs_f64() < 1.0 {
        f()?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    if let Some((log, label)) = log {
        let samples: Vec<String> = times.iter().map(|t| format!("{t:.2}")).collect();
        let _ = writeln!(log, "samples {label} (ms): {}", samples.join(" "));
    }
    Ok(vk_sgmat::median(&mut times))
}

/// Random operands, one multi-device GEMM checked against the reference, then the host and
/// device-resident paths timed.
pub fn gemm<TA: Element, TB: Element, TC: Element>(
    mc: &MultiContext,
    (m, n, k): (usize, usize, usize),
    (la, lb): (Layout, Layout),
    options: &GemmOptions,
    kind: SplitKind,
    repeat: usize,
) -> Result<MultiGemmReport> {
    let seed = Rng::fresh_seed();
    let mut rng = Rng::new(seed);
    let split = mc.split::<TA, TB>(m, n, k, kind)?;
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, la, 0);
    let (b, ldb) = random_matrix::<TB>(&mut rng, k, n, lb, 0);
    let am = MatRef::stored(&a, m, k, la, lda);
    let bm = MatRef::stored(&b, k, n, lb, ldb);
    let c_in: Vec<TC> = crate::verify::random_vec(&mut rng, m * n);
    let mut c = c_in.clone();
    mc.run(
        &Matmul::with_options(options).split(&split),
        am,
        bm,
        MatMut::new(&mut c, m, n),
    )?;
    let rows = check_rows(&split, 32, &mut rng);
    let (expected, magnitude) = reference(&am, &bm, Some((&c_in, n)), options.alpha, options.beta, &rows);
    let u = input_roundoff(TA::TYPE, TB::TYPE, options.compute)?;
    let check = compare_rounded(&c, n, n, &rows, (&expected, &magnitude), k, u);

    let host_ms = median_ms(repeat, || {
        mc.run(
            &Matmul::with_options(options).split(&split),
            am,
            bm,
            MatMut::new(&mut c, m, n),
        )
    })?;
    let da = mc.distribute(am, &split, vk_sgmat::Role::A)?;
    let db = mc.distribute(bm, &split, vk_sgmat::Role::B)?;
    let mut dc = mc.zeros::<TC>(&split)?;
    let resident_ms = median_ms(repeat, || mc.run(&Matmul::with_options(options), &da, &db, &mut dc))?;
    drop((da, db, dc));
    let (pa, pb) = (pinned_copy(mc, &am)?, pinned_copy(mc, &bm)?);
    let mut pc = mc.pinned_matrix::<TC>(m, n, Layout::RowMajor)?;
    pc.data_mut().copy_from_slice(&c_in);
    mc.run(&Matmul::with_options(options).split(&split), &pa, &pb, &mut pc)?;
    let pinned_check = compare_rounded(pc.data(), n, n, &rows, (&expected, &magnitude), k, u);
    let pinned_imported_on = mc
        .contexts()
        .iter()
        .filter(|x| pa.imported_on(x) && pb.imported_on(x) && pc.imported_on(x))
        .count();
    let pinned_ms = median_ms(repeat, || {
        mc.run(&Matmul::with_options(options).split(&split), &pa, &pb, &mut pc)
    })?;
    let flop = 2.0 * (m * n * k) as f64;
    Ok(MultiGemmReport {
        devices: mc
            .contexts()
            .iter()
            .map(|c| format!("{}, {} copy-only queues", c.device_info().name, c.copy_queue_count()))
            .collect(),
        weights: mc.weights().to_vec(),
        split: describe(&split),
        m,
        n,
        k,
        types: crate::types::Types::name_of::<TA, TB, TC>(),
        layout: format!("{}{}", la.letter(), lb.letter()),
        seed,
        rows_checked: rows.len(),
        check,
        runs: repeat,
        host_ms,
        host_tflops: flop / host_ms / 1e9,
        resident_ms,
        resident_tflops: flop / resident_ms / 1e9,
        pinned_check,
        pinned_imported_on,
        pinned_ms,
        pinned_tflops: flop / pinned_ms / 1e9,
    })
}

/// A pinned copy of `m` in `m`'s storage order (dense).
fn pinned_copy<T: Element>(mc: &MultiContext, m: &MatRef<'_, T>) -> Result<PinnedMatrix<T>> {
    let mut p = mc.pinned_matrix::<T>(m.rows, m.cols, m.layout)?;
    let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
    for (o, line) in p.data_mut().chunks_mut(inner).enumerate().take(outer) {
        line.copy_from_slice(&m.data[o * m.ld..o * m.ld + inner]);
    }
    Ok(p)
}

pub fn render_gemm(r: &MultiGemmReport) -> String {
    let mut s = String::new();
    for (i, (d, w)) in r.devices.iter().zip(&r.weights).enumerate() {
        let _ = writeln!(s, "device {i}: {d} (weight {w:.3})");
    }
    let _ = writeln!(
        s,
        "gemm {}x{}x{} {} layout {} over {} devices, split {}",
        r.m,
        r.n,
        r.k,
        r.types,
        r.layout,
        r.devices.len(),
        r.split
    );
    let _ = writeln!(
        s,
        "check: {} ({} rows, error {:.3e}, bound {:.3e}, seed {})",
        if r.check.passed { "passed" } else { "FAILED" },
        r.rows_checked,
        r.check.rel_error,
        r.check.tolerance,
        r.seed
    );
    let _ = writeln!(
        s,
        "host operands (transfers included): {:.3} ms, {:.3} TFLOP/s; on the devices: {:.3} ms, {:.3} TFLOP/s (medians of {})",
        r.host_ms, r.host_tflops, r.resident_ms, r.resident_tflops, r.runs
    );
    let _ = writeln!(
        s,
        "pinned host operands (imported on {} of {} devices): check {} (error {:.3e}), {:.3} ms, {:.3} TFLOP/s",
        r.pinned_imported_on,
        r.devices.len(),
        if r.pinned_check.passed { "passed" } else { "FAILED" },
        r.pinned_check.rel_error,
        r.pinned_ms,
        r.pinned_tflops
    );
    s
}

/// One shape of `bench --devices`: one device against all of them, host and resident operands.
#[derive(Serialize)]
pub struct MultiBenchRow {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub types: String,
    pub split: String,
    /// Device 0's blocking `Context::run`.
    pub blocking_ms: f64,
    /// Device 0 alone through the multi-device pipeline.
    pub pipelined_ms: f64,
    /// The faster of the two.
    pub single_host_ms: f64,
    pub multi_host_ms: f64,
    pub single_resident_ms: f64,
    pub multi_resident_ms: f64,
    /// Pinned host operands: device 0 alone, all devices.
    pub single_pinned_ms: f64,
    pub multi_pinned_ms: f64,
    /// Whether every device imported the pinned operands (else they were staged).
    pub pinned_imported: bool,
    pub speedup_host: f64,
    pub speedup_pinned: f64,
    pub speedup_resident: f64,
    pub multi_resident_tflops: f64,
    pub passed: bool,
}

/// Times every shape in this one run: device 0 alone and all devices, on host operands (staged
/// and pinned) and resident ones, each series after a second of warming; checks the
/// multi-device results on sampled rows. With `trace`, every sample and the traced calls too.
pub fn bench<TA: Element, TB: Element, TC: Element>(
    mc: &MultiContext,
    shapes: &[(usize, usize, usize)],
    kind: SplitKind,
    (reps, trace): (usize, bool),
) -> Result<(Vec<MultiBenchRow>, String)> {
    let solo = MultiContext::with_weights(vec![mc.contexts()[0].clone()], vec![1.0])?;
    let mut rng = Rng::new(Rng::fresh_seed());
    let mut out = Vec::new();
    let mut traces = String::new();
    let mut progress = crate::progress::Progress::new(shapes.len());
    for &(m, n, k) in shapes {
        progress.start(&format!("{m}x{n}x{k} over {} devices", mc.contexts().len()));
        let mut timer = ShapeTimer {
            reps,
            traces: trace.then_some(&mut traces),
            shape: format!("{m}x{n}x{k}"),
        };
        let r = bench_shape::<TA, TB, TC>((mc, &solo), (m, n, k), kind, &mut timer, &mut rng)?;
        progress.done(&format!(
            "{m}x{n}x{k}: x{:.2} with host operands, x{:.2} pinned, x{:.2} resident",
            r.speedup_host, r.speedup_pinned, r.speedup_resident
        ));
        out.push(r);
    }
    progress.finish();
    Ok((out, traces))
}

/// Medians of one shape's series, each sample logged where the bench is traced.
struct ShapeTimer<'t> {
    reps: usize,
    traces: Option<&'t mut String>,
    shape: String,
}

impl ShapeTimer<'_> {
    /// `f`'s median in milliseconds ([`logged_median_ms`]), logged as `what`.
    fn median_ms(&mut self, what: &str, f: impl FnMut() -> vk_sgmat::Result<()>) -> Result<f64> {
        let tag = format!("{} {what}", self.shape);
        logged_median_ms(self.reps, self.traces.as_deref_mut().map(|t| (t, tag)), f)
    }
}

/// One shape's row: device 0 alone (`solo`, the same device as a one-device set) and all of
/// `mc`'s devices on resident, host and pinned operands, the results checked on sampled rows.
fn bench_shape<TA: Element, TB: Element, TC: Element>(
    (mc, solo): (&MultiContext, &MultiContext),
    (m, n, k): (usize, usize, usize),
    kind: SplitKind,
    timer: &mut ShapeTimer<'_>,
    rng: &mut Rng,
) -> Result<MultiBenchRow> {
    let one = &mc.contexts()[0];
    let options = GemmOptions::default();
    let op = || Matmul::with_options(&options);
    let split = mc.split::<TA, TB>(m, n, k, kind)?;
    let (a, _) = random_matrix::<TA>(rng, m, k, Layout::RowMajor, 0);
    let (b, _) = random_matrix::<TB>(rng, k, n, Layout::RowMajor, 0);
    let (am, bm) = (MatRef::new(&a, m, k), MatRef::new(&b, k, n));
    let mut c = vec![TC::from_f64(0.0); m * n];

    let (da1, db1) = (one.upload(am)?, one.upload(bm)?);
    let mut dc1 = one.zeros::<TC>(m, n)?;
    let single_resident_ms = timer.median_ms("1 dev", || one.run(&op(), &da1, &db1, &mut dc1))?;
    drop((da1, db1, dc1));
    let (da, db) = (
        mc.distribute(am, &split, vk_sgmat::Role::A)?,
        mc.distribute(bm, &split, vk_sgmat::Role::B)?,
    );
    let mut dc = mc.zeros::<TC>(&split)?;
    let multi_resident_ms = timer.median_ms("N dev", || mc.run(&op(), &da, &db, &mut dc))?;
    drop((da, db, dc));
    // One device's fastest host path: the blocking call, or the banded pipeline alone.
    let blocking_ms = timer.median_ms("1 block", || one.run(&op(), am, bm, MatMut::new(&mut c, m, n)))?;
    let pipelined_ms = timer.median_ms("1 pipe", || solo.run(&op(), am, bm, MatMut::new(&mut c, m, n)))?;
    let single_host_ms = blocking_ms.min(pipelined_ms);
    c.fill(TC::from_f64(f64::NAN));
    let multi_host_ms = timer.median_ms("N host", || {
        mc.run(&op().split(&split), am, bm, MatMut::new(&mut c, m, n))
    })?;
    // Pinned host operands: imported by every device, so no host copy.
    let (pa, pb) = (pinned_copy(mc, &am)?, pinned_copy(mc, &bm)?);
    let mut pc = mc.pinned_matrix::<TC>(m, n, Layout::RowMajor)?;
    let pinned_imported = mc
        .contexts()
        .iter()
        .all(|x| pa.imported_on(x) && pb.imported_on(x) && pc.imported_on(x));
    let single_pinned_ms = timer.median_ms("1 pin", || solo.run(&op(), &pa, &pb, &mut pc))?;
    pc.data_mut().fill(TC::from_f64(f64::NAN));
    let multi_pinned_ms = timer.median_ms("N pin", || mc.run(&op().split(&split), &pa, &pb, &mut pc))?;
    if let Some(traces) = timer.traces.as_deref_mut() {
        let whole = solo.split::<TA, TB>(m, n, k, kind)?;
        for (who, set, cut) in [("device 0", solo, &whole), ("all devices", mc, &split)] {
            let calls = crate::multi_trace::traced_calls(set, (&pa, &pb, &mut pc), &options, cut, timer.reps)?;
            traces.push_str(&crate::multi_trace::render(
                &format!("{m}x{n}x{k} pinned, {who}"),
                &calls,
            ));
        }
    }
    let rows = check_rows(&split, 6, rng);
    let (expected, magnitude) = reference(&am, &bm, None::<(&[TC], usize)>, 1.0, 0.0, &rows);
    let u = input_roundoff(TA::TYPE, TB::TYPE, options.compute)?;
    let check = compare_rounded(&c, n, n, &rows, (&expected, &magnitude), k, u);
    let pinned_check = compare_rounded(pc.data(), n, n, &rows, (&expected, &magnitude), k, u);
    Ok(MultiBenchRow {
        m,
        n,
        k,
        types: crate::types::Types::name_of::<TA, TB, TC>(),
        split: format!("{}x{}", split.grid.0, split.grid.1),
        blocking_ms,
        pipelined_ms,
        single_host_ms,
        multi_host_ms,
        single_resident_ms,
        multi_resident_ms,
        single_pinned_ms,
        multi_pinned_ms,
        pinned_imported,
        speedup_host: single_host_ms / multi_host_ms,
        speedup_pinned: single_pinned_ms / multi_pinned_ms,
        speedup_resident: single_resident_ms / multi_resident_ms,
        multi_resident_tflops: 2.0 * (m * n * k) as f64 / multi_resident_ms / 1e9,
        passed: check.passed && pinned_check.passed,
    })
}

/// "h200x2" for two "NVIDIA H200": the first name token with letters and digits, and the count.
fn machine_tag(mc: &MultiContext) -> String {
    let name = &mc.contexts()[0].device_info().name;
    let token = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .find(|t| t.chars().any(|c| c.is_ascii_digit()) && t.chars().any(|c| c.is_ascii_alphabetic()))
        .unwrap_or("gpu")
        .to_lowercase();
    format!("{token}x{}", mc.contexts().len())
}

pub fn render_bench(mc: &MultiContext, rows: &[MultiBenchRow]) -> String {
    let mut s = String::new();
    for (i, c) in mc.contexts().iter().enumerate() {
        let info = c.device_info();
        let _ = writeln!(
            s,
            "device {i}: {} ({} {}), weight {:.3}, host copies on {}",
            info.name,
            info.driver_name,
            info.driver_info,
            mc.weights()[i],
            match c.copy_queue_count() {
                0 => "the compute queues".to_string(),
                n => format!("{n} copy-only queues"),
            }
        );
    }
    let _ = writeln!(
        s,
        "{:<18} {:<8} {:>5} {:>9} {:>9} {:>9} {:>6} {:>9} {:>9} {:>6} {:>9} {:>9} {:>6} {:>8} {:>6}",
        "shape",
        "types",
        "split",
        "1 block",
        "1 pipe",
        "N host",
        "x",
        "1 pin",
        "N pin",
        "x",
        "1 dev",
        "N dev",
        "x",
        "TFLOP/s",
        "check"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<18} {:<8} {:>5} {:>9.2} {:>9.2} {:>9.2} {:>6.2} {:>9.2} {:>9.2} {:>6} {:>9.3} {:>9.3} {:>6.2} {:>8.1} {:>6}",
            format!("{}x{}x{}", r.m, r.n, r.k),
            r.types,
            r.split,
            r.blocking_ms,
            r.pipelined_ms,
            r.multi_host_ms,
            r.speedup_host,
            r.single_pinned_ms,
            r.multi_pinned_ms,
            // A staged "pinned" run is marked: it measured the staging path.
            format!("{:.2}{}", r.speedup_pinned, if r.pinned_imported { "" } else { "s" }),
            r.single_resident_ms,
            r.multi_resident_ms,
            r.speedup_resident,
            r.multi_resident_tflops,
            if r.passed { "ok" } else { "FAILED" }
        );
    }
    let _ = writeln!(
        s,
        "(ms, medians. Host operands: device 0's blocking call, device 0 alone through the banded \
         pipeline, all devices; x = the faster of the first two over all devices. Pinned host \
         operands (pinned matrices; x ending in s: not imported, staged): device 0 alone, all \
         devices. Resident: device 0 alone, all devices. TFLOP/s: all devices, resident.)"
    );
    let find = |n: usize| rows.iter().find(|r| (r.m, r.n, r.k) == (n, n, n));
    let fig = |n: usize, f: fn(&MultiBenchRow) -> f64| {
        find(n).map_or_else(|| format!("na (no {n}^3 row in this run)"), |r| format!("{:.2}", f(r)))
    };
    let _ = writeln!(
        s,
        "multi-gpu {}: speedup_16384_resident={} speedup_16384_host={} speedup_8192_resident={} speedup_16384_pinned={}",
        machine_tag(mc),
        fig(16384, |r| r.speedup_resident),
        fig(16384, |r| r.speedup_host),
        fig(8192, |r| r.speedup_resident),
        fig(16384, |r| r.speedup_pinned)
    );
    s
}

/// Whether no context reported a validation message (printing any).
fn clean(mc: &MultiContext) -> bool {
    let mut ok = true;
    for c in mc.contexts() {
        for m in c.validation_messages().messages() {
            eprintln!("validation: {m}");
            ok = false;
        }
    }
    ok
}

/// `vk-sgmat gemm M N K --devices ...`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_command(
    devices: &str,
    context: (bool, u32),
    types: Types,
    shape: (usize, usize, usize),
    layouts: (Layout, Layout),
    options: &GemmOptions,
    kind: SplitKind,
    (repeat, json): (usize, bool),
) -> Result<bool> {
    let mc = multi_context(devices, context)?;
    let r = with_types!(types, |TA, TB, TC| gemm::<TA, TB, TC>(
        &mc, shape, layouts, options, kind, repeat
    )?);
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!("{}", render_gemm(&r));
    }
    Ok(clean(&mc) && r.check.passed && r.pinned_check.passed)
}

/// `vk-sgmat bench --devices ...`: f16 -> f32 (or the first `--types`) at 8192^3 and 16384^3
/// (256^3 and 512^3 on CPU drivers) unless shapes are given.
pub fn bench_command(
    devices: &str,
    context: (bool, u32),
    types: &[String],
    shapes: Vec<(usize, usize, usize)>,
    kind: SplitKind,
    (reps, json, trace): (usize, bool, bool),
) -> Result<bool> {
    let mc = multi_context(devices, context)?;
    let t = match types.first() {
        Some(t) => Types::parse(t)?,
        None => Types::pair(ComponentType::F16, ComponentType::F32),
    };
    let shapes = if shapes.is_empty() {
        let cpu = mc.contexts()[0].device_info().kind == vk_sgmat::device::DeviceKind::Cpu;
        let sizes: &[usize] = if cpu { &[256, 512] } else { &[8192, 16384] };
        sizes.iter().map(|&s| (s, s, s)).collect()
    } else {
        shapes
    };
    let (rows, traces) = with_types!(t, |TA, TB, TC| bench::<TA, TB, TC>(&mc, &shapes, kind, (reps, trace))?);
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", render_bench(&mc, &rows));
    }
    print!("{traces}");
    Ok(clean(&mc) && rows.iter().all(|r| r.passed))
}
