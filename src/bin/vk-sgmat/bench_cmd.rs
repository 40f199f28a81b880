//! `vk-sgmat bench` and `vk-sgmat tune`: GPU-timed GEMMs over shapes and types, and every
//! candidate scheme of a config timed and checked.

use crate::args::bench_types;
use crate::args::{parse_shapes, tunable_schemes};
use crate::quantized::BenchWeights;
use crate::report;
use crate::types::with_types;
use crate::verify::{compare, random_matrix, reference, rows_to_check, Rng};
use anyhow::{Context as _, Result};
use std::time::Duration;
use vk_sgmat::kernel::KernelKey;
use vk_sgmat::tiling::TileScheme;
use vk_sgmat::{Context, Element, GPUSubgroupMatrixConfig, GemmOptions, Layout, MatMut, MatRef, Probe};
use vk_sgmat::{Matmul, Prepared, Timings};

/// How `bench` times each point.
pub(crate) struct Timing {
    /// Timed runs per point.
    pub reps: u32,
    /// Also time each dispatch of the point apart, on stderr.
    pub steps: bool,
    /// The least untimed warm-up before timing (then until steady).
    pub warm: Duration,
    /// Per GEMM in a stream of `reps` back-to-back runs (`Timing::Stream`, median
    /// of [`STREAM_RUNS`]) instead of the median of each run's own timestamps.
    pub stream: bool,
}

/// Streams timed per point with `--stream`.
pub(crate) const STREAM_RUNS: usize = 5;

pub(crate) fn bench(
    ctx: &Context,
    (types, shapes, weights): (&[String], &[String], Option<BenchWeights>),
    layouts: (Layout, Layout, Layout),
    forced: &GemmOptions,
    scheme: Option<&str>,
    timing: &Timing,
    (cublas, peers): (Option<&std::path::Path>, &[report::PeerRow]),
) -> Result<Vec<report::BenchRow>> {
    let cpu = ctx.device_info().kind == vk_sgmat::device::DeviceKind::Cpu;
    let shapes = if shapes.is_empty() {
        default_shapes(cpu)
    } else {
        parse_shapes(shapes)?
    };
    let reference = match cublas {
        Some(p) => {
            report::read_cublas(&std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?)?
        }
        None => Vec::new(),
    };
    let all_types = bench_types(ctx, types)?;
    let mut progress = crate::progress::Progress::new(all_types.len() * shapes.len());
    let mut rows = Vec::new();
    let compute = forced.compute;
    for &t in &all_types {
        let options = crate::args::with_scheme(ctx, t, forced, scheme)?;
        let (route, config) = ctx.route_for([t.a, t.b, t.c], &options)?;
        let (groups, iters) = if cpu { (4, 64) } else { (2048, 4096) };
        // The kernels without matrix units have no matrix-unit peak to compare with (0: none).
        let without_matrix_units = vk_sgmat::kernel::Load::without_matrix_units(route.loads);
        let peak = if without_matrix_units {
            0.0
        } else {
            ctx.peak(&config, groups, iters, 3)?.flops / 1e12
        };
        let types = row_label(t, forced, &options, weights);
        for &shape in &shapes {
            progress.start(&format!("{types} {}x{}x{}", shape.0, shape.1, shape.2));
            let Point {
                median,
                read_as,
                kernel,
                gemv,
            } = match weights {
                Some(q) => with_types!(t, |TA, TB, TC| crate::quantized::bench_point::<TA, TB, TC>(
                    ctx, q, shape, &options, timing
                )?),
                None => with_types!(t, |TA, TB, TC| bench_point::<TA, TB, TC>(
                    ctx, shape, layouts, &options, timing
                )?),
            };
            let tflops = 2.0 * (shape.0 * shape.1 * shape.2) as f64 / median / 1e12;
            progress.done(&format!(
                "{types} {}x{}x{}: {tflops:.2} TFLOP/s",
                shape.0, shape.1, shape.2
            ));
            // Peers are matched on the types alone: forced options are ours to vary.
            let label = t.label(compute);
            let cublas = report::cublas_for(&reference, &label, shape);
            let types = types.clone();
            rows.push(report::BenchRow {
                peers: report::peers_for(peers, &label, shape, tflops),
                layout: layout_label((layouts.0, layouts.1), read_as),
                types,
                kernel,
                config: if gemv {
                    "matrix-vector".into()
                } else if without_matrix_units {
                    "no matrix units".into()
                } else {
                    config.to_string()
                },
                m: shape.0,
                n: shape.1,
                k: shape.2,
                median_ms: median * 1e3,
                tflops,
                cublas_tflops: cublas,
                ratio: cublas.map(|c| tflops / c),
                peak_tflops: peak,
                peak_fraction: tflops / peak,
            });
        }
    }
    progress.finish();
    Ok(rows)
}

/// The bench's default shapes: squares, and on a GPU a model's and a skinny and short-K one.
fn default_shapes(cpu: bool) -> Vec<(usize, usize, usize)> {
    let squares: &[usize] = if cpu {
        &[64, 128, 256]
    } else {
        &[256, 512, 1024, 2048, 4096, 8192]
    };
    let mut v: Vec<_> = squares.iter().map(|&s| (s, s, s)).collect();
    if !cpu {
        v.extend([(4096, 11008, 4096), (16, 4096, 4096), (4096, 4096, 256)]);
    }
    v
}

/// A row's name: its types, then every option forced on the command line and the weights'
/// format (`f32:f32 fast, first`, `f16:f32, gemv cols 4, q4_K weights`).
fn row_label(
    t: crate::types::Types,
    forced: &GemmOptions,
    options: &GemmOptions,
    weights: Option<BenchWeights>,
) -> String {
    // A forced conversion is part of the row's name: `f32:f32 fast, first`.
    let mut types = match forced.convert_first {
        None => t.label(forced.compute),
        Some(first) => format!("{}, {}", t.label(forced.compute), if first { "first" } else { "load" }),
    };
    if let Some(r) = forced.relayout {
        types = format!("{types}, {}", if r { "relaid" } else { "in place" });
    }
    if let Some(s) = options.scheme {
        types = format!("{types} {}", s.name());
    }
    if let Some(on) = forced.specialize {
        types = format!("{types}, sizes {}", if on { "built in" } else { "pushed" });
    }
    match forced.matrix_vector {
        Some(false) => types = format!("{types}, no matrix-vector"),
        Some(true) => types = format!("{types}, matrix-vector"),
        None => {}
    }
    if let Some(c) = forced.gemv_cols {
        types = format!("{types}, gemv cols {c}");
    }
    if let Some(u) = forced.gemv_unroll {
        types = format!("{types}, gemv unroll {u}");
    }
    if let Some(l) = forced.gemv_lanes {
        types = format!("{types}, gemv lanes {l}");
    }
    if let Some(on) = forced.int8_activations {
        types = format!("{types}, {} activations", if on { "8-bit" } else { "unrounded" });
    }
    if forced.gemv_wide_loads == Some(false) {
        types = format!("{types}, 32-bit block loads");
    }
    if let Some(n) = forced.split_k {
        types = format!("{types}, split {n}");
    }
    if let Some(BenchWeights { quant, first }) = weights {
        types = format!("{types}, {quant} weights{}", if first { " first" } else { "" });
    }
    types
}

/// The layouts of A and B as asked, and after `>` those the GEMM kernel read where operands
/// were copied transposed first.
fn layout_label(asked: (Layout, Layout), read_as: (Layout, Layout)) -> String {
    let letters = |(a, b): (Layout, Layout)| format!("{}{}", a.letter(), b.letter());
    if read_as == asked {
        letters(asked)
    } else {
        format!("{}>{}", letters(asked), letters(read_as))
    }
}

/// What one bench point measured: the median GPU seconds of one GEMM, the layouts its kernel
/// read A and B in, and the kernel's name.
pub(crate) struct Point {
    pub median: f64,
    pub read_as: (Layout, Layout),
    pub kernel: String,
    /// Whether the matrix-vector kernel ran it (no config's matrix units).
    pub gemv: bool,
}

/// Median GPU seconds of one GEMM on device-resident random data (C stored `cl`), after
/// `timing.warm` of untimed runs and then until steady (fresh pipelines run slowly at first on
/// NVIDIA). With `timing.steps`, then each dispatch of it timed apart, on a line of stderr.
fn bench_point<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    (al, bl, cl): (Layout, Layout, Layout),
    options: &GemmOptions,
    timing: &Timing,
) -> Result<Point> {
    let mut rng = Rng::new(Rng::fresh_seed());
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, al, 0);
    let (b, ldb) = random_matrix::<TB>(&mut rng, k, n, bl, 0);
    let da = ctx.upload(MatRef::stored(&a, m, k, al, lda))?;
    let db = ctx.upload(MatRef::stored(&b, k, n, bl, ldb))?;
    let mut dc = match cl {
        Layout::RowMajor => ctx.zeros::<TC>(m, n)?,
        Layout::ColMajor => ctx.upload(MatRef::col_major(&vec![TC::from_f64(0.0); m * n], m, n))?,
    };
    let gemm = ctx.prepare(&Matmul::with_options(options), &da, &db, &mut dc)?;
    time_point(&gemm, (m, n, k), (al, bl), timing)
}

/// Times a prepared bench point as `timing` says: warm-up, then the median of its runs or
/// streams, and with `timing.steps` each dispatch apart, on a line of stderr. `layouts` are how
/// A and B are stored.
pub(crate) fn time_point(
    gemm: &Prepared<'_>,
    (m, n, k): (usize, usize, usize),
    (al, bl): (Layout, Layout),
    timing: &Timing,
) -> Result<Point> {
    let reps = timing.reps;
    let warm_max = timing.warm.max(Duration::from_secs(10));
    gemm.time(vk_sgmat::Timing::WarmUp(timing.warm, warm_max))?;
    let plan = gemm.plans().next().context("a plan")?;
    let kernel = match plan.is_split_k() {
        true => format!("{} x{}", plan.kernel_name(), plan.gemm_dispatches().count()),
        false => plan.kernel_name(),
    };
    // The matrix-vector kernel reads both operands as stored.
    let read_as = match plan.gemv_kernel() {
        Some(_) => (al, bl),
        None => {
            let key = plan.main_kernel();
            (key.a_layout, key.b_layout)
        }
    };
    let gemv = plan.gemv_kernel().is_some();
    let median = if timing.stream {
        let mut runs = (0..STREAM_RUNS)
            .map(|_| gemm.time(vk_sgmat::Timing::Stream(reps)).map(|t| t.median()))
            .collect::<vk_sgmat::Result<Vec<f64>>>()?;
        vk_sgmat::median(&mut runs)
    } else {
        gemm.time(vk_sgmat::Timing::Runs(reps))?.median()
    };
    if timing.steps {
        let Timings::Steps(timed) = gemm.time(vk_sgmat::Timing::Steps(reps))? else {
            anyhow::bail!("step timing returned no steps");
        };
        let each: Vec<String> = timed
            .into_iter()
            .map(|mut s| format!("{} {:.4} ms", s.kernel, vk_sgmat::median(&mut s.seconds) * 1e3))
            .collect();
        eprintln!("steps {m}x{n}x{k}: {} (medians of {reps})", each.join(", "));
    }
    Ok(Point {
        median,
        read_as,
        kernel,
        gemv,
    })
}

/// Every config of the types `(a, c)` (only `only`'s shape where given) with its tunable
/// schemes (those whose names contain one of `filter`'s, where any).
fn candidates(
    ctx: &Context,
    (a, c): (vk_sgmat::ComponentType, vk_sgmat::ComponentType),
    only: Option<(u32, u32, u32)>,
    filter: &[String],
) -> Vec<(GPUSubgroupMatrixConfig, Vec<TileScheme>)> {
    ctx.configs()
        .into_iter()
        .filter(|x| x.component_type == a && x.result_type == c)
        .filter(|x| only.is_none_or(|s| s == (x.m, x.n, x.k)))
        .map(|config| {
            let schemes: Vec<_> = tunable_schemes(ctx, &config)
                .into_iter()
                .filter(|s| filter.is_empty() || filter.iter().any(|f| s.name().contains(f.as_str())))
                .collect();
            (config, schemes)
        })
        .collect()
}

/// The kernel variants timed per scheme: the real one, and with `probes` its parts alone and
/// the real one with more shared memory than its `shared_bytes` (sizes above the device's
/// limit are refused when timed, and skipped).
fn probes_of(probes: bool, shared_bytes: u32) -> Vec<Probe> {
    if !probes {
        return vec![Probe::Full];
    }
    let mut list = Probe::PARTS.to_vec();
    list.extend(
        [32, 40, 48]
            .map(|kib| kib * 1024)
            .into_iter()
            .filter(|&b| b > shared_bytes)
            .map(Probe::SharedAtLeast),
    );
    list
}

/// Times every candidate scheme of every config for the types, each checked on 16 sampled rows.
/// The median seconds of `reps` runs of `probe` of `op` on the operands, or none where the
/// probe does not apply to the problem (unchecked loads on partial tiles).
fn time_probe<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    op: &Matmul<'_>,
    (a, b, c): (
        &vk_sgmat::DeviceMatrix<TA>,
        &vk_sgmat::DeviceMatrix<TB>,
        &mut vk_sgmat::DeviceMatrix<TC>,
    ),
    probe: Probe,
    reps: u32,
) -> Result<Option<f64>> {
    match ctx
        .prepare(op, a, b, c)
        .and_then(|p| p.time(vk_sgmat::Timing::Probe(probe, reps)))
        .map(Timings::into_seconds)
    {
        Ok(mut times) => Ok(Some(vk_sgmat::median(&mut times))),
        Err(vk_sgmat::Error::Unsupported(_)) if probe != Probe::Full => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// One timed run of `tune`: `scheme` on `config` (its kernel `key`) as `probe`.
struct TuneRun<'a> {
    config: GPUSubgroupMatrixConfig,
    scheme: &'a TileScheme,
    key: KernelKey,
    probe: Probe,
    problem: (usize, usize, usize),
    median: f64,
}

/// The tune table's row of `ran`, with the kernel's statistics; `passed` is the real kernel's
/// check (probes compute wrong results by design, so theirs is not).
fn tune_row(ctx: &Context, ran: TuneRun<'_>, passed: bool) -> Result<report::TuneRow> {
    let (config, scheme, probe, (m, n, k), median) = (ran.config, ran.scheme, ran.probe, ran.problem, ran.median);
    let stats = ctx.kernel_statistics(&KernelKey {
        probe,
        fixed: None,
        ..ran.key
    })?;
    let registers = stats
        .iter()
        .find(|(name, _)| name.to_ascii_lowercase().contains("register"))
        .map(|(_, v)| v.clone());
    let g = scheme.geometry(&config);
    Ok(report::TuneRow {
        registers,
        statistics: stats,
        config: config.to_string(),
        scheme: scheme.name(),
        probe: (probe != Probe::Full).then(|| probe.name()),
        tile: format!("{}x{}x{}", g.bm, g.bn, g.bk),
        threads: g.threads,
        shared_bytes: g.shared_bytes,
        median_ms: median * 1e3,
        tflops: 2.0 * (m * n * k) as f64 / median / 1e12,
        passed: probe != Probe::Full || passed,
    })
}

pub(crate) fn tune<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    layouts: (Layout, Layout),
    (reps, warm, relayout): (u32, Duration, Option<bool>),
    only: Option<(u32, u32, u32)>,
    filter: &[String],
    probes: bool,
) -> Result<Vec<report::TuneRow>> {
    let mut rng = Rng::new(Rng::fresh_seed());
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, layouts.0, 0);
    let (b, ldb) = random_matrix::<TB>(&mut rng, k, n, layouts.1, 0);
    let am = MatRef {
        data: &a,
        rows: m,
        cols: k,
        layout: layouts.0,
        ld: lda,
    };
    let bm = MatRef {
        data: &b,
        rows: k,
        cols: n,
        layout: layouts.1,
        ld: ldb,
    };
    let da = ctx.upload(am)?;
    let db = ctx.upload(bm)?;
    let mut dc = ctx.zeros::<TC>(m, n)?;
    let check_rows = rows_to_check(m, n, 0, 16, &mut rng);
    let (expected, magnitude) = reference::<TA, TB, TC>(&am, &bm, None, 1.0, 0.0, &check_rows);
    let mut groups: Vec<Vec<report::TuneRow>> = Vec::new();
    let per_config = candidates(ctx, (TA::TYPE, TC::TYPE), only, filter);
    let mut progress = crate::progress::Progress::new(per_config.iter().map(|(_, s)| s.len()).sum());
    for (config, schemes) in per_config {
        for scheme in &schemes {
            progress.start(&format!("{config} {}", scheme.name()));
            let options = GemmOptions {
                shape: Some((config.m, config.n, config.k)),
                scheme: Some(*scheme),
                relayout,
                ..Default::default()
            };
            ctx.run(&Matmul::with_options(&options), &da, &db, &mut dc)?;
            let mut c = vec![TC::from_f64(0.0); m * n];
            ctx.download(&dc, MatMut::new(&mut c, m, n))?;
            let check = compare(&c, n, n, &check_rows, &expected, &magnitude, k);
            let g = scheme.geometry(&config);
            let key = ctx
                .plan::<TA, TB, TC>(&Matmul::with_options(&options), (m, n, k), layouts)?
                .main_kernel();
            let probe_list = probes_of(probes, g.shared_bytes);
            ctx.prepare(&Matmul::with_options(&options), &da, &db, &mut dc)
                .and_then(|p| p.time(vk_sgmat::Timing::WarmUp(warm, warm.max(Duration::from_secs(5)))))
                .map(|t| t.median())?;
            let mut group = Vec::new();
            for probe in probe_list {
                let op = Matmul::with_options(&options);
                let Some(median) = time_probe(ctx, &op, (&da, &db, &mut dc), probe, reps)? else {
                    continue;
                };
                let ran = TuneRun {
                    config,
                    scheme,
                    key,
                    probe,
                    problem: (m, n, k),
                    median,
                };
                group.push(tune_row(ctx, ran, check.passed)?);
            }
            progress.done(&format!(
                "{config} {}: {:.2} TFLOP/s{}",
                scheme.name(),
                group.first().map_or(0.0, |r| r.tflops),
                if group.first().is_some_and(|r| !r.passed) {
                    ", WRONG RESULT"
                } else {
                    ""
                }
            ));
            groups.push(group);
        }
    }
    progress.finish();
    // Fastest real kernel first; each one's probes stay under it.
    groups.sort_by(|a, b| b[0].tflops.total_cmp(&a[0].tflops));
    Ok(groups.into_iter().flatten().collect())
}
