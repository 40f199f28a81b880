//! The commands. Each returns whether everything it checked was correct.

use crate::bench_cmd::{bench, bench_types, tune};
use crate::cli::{Cli, Command, DeviceArgs};
use crate::gemm_cmd::gemm;
use crate::report::{self, InfoReport};
use crate::types::{with_types, Types};
use anyhow::{bail, Context as _, Result};
use vk_sgmat::device::{rank_devices, Instance, InstanceOptions};
use vk_sgmat::plan::DispatchLimits;
use vk_sgmat::tiling::TileScheme;
use vk_sgmat::{
    ComputeMode, Context, ContextOptions, DeviceSelector, GPUSubgroupMatrixConfig, GemmOptions, Layout,
    PipelineCacheFile,
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
            convert,
            relayout,
            specialize,
            gemv,
            split_k,
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
                convert_first: parse_convert(&convert)?,
                relayout: parse_on_off("--relayout", &relayout)?,
                specialize: parse_on_off("--specialize", &specialize)?,
                matrix_vector: parse_on_off("--matrix-vector", &gemv.matrix_vector)?,
                gemv_cols: gemv.gemv_cols,
                gemv_unroll: gemv.gemv_unroll,
                split_k: parse_split_k(&split_k)?,
                ..Default::default()
            };
            let single = devices.is_none() && scheme.is_none() && c_layout == Layout::RowMajor;
            let run = (repeat.max(1) as u32, json);
            let batchable = (devices.is_none() && c_layout == Layout::RowMajor, scheme.as_deref());
            if let Some(passed) = crate::batched::gemm_args(
                &batching,
                &fused,
                &dev,
                types,
                (m, n, k),
                layouts,
                batchable,
                &options,
                run,
            )? {
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
                    (dev.validation, dev.copy_queues),
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
            convert,
            relayout,
            specialize,
            gemv,
            split_k,
            scheme,
            shapes,
            reps,
            warm,
            stream,
            first_runs,
            model,
            c_layout,
            cublas,
            peer,
            layout,
            plot,
            devices,
            split,
            trace,
            batching,
            fused,
            json,
            dev,
        } => {
            let compute = parse_mode(&mode)?;
            let run = (reps, json);
            let c_layout = parse_c_layout(&c_layout)?;
            let single = batching.batch.is_none()
                && batching.groups.is_empty()
                && fused.epilogue.is_none()
                && fused.out.is_none()
                && devices.is_none();
            // Only the single-GEMM sweep takes these; the others would silently ignore them.
            if !single && (c_layout != Layout::RowMajor || stream || warm != crate::cli::BENCH_WARM_S) {
                bail!("--c-layout t, --stream and --warm time single GEMMs on one device: not with --batch, --groups, --epilogue, --out or --devices");
            }
            if let Some(passed) =
                crate::batched::bench_args((&batching, &fused), &dev, &types, &shapes, compute, &layout, run)?
            {
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
                    (dev.validation, dev.copy_queues),
                    &types,
                    shapes,
                    kind,
                    (reps.max(1) as usize, json, trace),
                );
            }
            let ctx = context_with(&dev, false)?;
            let model = model.as_deref().map(crate::models::model).transpose()?;
            // A model's weights are stored N x K, as nn.Linear holds them.
            let layouts = match model {
                Some(_) => parse_layout("nt")?,
                None => parse_layout(&layout)?,
            };
            let shapes: Vec<String> = match model {
                Some(m) => m.shapes().iter().map(|(a, b, c)| format!("{a}x{b}x{c}")).collect(),
                None => shapes,
            };
            let layouts = (layouts.0, layouts.1, c_layout);
            let timing = crate::bench_cmd::Timing {
                reps,
                steps: trace,
                warm: seconds("--warm", warm)?,
                stream,
            };
            let mut peers = Vec::new();
            for p in &peer {
                let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                peers.extend(report::read_peers(&text)?);
            }
            let forced = GemmOptions {
                compute: parse_mode(&mode)?,
                convert_first: parse_convert(&convert)?,
                relayout: parse_on_off("--relayout", &relayout)?,
                specialize: parse_on_off("--specialize", &specialize)?,
                matrix_vector: parse_on_off("--matrix-vector", &gemv.matrix_vector)?,
                gemv_cols: gemv.gemv_cols,
                gemv_unroll: gemv.gemv_unroll,
                split_k: parse_split_k(&split_k)?,
                ..Default::default()
            };
            if let Some(s) = first_runs {
                let seconds = seconds("--first-runs", s)?;
                for t in crate::bench_cmd::bench_types(&ctx, &types)? {
                    for shape in parse_shapes(&shapes)? {
                        let r = with_types!(t, |TA, TB, TC| crate::first_runs::first_runs::<TA, TB, TC>(
                            &ctx,
                            shape,
                            (layouts.0, layouts.1),
                            &forced,
                            seconds
                        )?);
                        println!("{} {}", t.label(forced.compute), r.line());
                    }
                }
                return finish(&ctx, true);
            }
            let rows = bench(
                &ctx,
                (&types, &shapes),
                layouts,
                &forced,
                scheme.as_deref(),
                &timing,
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
                print!("{}", report::render_bench(&device, stream, &rows));
            }
            if let Some(m) = model {
                print!("{}", m.summary(&rows));
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
            warm,
            relayout,
            probe,
            json,
            dev,
        } => {
            let warm = seconds("--warm", warm)?;
            let relayout = parse_on_off("--relayout", &relayout)?;
            let ctx = context(&dev)?;
            let types = Types::parse(&types)?;
            let layouts = parse_layout(&layout)?;
            let only = shape.as_deref().map(parse_shape).transpose()?;
            let rows = with_types!(types, |TA, TB, TC| tune::<TA, TB, TC>(
                &ctx,
                (m, n, k),
                layouts,
                (reps, warm, relayout),
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
        pipeline_cache: match (&dev.pipeline_cache, dev.no_pipeline_cache) {
            (_, true) => PipelineCacheFile::Off,
            (Some(path), _) => PipelineCacheFile::File(path.clone()),
            (None, false) => PipelineCacheFile::UserCache,
        },
        autotune: dev.autotune.clone(),
        copy_queues: dev.copy_queues,
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
    let device_groups = instance.device_groups()?;
    let report = InfoReport {
        devices,
        selected,
        device_groups,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report::render_info(&report));
    }
    Ok(true)
}

/// `--split-k`: None (auto) or a count of K slices (the library checks its range).
fn parse_split_k(s: &str) -> Result<Option<u32>> {
    match s {
        "auto" => Ok(None),
        _ => match s.parse() {
            Ok(n) => Ok(Some(n)),
            Err(_) => bail!("--split-k {s:?}: use auto or a number of K slices (1 = off)"),
        },
    }
}

/// A flag of auto, on or off (`--relayout`, `--specialize`): None, Some(true), Some(false).
fn parse_on_off(flag: &str, s: &str) -> Result<Option<bool>> {
    match s {
        "auto" => Ok(None),
        "on" => Ok(Some(true)),
        "off" => Ok(Some(false)),
        _ => bail!("{flag} {s:?}: use auto, on or off"),
    }
}

/// `--convert`: None (auto), Some(true) (first), Some(false) (as loaded).
fn parse_convert(s: &str) -> Result<Option<bool>> {
    match s {
        "auto" => Ok(None),
        "first" => Ok(Some(true)),
        "load" => Ok(Some(false)),
        _ => bail!("--convert {s:?}: use auto, first or load"),
    }
}

fn parse_mode(s: &str) -> Result<ComputeMode> {
    ComputeMode::parse(s).with_context(|| format!("--mode {s:?}: use accurate, fast, fast-bf16 or exact"))
}

/// A duration given in seconds on the command line: finite, not negative, at most an hour.
fn seconds(flag: &str, s: f64) -> Result<std::time::Duration> {
    if !(0.0..=3600.0).contains(&s) {
        bail!("{flag} {s}: give seconds from 0 to 3600");
    }
    Ok(std::time::Duration::from_secs_f64(s))
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
pub(crate) fn tunable_schemes(ctx: &Context, config: &GPUSubgroupMatrixConfig) -> Vec<TileScheme> {
    let info = ctx.device_info();
    let cpu = info.kind == vk_sgmat::device::DeviceKind::Cpu;
    let sg = ctx.subgroup_size();
    let mut all = vk_sgmat::tiling::tuning_candidates(config, &info.limits, sg, cpu);
    all.extend(vk_sgmat::tiling::workgroup_tuning_candidates(config, info, sg));
    all
}

/// The tile scheme called `name` among those `tune` times for the types' config.
pub(crate) fn scheme_named(
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
