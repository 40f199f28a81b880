//! The commands. Each returns whether everything it checked was correct.

use crate::cli::{Cli, Command, DeviceArgs};
use crate::report::{self, CheckRow, GemmReport, InfoReport};
use anyhow::{bail, Context as _, Result};
use half::{bf16, f16};
use std::time::Instant;
use vk_sgmat::device::{rank_devices, Instance, InstanceOptions};
use vk_sgmat::kernel::KernelKey;
use vk_sgmat::tiling::{KernelScope, TileScheme};
use vk_sgmat::verify::{compare, random_matrix, random_vec, reference, rows_to_check, run_random_gemm, Rng};
use vk_sgmat::{
    ComponentType, Context, ContextOptions, DeviceSelector, Element, GPUSubgroupMatrixConfig, GemmOptions, Layout,
    MatMut, MatRef, Probe,
};

/// Calls `$body` with type aliases `$ta`, `$tc` bound to the Rust types of a (component, result)
/// pair, or fails with the list of supported pairs.
macro_rules! with_types {
    ($pair:expr, |$ta:ident, $tc:ident| $body:expr) => {{
        use ComponentType::*;
        match $pair {
            (F16, F32) => { type $ta = f16; type $tc = f32; $body }
            (F16, F16) => { type $ta = f16; type $tc = f16; $body }
            (Bf16, F32) => { type $ta = bf16; type $tc = f32; $body }
            (F32, F32) => { type $ta = f32; type $tc = f32; $body }
            (I8, I32) => { type $ta = i8; type $tc = i32; $body }
            (U8, U32) => { type $ta = u8; type $tc = u32; $body }
            (I8, U32) => { type $ta = i8; type $tc = u32; $body }
            (U8, I32) => { type $ta = u8; type $tc = i32; $body }
            (a, r) => bail!("element types {a}:{r} are not supported; use f16:f32, f16:f16, bf16:f32, f32:f32, i8:i32 or u8:u32"),
        }
    }};
}

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
            layout,
            shape,
            scheme,
            alpha,
            beta,
            repeat,
            json,
            dev,
        } => {
            let ctx = context_with(&dev, false)?;
            let pair = parse_types(&types)?;
            let layouts = parse_layout(&layout)?;
            let shape = shape.as_deref().map(parse_shape).transpose()?;
            let scheme = scheme.map(|name| scheme_named(&ctx, pair, shape, &name)).transpose()?;
            let options = GemmOptions {
                alpha,
                beta,
                shape,
                scheme,
                ..Default::default()
            };
            let report = with_types!(pair, |TA, TC| gemm::<TA, TC>(
                &ctx,
                (m, n, k),
                layouts,
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
            shapes,
            reps,
            cublas,
            peer,
            layout,
            plot,
            json,
            dev,
        } => {
            let ctx = context_with(&dev, false)?;
            let layouts = parse_layout(&layout)?;
            let mut peers = Vec::new();
            for p in &peer {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                peers.extend(report::read_peers(&text)?);
            }
            let rows = bench(&ctx, (&types, &shapes), layouts, reps, (cublas.as_deref(), &peers))?;
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
            let pair = parse_types(&types)?;
            let layouts = parse_layout(&layout)?;
            let only = shape.as_deref().map(parse_shape).transpose()?;
            let rows = with_types!(pair, |TA, TC| tune::<TA, TC>(
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
            let pairs = bench_pairs(&ctx, &types)?;
            let rows = check(&ctx, quick, &pairs)?;
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
fn context_with(dev: &DeviceArgs, poison: bool) -> Result<Context> {
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
    Ok(Context::with_options(options)?)
}

/// With validation on, any message makes the command fail.
fn finish(ctx: &Context, passed: bool) -> Result<bool> {
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

fn parse_types(s: &str) -> Result<(ComponentType, ComponentType)> {
    let (a, r) = s
        .split_once(':')
        .with_context(|| format!("--types {s:?}: expected INPUT:RESULT, e.g. f16:f32"))?;
    let t = |x: &str| ComponentType::parse(x).with_context(|| format!("unknown element type {x:?}"));
    Ok((t(a)?, t(r)?))
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
    (a, r): (ComponentType, ComponentType),
    shape: Option<(u32, u32, u32)>,
    name: &str,
) -> Result<vk_sgmat::tiling::TileScheme> {
    let config = ctx.choose_config(a, r, shape)?;
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

fn parse_layout(s: &str) -> Result<(Layout, Layout)> {
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

fn layout_name((a, b): (Layout, Layout)) -> String {
    format!("{}{}", a.letter(), b.letter())
}

/// Outputs checked in full up to this many elements; beyond, 256 sampled rows.
const FULL_CHECK: usize = 1 << 26;

fn gemm<TA: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    layouts: (Layout, Layout),
    options: &GemmOptions,
    repeat: usize,
) -> Result<GemmReport> {
    let seed = Rng::fresh_seed();
    let mut rng = Rng::new(seed);
    let plan = ctx.plan_gemm::<TA, TC>(m, n, k, layouts, options)?;
    let key = plan.main_kernel();
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, layouts.0, 0);
    let (b, ldb) = random_matrix::<TA>(&mut rng, k, n, layouts.1, 0);
    // With beta = 0, C starts poisoned (NaN, or 2^31-1 for integers) so unwritten elements fail.
    let poison = if TC::TYPE.is_float() { f64::NAN } else { 2147483647.0 };
    let c_in: Vec<TC> = if options.beta != 0.0 {
        random_vec(&mut rng, m * n)
    } else {
        vec![TC::from_f64(poison); m * n]
    };
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

    // Device-resident operands: the timed loop measures the GEMM, not PCIe.
    let da = ctx.upload(am)?;
    let db = ctx.upload(bm)?;
    let mut dc = ctx.upload(MatRef::new(&c_in, m, n))?;
    // The first call creates the pipelines (from the pipeline cache, if one is warm).
    let first = Instant::now();
    ctx.gemm_device(&da, &db, &mut dc, options)?;
    let first_call_ms = first.elapsed().as_secs_f64() * 1e3;
    let mut c = vec![TC::from_f64(0.0); m * n];
    ctx.download(&dc, MatMut::new(&mut c, m, n))?;
    let rows = rows_to_check(m, n, FULL_CHECK, 256, &mut rng);
    let (expected, magnitude) = reference(&am, &bm, Some((&c_in, n)), options.alpha, options.beta, &rows);
    let check = compare(&c, n, n, &rows, &expected, &magnitude, k);

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
    let median = vk_sgmat::median(&mut times);
    let info = ctx.device_info();
    let g = key.scheme.geometry(&key.config);
    Ok(GemmReport {
        device: info.name.clone(),
        driver: format!("{} {}", info.driver_name, info.driver_info),
        m,
        n,
        k,
        types: format!("{}->{}", TA::TYPE, TC::TYPE),
        layout: layout_name(layouts),
        config: key.config.to_string(),
        scheme: key.scheme.name(),
        tile: format!("{}x{}x{}, {} invocations", g.bm, g.bn, g.bk, g.threads),
        passes: plan.gemm_dispatches().count(),
        alpha: options.alpha,
        beta: options.beta,
        seed,
        rows_checked: rows.len(),
        check,
        runs: repeat,
        median_ms: median * 1e3,
        tflops: 2.0 * (m * n * k) as f64 / median / 1e12,
        first_call_ms,
    })
}

/// The type pairs `bench` runs: those asked for, else every pair the device has configs for.
fn bench_pairs(ctx: &Context, types: &[String]) -> Result<Vec<(ComponentType, ComponentType)>> {
    if !types.is_empty() {
        return types.iter().map(|t| parse_types(t)).collect();
    }
    let mut pairs: Vec<_> = ctx
        .configs()
        .iter()
        .map(|c| (c.component_type, c.result_type))
        .collect();
    pairs.dedup();
    pairs.sort();
    pairs.dedup();
    Ok(pairs)
}

fn bench(
    ctx: &Context,
    (types, shapes): (&[String], &[String]),
    layouts: (Layout, Layout),
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
        shapes
            .iter()
            .map(|s| parse_shape(s).map(|(m, n, k)| (m as usize, n as usize, k as usize)))
            .collect::<Result<_>>()?
    };
    let reference = match cublas {
        Some(p) => {
            report::read_cublas(&std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?)?
        }
        None => Vec::new(),
    };
    let pairs = bench_pairs(ctx, types)?;
    let mut progress = crate::progress::Progress::new(pairs.len() * shapes.len());
    let mut rows = Vec::new();
    for &pair in &pairs {
        let config = ctx.choose_config(pair.0, pair.1, None)?;
        let (groups, iters) = if cpu { (4, 64) } else { (2048, 4096) };
        let peak = ctx.peak(&config, groups, iters, 3)?.flops / 1e12;
        for &shape in &shapes {
            progress.start(&format!("{}:{} {}x{}x{}", pair.0, pair.1, shape.0, shape.1, shape.2));
            let median = with_types!(pair, |TA, TC| bench_point::<TA, TC>(ctx, shape, layouts, reps)?);
            let tflops = 2.0 * (shape.0 * shape.1 * shape.2) as f64 / median / 1e12;
            let types = format!("{}:{}", pair.0, pair.1);
            progress.done(&format!(
                "{types} {}x{}x{}: {tflops:.2} TFLOP/s",
                shape.0, shape.1, shape.2
            ));
            let cublas = report::cublas_for(&reference, &types, shape);
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
fn bench_point<TA: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    (al, bl): (Layout, Layout),
    reps: u32,
) -> Result<f64> {
    let mut rng = Rng::new(Rng::fresh_seed());
    let (a, lda) = random_matrix::<TA>(&mut rng, m, k, al, 0);
    let (b, ldb) = random_matrix::<TA>(&mut rng, k, n, bl, 0);
    let view = |data, rows, cols, layout, ld| MatRef {
        data,
        rows,
        cols,
        layout,
        ld,
    };
    let da = ctx.upload(view(&a, m, k, al, lda))?;
    let db = ctx.upload(view(&b, k, n, bl, ldb))?;
    let mut dc = ctx.zeros::<TC>(m, n)?;
    let options = GemmOptions::default();
    // At least a second, then until steady (fresh pipelines run slowly at first on NVIDIA).
    let warm = (std::time::Duration::from_secs(1), std::time::Duration::from_secs(10));
    ctx.warm_up(&da, &db, &mut dc, &options, warm)?;
    Ok(vk_sgmat::median(
        &mut ctx.time_gemm_device(&da, &db, &mut dc, &options, reps)?,
    ))
}

/// Times every candidate scheme of every config for the types, each checked on 16 sampled rows.
fn tune<TA: Element, TC: Element>(
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
    let (b, ldb) = random_matrix::<TA>(&mut rng, k, n, layouts.1, 0);
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
    let (expected, magnitude) = reference::<TA, TC>(&am, &bm, None, 1.0, 0.0, &check_rows);
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
            let key = ctx.plan_gemm::<TA, TC>(m, n, k, layouts, &options)?.main_kernel();
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

fn check(ctx: &Context, quick: bool, pairs: &[(ComponentType, ComponentType)]) -> Result<Vec<CheckRow>> {
    let cpu = ctx.device_info().kind == vk_sgmat::device::DeviceKind::Cpu;
    let mut shapes = vec![
        (1, 1, 1),
        (7, 5, 3),
        (17, 31, 9),
        (64, 64, 64),
        (127, 129, 65),
        (300, 5, 700),
        (1, 1000, 3),
    ];
    if !quick {
        shapes.extend([(257, 255, 131), (513, 257, 1031)]);
        if !cpu {
            shapes.extend([(1000, 1000, 1000), (2049, 1023, 517)]);
        }
    }
    let layouts = [
        (Layout::RowMajor, Layout::RowMajor),
        (Layout::RowMajor, Layout::ColMajor),
        (Layout::ColMajor, Layout::RowMajor),
        (Layout::ColMajor, Layout::ColMajor),
    ];
    let mut rng = Rng::new(Rng::fresh_seed());
    let mut rows = Vec::new();
    // Every config with its default schemes; then, once per type pair, the workgroup-scope
    // schemes taken by default (the shapes here are mostly too small to pick them) and the
    // largest and the smallest workgroup-scope scheme, where the device offers them.
    // Defaults first: a driver slow to compile some workgroup-scope pipelines (seconds each on
    // the H200) must not keep a time-limited run from checking them.
    let mut runs: Vec<(GPUSubgroupMatrixConfig, Option<TileScheme>)> = Vec::new();
    let mut extras = Vec::new();
    let mut pairs_seen = Vec::new();
    for config in ctx.configs() {
        let pair = (config.component_type, config.result_type);
        if !pairs.contains(&pair) {
            continue;
        }
        runs.push((config, None));
        if pairs_seen.contains(&pair) {
            continue;
        }
        pairs_seen.push(pair);
        let wg: Vec<TileScheme> = ctx
            .schemes(&config)
            .into_iter()
            .filter(|s| s.scope() == KernelScope::Workgroup)
            .collect();
        let info = ctx.device_info();
        let preferred = vk_sgmat::tiling::preferred_workgroup_schemes(&config, info, ctx.subgroup_size());
        for s in preferred.iter().chain([wg.first(), wg.last()].into_iter().flatten()) {
            if !extras.contains(&(config, Some(*s))) {
                extras.push((config, Some(*s)));
            }
        }
    }
    runs.extend(extras);
    let cases: usize = runs
        .iter()
        // Two (alpha, beta) pairs per case, as below.
        .map(|(_, s)| if s.is_some() { shapes.len().min(9) } else { shapes.len() } * layouts.len() * 2)
        .sum();
    let mut progress = crate::progress::Progress::new(cases);
    for (config, scheme) in runs {
        let pair = (config.component_type, config.result_type);
        let name = match scheme {
            None => config.to_string(),
            Some(s) => format!("{config} [{}]", s.name()),
        };
        let scalars: &[(f64, f64)] = match config.result_type {
            ComponentType::U32 => &[(1.0, 0.0), (2.0, 1.0)],
            t if t.is_float() => &[(1.0, 0.0), (0.5, -1.0)],
            _ => &[(1.0, 0.0), (-2.0, 3.0)],
        };
        // The extra workgroup-scope runs take the shapes up to 513x257x1031: the larger ones
        // already run every config's default scheme.
        let shapes = if scheme.is_some() {
            &shapes[..shapes.len().min(9)]
        } else {
            &shapes[..]
        };
        for &shape in shapes {
            for (li, &l) in layouts.iter().enumerate() {
                for &(alpha, beta) in scalars {
                    let options = GemmOptions {
                        alpha,
                        beta,
                        shape: Some((config.m, config.n, config.k)),
                        scheme,
                        ..Default::default()
                    };
                    // Padded leading dimensions on every other layout.
                    let extra_ld = li % 2 * 3;
                    let res = with_types!(pair, |TA, TC| run_random_gemm::<TA, TC>(
                        ctx, &mut rng, shape, l, extra_ld, &options, FULL_CHECK
                    ));
                    let row = |check: Option<vk_sgmat::verify::Check>, error: Option<String>| CheckRow {
                        config: name.clone(),
                        shape,
                        layout: layout_name(l),
                        alpha,
                        beta,
                        rel_error: check.as_ref().map_or(f64::NAN, |c| c.rel_error),
                        tolerance: check.as_ref().map_or(0.0, |c| c.tolerance),
                        mismatches: check.as_ref().map_or(0, |c| c.mismatches),
                        passed: check.as_ref().is_some_and(|c| c.passed),
                        error,
                    };
                    let r = match res {
                        Ok(c) => row(Some(c), None),
                        Err(e) => row(None, Some(e.to_string())),
                    };
                    // Progress, one line per case, so a long run shows where it is.
                    progress.done(&format!(
                        "{} {}x{}x{} {} {}/{}: {}",
                        r.config,
                        shape.0,
                        shape.1,
                        shape.2,
                        r.layout,
                        alpha,
                        beta,
                        if r.passed { "ok" } else { "FAIL" }
                    ));
                    rows.push(r);
                }
            }
        }
    }
    progress.finish();
    if rows.is_empty() {
        bail!("the device offers no configs");
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let scheme = scheme_named(&ctx, pair, None, &want.name()).unwrap();
        assert_eq!(scheme, want);
        let options = GemmOptions {
            scheme: Some(scheme),
            ..Default::default()
        };
        let r = gemm::<f16, f32>(&ctx, (17, 31, 9), (Layout::RowMajor, Layout::RowMajor), &options, 1).unwrap();
        assert!(r.check.passed, "{:?}", r.check);
        assert_eq!(r.scheme, want.name());

        let e = scheme_named(&ctx, pair, None, "sg9x9_nope").unwrap_err().to_string();
        assert!(
            e.contains("sg9x9_nope") && e.contains(&config.to_string()) && e.contains(&listed[0].name()),
            "{e}"
        );
    }
}
