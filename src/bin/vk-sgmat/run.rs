//! The commands. Each returns whether everything it checked was correct.

use crate::cli::{Cli, Command, DeviceArgs};
use crate::report::{self, GemmReport, InfoReport};
use crate::types::{with_types, Types};
use anyhow::{bail, Context as _, Result};
use std::time::Instant;
use vk_sgmat::device::{rank_devices, Instance, InstanceOptions};
use vk_sgmat::kernel::KernelKey;
use vk_sgmat::plan::DispatchLimits;
use vk_sgmat::tiling::TileScheme;
use vk_sgmat::verify::{
    compare, compare_rounded, input_roundoff, random_matrix, random_vec, reference, rows_to_check, Rng,
};
use vk_sgmat::{
    ComputeMode, Context, ContextOptions, DeviceSelector, Element, GPUSubgroupMatrixConfig, GemmOptions, Layout,
    MatMut, MatRef, Probe,
};

pub fn run(cli: Cli) -> Result<bool> {
    let json = match &cli.command {
        Command::Info { json } | Command::Peak { json, .. } | Command::Check { json, .. } => *json,
        Command::Gemm { json, .. } | Command::Bench { json, .. } | Command::Tune { json, .. } => *json,
        Command::Runtime { json, .. } => *json,
    };
    crate::progress::set_plain(json);
    match cli.command {
        Command::Info { json } => info(json),
        Command::Gemm {
            m,
            n,
            k,
            types,
            mode,
            layout,
            c_layout,
            shape,
            scheme,
            alpha,
            beta,
            repeat,
            devices,
            split,
            batching,
            fused,
            json,
            dev,
        } => {
            let types = Types::parse(&types)?;
            let layouts = parse_layout(&layout)?;
            let c_layout = parse_c_layout(&c_layout)?;
            let compute = parse_mode(&mode)?;
            let shape = shape.as_deref().map(parse_shape).transpose()?;
            let options = GemmOptions {
                alpha,
                beta,
                shape,
                compute,
                ..Default::default()
            };
            let single = devices.is_none() && scheme.is_none() && c_layout == Layout::RowMajor;
            let run = (repeat.max(1) as u32, json);
            if let Some(passed) =
                crate::batched::gemm_args(&batching, &dev, types, (m, n, k), layouts, single, &options, run)?
            {
                return Ok(passed);
            }
            if !single && (fused.epilogue.is_some() || fused.out.is_some()) {
                bail!("--epilogue and --out take neither --devices, --scheme nor --c-layout t");
            }
            if let Some(passed) = crate::fused::gemm_args(&fused, &dev, types, (m, n, k), layouts, &options, run)? {
                return Ok(passed);
            }
            if let Some(devices) = devices {
                if scheme.is_some() || c_layout != Layout::RowMajor {
                    bail!("--devices takes neither --scheme (each device picks its own) nor --c-layout t");
                }
                let kind = crate::multi::parse_split(&split)?;
                return crate::multi::gemm_command(
                    &devices,
                    dev.validation,
                    types,
                    (m, n, k),
                    layouts,
                    &options,
                    kind,
                    (repeat.max(1), json),
                );
            }
            let ctx = context_with(&dev, false)?;
            let scheme = scheme
                .map(|name| scheme_named(&ctx, types, compute, shape, &name))
                .transpose()?;
            let options = GemmOptions { scheme, ..options };
            let report = with_types!(types, |TA, TB, TC| gemm::<TA, TB, TC>(
                &ctx,
                (m, n, k),
                (layouts.0, layouts.1, c_layout),
                &options,
                repeat.max(1)
            )?);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report::render_gemm(&report));
            }
            finish(&ctx, report.check.passed)
        }
        Command::Bench {
            types,
            mode,
            shapes,
            reps,
            cublas,
            peer,
            layout,
            plot,
            devices,
            split,
            batching,
            fused,
            json,
            dev,
        } => {
            let compute = parse_mode(&mode)?;
            let run = (reps, json);
            if let Some(passed) = crate::batched::bench_args(&batching, &dev, &types, &shapes, compute, &layout, run)? {
                return Ok(passed);
            }
            if let Some(passed) = crate::fused::bench_args(&fused, &dev, &types, &shapes, &layout, run)? {
                return Ok(passed);
            }
            if let Some(devices) = devices {
                let shapes = parse_shapes(&shapes)?;
                let kind = crate::multi::parse_split(&split)?;
                return crate::multi::bench_command(
                    &devices,
                    dev.validation,
                    &types,
                    shapes,
                    kind,
                    (reps.max(1) as usize, json),
                );
            }
            let ctx = context_with(&dev, false)?;
            let layouts = parse_layout(&layout)?;
            let mut peers = Vec::new();
            for p in &peer {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                peers.extend(report::read_peers(&text)?);
            }
            let compute = parse_mode(&mode)?;
            let rows = bench(
                &ctx,
                (&types, &shapes),
                layouts,
                compute,
                reps,
                (cublas.as_deref(), &peers),
            )?;
            let info = ctx.device_info();
            let device = format!("{} ({} {})", info.name, info.driver_name, info.driver_info);
            if let Some(path) = plot {
                std::fs::write(&path, crate::chart::render_svg(&device, &rows)?)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", report::render_bench(&device, &rows));
            }
            finish(&ctx, true)
        }
        Command::Tune {
            m,
            n,
            k,
            types,
            layout,
            shape,
            filter,
            reps,
            probe,
            json,
            dev,
        } => {
            let ctx = context(&dev)?;
            let types = Types::parse(&types)?;
            let layouts = parse_layout(&layout)?;
            let only = shape.as_deref().map(parse_shape).transpose()?;
            let rows = with_types!(types, |TA, TB, TC| tune::<TA, TB, TC>(
                &ctx,
                (m, n, k),
                layouts,
                reps,
                only,
                &filter,
                probe
            )?);
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", report::render_tune(&ctx.device_info().name, (m, n, k), &rows));
            }
            finish(&ctx, rows.iter().all(|r| r.passed))
        }
        Command::Peak { json, dev } => {
            let ctx = context(&dev)?;
            let cpu = ctx.device_info().kind == vk_sgmat::device::DeviceKind::Cpu;
            let (groups, iters, reps) = if cpu { (4, 64, 2) } else { (2048, 4096, 5) };
            let mut rows = Vec::new();
            for config in ctx.configs() {
                rows.push(ctx.peak(&config, groups, iters, reps)?);
            }
            // 256 MiB: several times any GPU's last-level cache, so the fills reach memory.
            let fill = ctx.fill_bandwidth(if cpu { 1 << 24 } else { 1 << 28 }, reps)?;
            if json {
                let out = serde_json::json!({ "configs": rows, "fill": fill });
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                print!("{}", report::render_peak(&ctx.device_info().name, &rows, &fill));
            }
            finish(&ctx, true)
        }
        Command::Runtime {
            torch,
            quick,
            json,
            dev,
        } => {
            let ctx = context(&dev)?;
            let torch_ms = match torch {
                Some(path) => {
                    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                    let v: serde_json::Value = serde_json::from_str(&text)?;
                    Some(
                        v["layer_torch_ms"]
                            .as_f64()
                            .context("no layer_torch_ms in the torch file")?,
                    )
                }
                None => None,
            };
            let r = crate::runtime::measure(&ctx, quick, torch_ms)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print!("{}", crate::runtime::render(&r));
            }
            finish(&ctx, r.verified)
        }
        Command::Check {
            quick,
            types,
            json,
            dev,
        } => {
            let ctx = context(&dev)?;
            let asked = bench_types(&ctx, &types)?;
            let rows = crate::check::check(&ctx, quick, &asked, types.is_empty())?;
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                let info = ctx.device_info();
                print!(
                    "{}",
                    report::render_check(
                        &format!("{} ({} {})", info.name, info.driver_name, info.driver_info),
                        &rows
                    )
                );
            }
            finish(&ctx, rows.iter().all(|r| r.passed))
        }
    }
}

fn context(dev: &DeviceArgs) -> Result<Context> {
    context_with(dev, true)
}

/// A context; `poison` fills C before every GEMM that does not read it (checks; not timings).
pub(crate) fn context_with(dev: &DeviceArgs, poison: bool) -> Result<Context> {
    let mut options = ContextOptions {
        validation: dev.validation,
        poison_outputs: poison,
        pipeline_cache: dev.pipeline_cache.clone(),
        autotune: dev.autotune.clone(),
        ..Default::default()
    };
    if let Some(d) = &dev.device {
        options.device = DeviceSelector::parse(d);
    }
    let ctx = Context::with_options(options.clone())?;
    let Some(max_allocation) = dev.max_allocation else {
        return Ok(ctx);
    };
    // The override tightens the device's own limits, which only a context can tell.
    let device = DispatchLimits::from_device(&ctx.device_info().limits);
    drop(ctx);
    options.limits_override = Some(DispatchLimits {
        max_allocation,
        ..device
    });
    Ok(Context::with_options(options)?)
}

/// With validation on, any message makes the command fail.
pub(crate) fn finish(ctx: &Context, passed: bool) -> Result<bool> {
    let msgs = ctx.validation_messages().messages();
    for m in &msgs {
        eprintln!("validation: {m}");
    }
    Ok(passed && msgs.is_empty())
}

fn info(json: bool) -> Result<bool> {
    let instance = Instance::new(&InstanceOptions::default())?;
    let devices: Vec<_> = instance.devices()?.into_iter().map(|(_, d)| d).collect();
    let mut ranked = devices.clone();
    rank_devices(&mut ranked);
    let selected = ranked.first().filter(|d| d.usable()).map(|d| d.index);
    let report = InfoReport { devices, selected };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report::render_info(&report));
    }
    Ok(true)
}

fn parse_mode(s: &str) -> Result<ComputeMode> {
    ComputeMode::parse(s).with_context(|| format!("--mode {s:?}: use accurate, fast, fast-bf16 or exact"))
}

fn parse_c_layout(s: &str) -> Result<Layout> {
    match s {
        "n" | "N" => Ok(Layout::RowMajor),
        "t" | "T" => Ok(Layout::ColMajor),
        _ => bail!("--c-layout {s:?}: use n (row-major) or t (column-major)"),
    }
}

/// Every scheme `tune` times for `config`: the subgroup-scope tuning candidates, then the
/// workgroup-scope ones where the device offers them.
fn tunable_schemes(ctx: &Context, config: &GPUSubgroupMatrixConfig) -> Vec<TileScheme> {
    let info = ctx.device_info();
    let cpu = info.kind == vk_sgmat::device::DeviceKind::Cpu;
    let sg = ctx.subgroup_size();
    let mut all = vk_sgmat::tiling::tuning_candidates(config, &info.limits, sg, cpu);
    all.extend(vk_sgmat::tiling::workgroup_tuning_candidates(config, info, sg));
    all
}

/// The tile scheme called `name` among those `tune` times for the types' config.
fn scheme_named(
    ctx: &Context,
    types: Types,
    mode: ComputeMode,
    shape: Option<(u32, u32, u32)>,
    name: &str,
) -> Result<vk_sgmat::tiling::TileScheme> {
    let options = GemmOptions {
        compute: mode,
        shape,
        ..Default::default()
    };
    let (_, config) = ctx.route_for([types.a, types.b, types.c], &options)?;
    let all = tunable_schemes(ctx, &config);
    all.iter().copied().find(|s| s.name() == name).with_context(|| {
        let names: Vec<String> = all.iter().take(8).map(|s| s.name()).collect();
        format!(
            "--scheme {name:?}: no such scheme for {config} on this device ({} schemes, e.g. {}; \
             `vk-sgmat tune` lists them all)",
            all.len(),
            names.join(", ")
        )
    })
}

pub(crate) fn parse_layout(s: &str) -> Result<(Layout, Layout)> {
    let l = |c| match c {
        'n' | 'N' => Ok(Layout::RowMajor),
        't' | 'T' => Ok(Layout::ColMajor),
        _ => bail!("--layout {s:?}: use two letters from n (row-major) and t (column-major), e.g. nt"),
    };
    let cs: Vec<char> = s.chars().collect();
    if cs.len() != 2 {
        bail!("--layout {s:?}: use two letters, e.g. nn, nt, tn, tt");
    }
    Ok((l(cs[0])?, l(cs[1])?))
}

pub(crate) fn parse_shapes(shapes: &[String]) -> Result<Vec<(usize, usize, usize)>> {
    shapes
        .iter()
        .map(|s| parse_shape(s).map(|(m, n, k)| (m as usize, n as usize, k as usize)))
        .collect()
}

fn parse_shape(s: &str) -> Result<(u32, u32, u32)> {
    let v: Vec<u32> = s
        .split('x')
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("--shape {s:?}: expected MxNxK"))?;
    match v[..] {
        [m, n, k] => Ok((m, n, k)),
        _ => bail!("--shape {s:?}: expected MxNxK, e.g. 16x16x16"),
    }
}

pub fn layout_name((a, b): (Layout, Layout)) -> String {
    format!("{}{}", a.letter(), b.letter())
}

/// The `rows x cols` row-major `data` stored column by column (equally: its transpose, row-major).
fn transpose_copy<T: Copy>(data: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(rows * cols);
    for j in 0..cols {
        out.extend((0..rows).map(|i| data[i * cols + j]));
    }
    out
}

/// Outputs checked in full up to this many elements; beyond, 256 sampled rows.
pub const FULL_CHECK: usize = 1 << 26;

fn gemm<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    (la, lb, lc): (Layout, Layout, Layout),
    options: &GemmOptions,
    repeat: usize,
) -> Result<GemmReport> {
    let seed = Rng::fresh_seed();
    let mut rng = Rng::new(seed);
    let plan = ctx.plan_gemm::<TA, TB, TC>(m, n, k, (la, lb), options)?;
    let key = plan.main_kernel();
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, la, 0);
    let (b, ldb) = random_matrix::<TB>(&mut rng, k, n, lb, 0);
    // With beta = 0, C starts poisoned (NaN, or 2^31-1 for integers) so unwritten elements fail.
    let poison = if TC::TYPE.is_float() { f64::NAN } else { 2147483647.0 };
    let c_in: Vec<TC> = if options.beta != 0.0 {
        random_vec(&mut rng, m * n)
    } else {
        vec![TC::from_f64(poison); m * n]
    };
    let am = MatRef::stored(&a, m, k, la, lda);
    let bm = MatRef::stored(&b, k, n, lb, ldb);
    // C's storage: row-major `c_in` as is, or its elements stored column by column.
    let c_view = |data: &[TC]| match lc {
        Layout::RowMajor => data.to_vec(),
        Layout::ColMajor => transpose_copy(data, m, n),
    };
    let c_store = c_view(&c_in);
    let c_ref = match lc {
        Layout::RowMajor => MatRef::new(&c_store, m, n),
        Layout::ColMajor => MatRef::col_major(&c_store, m, n),
    };

    let cut = ctx.host_pieces::<TA, TB, TC>((m, n, k), [la, lb, lc])?;
    let pieces = cut.len();
    // What runs: the pieces' plans (the whole problem's would bind windows no buffer has).
    let mut passes = plan.gemm_dispatches().count();
    if pieces > 1 {
        passes = 0;
        for p in &cut {
            let piece = ctx.plan_gemm::<TA, TB, TC>(p.rows.len(), p.cols.len(), p.k.len(), (la, lb), options)?;
            passes += piece.gemm_dispatches().count();
        }
    }
    let (c, first_call_ms, mut times) = if pieces > 1 {
        // An operand over the allocation limit cannot be a device matrix: the host call, which
        // runs in pieces that fit, timed once with its transfers.
        let mut c_store = c_store;
        let cm = match lc {
            Layout::RowMajor => MatMut::new(&mut c_store, m, n),
            Layout::ColMajor => MatMut::col_major(&mut c_store, m, n),
        };
        let t = Instant::now();
        ctx.gemm_with(am, bm, cm, options)?;
        let secs = t.elapsed().as_secs_f64();
        let c = match lc {
            Layout::RowMajor => c_store,
            Layout::ColMajor => transpose_copy(&c_store, n, m),
        };
        (c, secs * 1e3, vec![secs])
    } else {
        device_runs(ctx, (am, bm, c_ref), (m, n, lc), options, repeat)?
    };
    let rows = rows_to_check(m, n, FULL_CHECK, 256, &mut rng);
    let (expected, magnitude) = reference(&am, &bm, Some((&c_in, n)), options.alpha, options.beta, &rows);
    let input_u = input_roundoff(TA::TYPE, TB::TYPE, options.compute)?;
    let check = compare_rounded(&c, n, n, &rows, (&expected, &magnitude), k, input_u);
    let median = vk_sgmat::median(&mut times);
    let info = ctx.device_info();
    let g = key.scheme.geometry(&key.config);
    Ok(GemmReport {
        device: info.name.clone(),
        driver: format!("{} {}", info.driver_name, info.driver_info),
        m,
        n,
        k,
        types: Types {
            a: TA::TYPE,
            b: TB::TYPE,
            c: TC::TYPE,
        }
        .name(),
        layout: format!("{}{}{}", la.letter(), lb.letter(), lc.letter()),
        config: key.config.to_string(),
        scheme: key.scheme.name(),
        tile: format!("{}x{}x{}, {} invocations", g.bm, g.bn, g.bk, g.threads),
        passes,
        alpha: options.alpha,
        beta: options.beta,
        seed,
        rows_checked: rows.len(),
        check,
        runs: times.len(),
        pieces,
        median_ms: median * 1e3,
        tflops: 2.0 * (m * n * k) as f64 / median / 1e12,
        first_call_ms,
    })
}

/// Runs a GEMM on device-resident copies: once (pipelines created), downloaded (C row-major),
/// then after a warm-up `repeat` times, each call timed to completion. (C, first call in ms,
/// the timed calls in seconds.)
fn device_runs<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (am, bm, c_ref): (MatRef<'_, TA>, MatRef<'_, TB>, MatRef<'_, TC>),
    (m, n, lc): (usize, usize, Layout),
    options: &GemmOptions,
    repeat: usize,
) -> Result<(Vec<TC>, f64, Vec<f64>)> {
    // Device-resident operands: the timed loop measures the GEMM, not PCIe.
    let da = ctx.upload(am)?;
    let db = ctx.upload(bm)?;
    let mut dc = ctx.upload(c_ref)?;
    // The first call creates the pipelines (from the pipeline cache, if one is warm).
    let first = Instant::now();
    ctx.gemm_device(&da, &db, &mut dc, options)?;
    let first_call_ms = first.elapsed().as_secs_f64() * 1e3;
    // A column-major device matrix downloads as its transpose's row-major storage.
    let (dr, dcols) = match lc {
        Layout::RowMajor => (m, n),
        Layout::ColMajor => (n, m),
    };
    let mut stored = vec![TC::from_f64(0.0); m * n];
    ctx.download(&dc, MatMut::new(&mut stored, dr, dcols))?;
    let c = match lc {
        Layout::RowMajor => stored,
        Layout::ColMajor => transpose_copy(&stored, n, m),
    };
    // Warm up (GPU clocks rise under load), then time each call to completion.
    let warm = Instant::now();
    while warm.elapsed().as_secs_f64() < 0.5 {
        ctx.gemm_device(&da, &db, &mut dc, options)?;
    }
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let t = Instant::now();
        ctx.gemm_device(&da, &db, &mut dc, options)?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok((c, first_call_ms, times))
}

/// The element types `bench` runs: those asked for (`A:C` or `A,B:C`, comma-separated or
/// repeated), else every pair the device has configs for.
pub(crate) fn bench_types(ctx: &Context, asked: &[String]) -> Result<Vec<Types>> {
    if !asked.is_empty() {
        // "f16:f32,f16,f32:f32": a piece without ':' is the A of the next one.
        let mut out = Vec::new();
        let mut pending = String::new();
        for piece in asked.iter().flat_map(|t| t.split(',')) {
            if piece.contains(':') {
                let full = if pending.is_empty() {
                    piece.to_string()
                } else {
                    format!("{pending},{piece}")
                };
                out.push(Types::parse(&full)?);
                pending.clear();
            } else if pending.is_empty() {
                pending = piece.to_string();
            } else {
                bail!("--types: {pending},{piece} has no result type");
            }
        }
        if !pending.is_empty() {
            bail!("--types: {pending} has no result type (e.g. {pending}:f32)");
        }
        return Ok(out);
    }
    let mut all: Vec<Types> = ctx
        .configs()
        .iter()
        .map(|c| Types::pair(c.component_type, c.result_type))
        .collect();
    all.sort();
    all.dedup();
    Ok(all)
}

fn bench(
    ctx: &Context,
    (types, shapes): (&[String], &[String]),
    layouts: (Layout, Layout),
    compute: ComputeMode,
    reps: u32,
    (cublas, peers): (Option<&std::path::Path>, &[report::PeerRow]),
) -> Result<Vec<report::BenchRow>> {
    let cpu = ctx.device_info().kind == vk_sgmat::device::DeviceKind::Cpu;
    let shapes: Vec<(usize, usize, usize)> = if shapes.is_empty() {
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
    for &t in &all_types {
        let options = GemmOptions {
            compute,
            ..Default::default()
        };
        let (_, config) = ctx.route_for([t.a, t.b, t.c], &options)?;
        let (groups, iters) = if cpu { (4, 64) } else { (2048, 4096) };
        // The exact kernel has no matrix-unit peak to compare with (0: none).
        let peak = if config == vk_sgmat::kernel::SIMT_CONFIG {
            0.0
        } else {
            ctx.peak(&config, groups, iters, 3)?.flops / 1e12
        };
        let types = t.label(compute);
        for &shape in &shapes {
            progress.start(&format!("{types} {}x{}x{}", shape.0, shape.1, shape.2));
            let median = with_types!(t, |TA, TB, TC| bench_point::<TA, TB, TC>(
                ctx, shape, layouts, compute, reps
            )?);
            let tflops = 2.0 * (shape.0 * shape.1 * shape.2) as f64 / median / 1e12;
            progress.done(&format!(
                "{types} {}x{}x{}: {tflops:.2} TFLOP/s",
                shape.0, shape.1, shape.2
            ));
            let cublas = report::cublas_for(&reference, &types, shape);
            let types = types.clone();
            rows.push(report::BenchRow {
                peers: report::peers_for(peers, &types, shape, tflops),
                layout: format!("{}{}", layouts.0.letter(), layouts.1.letter()),
                types,
                config: config.to_string(),
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

/// Median GPU seconds of one GEMM on device-resident random data, after a warm-up long enough for
/// clocks to rise.
fn bench_point<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    (al, bl): (Layout, Layout),
    compute: ComputeMode,
    reps: u32,
) -> Result<f64> {
    let mut rng = Rng::new(Rng::fresh_seed());
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, al, 0);
    let (b, ldb) = random_matrix::<TB>(&mut rng, k, n, bl, 0);
    let da = ctx.upload(MatRef::stored(&a, m, k, al, lda))?;
    let db = ctx.upload(MatRef::stored(&b, k, n, bl, ldb))?;
    let mut dc = ctx.zeros::<TC>(m, n)?;
    let options = GemmOptions {
        compute,
        ..Default::default()
    };
    // At least a second, then until steady (fresh pipelines run slowly at first on NVIDIA).
    let warm = (std::time::Duration::from_secs(1), std::time::Duration::from_secs(10));
    ctx.warm_up(&da, &db, &mut dc, &options, warm)?;
    Ok(vk_sgmat::median(
        &mut ctx.time_gemm_device(&da, &db, &mut dc, &options, reps)?,
    ))
}

/// Times every candidate scheme of every config for the types, each checked on 16 sampled rows.
fn tune<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    layouts: (Layout, Layout),
    reps: u32,
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
    let configs: Vec<_> = ctx
        .configs()
        .into_iter()
        .filter(|c| c.component_type == TA::TYPE && c.result_type == TC::TYPE)
        .filter(|c| only.is_none_or(|s| s == (c.m, c.n, c.k)))
        .collect();
    let per_config: Vec<(GPUSubgroupMatrixConfig, Vec<TileScheme>)> = configs
        .into_iter()
        .map(|config| {
            let schemes: Vec<_> = tunable_schemes(ctx, &config)
                .into_iter()
                .filter(|s| filter.is_empty() || filter.iter().any(|f| s.name().contains(f.as_str())))
                .collect();
            (config, schemes)
        })
        .collect();
    let mut progress = crate::progress::Progress::new(per_config.iter().map(|(_, s)| s.len()).sum());
    for (config, schemes) in per_config {
        for scheme in &schemes {
            progress.start(&format!("{config} {}", scheme.name()));
            let options = GemmOptions {
                shape: Some((config.m, config.n, config.k)),
                scheme: Some(*scheme),
                ..Default::default()
            };
            ctx.gemm_device(&da, &db, &mut dc, &options)?;
            let mut c = vec![TC::from_f64(0.0); m * n];
            ctx.download(&dc, MatMut::new(&mut c, m, n))?;
            let check = compare(&c, n, n, &check_rows, &expected, &magnitude, k);
            let g = scheme.geometry(&config);
            let key = ctx.plan_gemm::<TA, TB, TC>(m, n, k, layouts, &options)?.main_kernel();
            let mut probe_list = vec![Probe::Full];
            if probes {
                probe_list = Probe::PARTS.to_vec();
                // Sizes above the device's limit are refused by `time_probe` and skipped below.
                probe_list.extend(
                    [32, 40, 48]
                        .map(|kib| kib * 1024)
                        .into_iter()
                        .filter(|&b| b > g.shared_bytes)
                        .map(Probe::SharedAtLeast),
                );
            }
            let warm = (std::time::Duration::from_millis(200), std::time::Duration::from_secs(5));
            ctx.warm_up(&da, &db, &mut dc, &options, warm)?;
            let mut group = Vec::new();
            for probe in probe_list {
                let mut times = match ctx.time_probe(&da, &db, &mut dc, &options, probe, reps) {
                    Ok(t) => t,
                    // A probe that does not apply to this problem (unchecked loads on partial
                    // tiles) is skipped.
                    Err(vk_sgmat::Error::Unsupported(_)) if probe != Probe::Full => continue,
                    Err(e) => return Err(e.into()),
                };
                let median = vk_sgmat::median(&mut times);
                let stats = ctx.kernel_statistics(&KernelKey { probe, ..key })?;
                let registers = stats
                    .iter()
                    .find(|(name, _)| name.to_ascii_lowercase().contains("register"))
                    .map(|(_, v)| v.clone());
                group.push(report::TuneRow {
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
                    // Probes compute wrong results by design; only the real kernel is checked.
                    passed: probe != Probe::Full || check.passed,
                });
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

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;
    use vk_sgmat::ComponentType;

    /// `gemm --scheme NAME` runs the scheme `tune` lists under that name, and an unknown name is
    /// an error naming the config and some valid schemes.
    #[test]
    fn gemm_runs_a_scheme_named_like_tune_lists_it() {
        let ctx =
            Context::new().expect("a Vulkan device with cooperative matrices (the cargo runner provides lavapipe)");
        let pair = (ComponentType::F16, ComponentType::F32);
        let config = ctx.choose_config(pair.0, pair.1, None).unwrap();
        let info = ctx.device_info();
        let cpu = info.kind == vk_sgmat::device::DeviceKind::Cpu;
        let listed = vk_sgmat::tiling::tuning_candidates(&config, &info.limits, ctx.subgroup_size(), cpu);
        // Not the default for this shape, so the test sees the option take effect.
        let default = ctx.choose_scheme(&config, 17, 31).unwrap();
        let want = *listed.iter().find(|s| **s != default).expect("a second scheme");
        let types = Types::pair(pair.0, pair.1);
        let scheme = scheme_named(&ctx, types, ComputeMode::default(), None, &want.name()).unwrap();
        assert_eq!(scheme, want);
        let options = GemmOptions {
            scheme: Some(scheme),
            ..Default::default()
        };
        let row_major = (Layout::RowMajor, Layout::RowMajor, Layout::RowMajor);
        let r = gemm::<f16, f16, f32>(&ctx, (17, 31, 9), row_major, &options, 1).unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.scheme, want.name());
        // f16 x f32 with a column-major C, checked against the reference.
        let mixed = (Layout::ColMajor, Layout::RowMajor, Layout::ColMajor);
        let r = gemm::<f16, f32, f32>(&ctx, (23, 9, 41), mixed, &GemmOptions::default(), 1).unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!((r.types.as_str(), r.layout.as_str()), ("f16,f32:f32", "tnt"));

        let e = scheme_named(&ctx, types, ComputeMode::default(), None, "sg9x9_nope")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sg9x9_nope") && e.contains(&config.to_string()) && e.contains(&listed[0].name()),
            "{e}"
        );
    }
}
