//! The dispatch over the commands, and each command's entry. Each returns whether everything
//! it checked was correct.

use crate::args::{
    bench_types, context, context_with, finish, parse_c_layout, parse_layout, parse_on_off, parse_shape, parse_shapes,
    path_options, print_report, scheme_named, seconds,
};
use crate::bench_cmd::{bench, tune};
use crate::cli::{BenchArgs, CheckArgs, Cli, Command, GemmArgs, PeakArgs, RuntimeArgs, TuneArgs};
use crate::gemm_cmd::gemm;
use crate::report::{self, InfoReport};
use crate::types::{with_types, Types};
use anyhow::{bail, Context as _, Result};
use vk_sgmat::device::{rank_devices, Instance, InstanceOptions};
use vk_sgmat::{GemmOptions, Layout};

pub fn run(cli: Cli) -> Result<bool> {
    crate::progress::set_plain(cli.command.json());
    match cli.command {
        Command::Info(args) => info(args.json),
        Command::Gemm(args) => gemm_command(args),
        Command::Bench(args) => bench_command(args),
        Command::Tune(args) => tune_command(args),
        Command::Peak(args) => peak(args),
        Command::Runtime(args) => runtime(args),
        Command::Check(args) => check(args),
    }
}

/// `vk-sgmat gemm`: one GEMM (batched, grouped, fused or over several devices as asked), checked and timed.
fn gemm_command(args: GemmArgs) -> Result<bool> {
    let types = Types::parse(&args.types)?;
    if let Some(q) = &args.weights {
        return quantized_gemm_command(&args, vk_sgmat::quant::QuantType::parse(q)?, types);
    }
    let (m, n, k) = (args.m, args.n, args.k);
    let layouts = parse_layout(&args.layout)?;
    let c_layout = parse_c_layout(&args.c_layout)?;
    let shape = args.shape.as_deref().map(parse_shape).transpose()?;
    let options = GemmOptions {
        alpha: args.alpha,
        beta: args.beta,
        shape,
        ..path_options(&args.path)?
    };
    let (devices, scheme, fused) = (&args.devices, args.scheme.as_deref(), &args.fused);
    let single = devices.is_none() && scheme.is_none() && c_layout == Layout::RowMajor;
    let run = (args.repeat.max(1) as u32, args.json);
    let batchable = (devices.is_none() && c_layout == Layout::RowMajor, scheme);
    if let Some(passed) = crate::batched::gemm_args(
        &args.batching,
        fused,
        &args.dev,
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
    if let Some(passed) = crate::fused::gemm_args(fused, &args.dev, types, (m, n, k), layouts, &options, run)? {
        return Ok(passed);
    }
    if let Some(devices) = devices {
        if scheme.is_some() || c_layout != Layout::RowMajor {
            bail!("--devices takes neither --scheme (each device picks its own) nor --c-layout t");
        }
        let kind = crate::multi::parse_split(&args.split)?;
        return crate::multi::gemm_command(
            devices,
            (args.dev.validation, args.dev.copy_queues),
            types,
            (m, n, k),
            layouts,
            &options,
            kind,
            (args.repeat.max(1), args.json),
        );
    }
    one_device_gemm(&args, (types, (layouts.0, layouts.1, c_layout)), options)
}

/// `gemm --weights`: the GEMM (or the groups of experts) on weights quantized to `q`, checked.
fn quantized_gemm_command(args: &GemmArgs, q: vk_sgmat::quant::QuantType, types: Types) -> Result<bool> {
    let batching = &args.batching;
    let on_device = batching.counts_on_device;
    let groups = (!batching.groups.is_empty()).then_some((batching.groups.as_slice(), on_device));
    let sum = groups.map_or(args.m, |(g, _)| g.iter().sum::<usize>());
    if batching.batch.is_some() || (on_device && groups.is_none()) || sum != args.m {
        bail!("--weights takes --groups (the groups' rows summing to M) and --counts-on-device with them, not --batch");
    }
    let ctx = context_with(&args.dev, false)?;
    let options = GemmOptions {
        alpha: args.alpha,
        beta: args.beta,
        ..path_options(&args.path)?
    };
    let shape = (args.m, args.n, args.k);
    let passed = crate::check_quant::gemm_quantized(&ctx, (q, groups), types, shape, &options, args.repeat.max(1))?;
    finish(&ctx, passed)
}

/// One GEMM on one device (the scheme the caller named, where named), checked and reported.
fn one_device_gemm(
    args: &GemmArgs,
    (types, layouts): (Types, (Layout, Layout, Layout)),
    options: GemmOptions,
) -> Result<bool> {
    let ctx = context_with(&args.dev, false)?;
    let scheme = args
        .scheme
        .as_deref()
        .map(|name| scheme_named(&ctx, types, options.compute, options.shape, name))
        .transpose()?;
    let options = GemmOptions { scheme, ..options };
    let report = with_types!(types, |TA, TB, TC| gemm::<TA, TB, TC>(
        &ctx,
        (args.m, args.n, args.k),
        layouts,
        &options,
        args.repeat.max(1)
    )?);
    print_report(args.json, &report, report::render_gemm)?;
    finish(&ctx, report.check.passed)
}

/// `vk-sgmat bench`: the sweep of shapes and types (or a model's layer, first runs, batches, epilogues, several devices) beside the peers given.
fn bench_command(args: BenchArgs) -> Result<bool> {
    let forced = path_options(&args.path)?;
    let c_layout = parse_c_layout(&args.c_layout)?;
    check_bench_flags(&args, c_layout)?;
    let (dev, types, shapes) = (&args.dev, &args.types, &args.shapes);
    let (batching, fused, layout) = (&args.batching, &args.fused, &args.layout);
    let run = (args.reps, args.json);
    let scheme = args.scheme.as_deref();
    if let Some(passed) =
        crate::batched::bench_args((batching, fused), dev, types, shapes, (&forced, scheme), layout, run)?
    {
        return Ok(passed);
    }
    if let Some(passed) = crate::fused::bench_args(fused, dev, types, shapes, (&forced, scheme), layout, run)? {
        return Ok(passed);
    }
    if let Some(devices) = &args.devices {
        let kind = crate::multi::parse_split(&args.split)?;
        return crate::multi::bench_command(
            devices,
            (dev.validation, dev.copy_queues),
            types,
            parse_shapes(shapes)?,
            kind,
            (args.reps.max(1) as usize, args.json, args.trace),
        );
    }
    one_device_bench(args, &forced, c_layout)
}

/// A typed error where `bench`'s flags ask for what the chosen kind of run does not take (the
/// others would silently ignore them).
fn check_bench_flags(args: &BenchArgs, c_layout: Layout) -> Result<()> {
    let batching = &args.batching;
    let single = batching.batch.is_none()
        && batching.groups.is_empty()
        && args.fused.epilogue.is_none()
        && args.fused.out.is_none()
        && args.devices.is_none();
    if !single && (c_layout != Layout::RowMajor || args.stream || args.warm != crate::cli::BENCH_WARM_S) {
        bail!("--c-layout t, --stream and --warm time single GEMMs on one device: not with --batch, --groups, --epilogue, --out or --devices");
    }
    if args.weights.is_some() && (batching.batch.is_some() || !batching.groups.is_empty()) {
        bail!("bench --weights times single GEMMs; time quantized experts with `gemm M N K --weights F --groups M1,M2,... --repeat R`");
    }
    if args.weights.is_some() && (args.first_runs.is_some() || c_layout != Layout::RowMajor) {
        bail!("--weights times single GEMMs into a row-major C: not with --first-runs or --c-layout t");
    }
    Ok(())
}

/// `bench`'s sweep of single GEMMs on one device (a model's shapes, quantized weights, first
/// runs in a fresh process), printed with the peers' figures beside.
fn one_device_bench(args: BenchArgs, forced: &vk_sgmat::GemmOptions, c_layout: Layout) -> Result<bool> {
    let weights = args
        .weights
        .as_deref()
        .map(vk_sgmat::quant::QuantType::parse)
        .transpose()?
        .map(|quant| crate::quantized::BenchWeights {
            quant,
            first: args.weights_first,
        });
    let ctx = context_with(&args.dev, false)?;
    let model = args.model.as_deref().map(crate::models::model).transpose()?;
    // A model's weights, and quantized ones, are stored N x K, as nn.Linear holds them.
    let layouts = match model {
        _ if weights.is_some() => parse_layout("nt")?,
        Some(_) => parse_layout("nt")?,
        None => parse_layout(&args.layout)?,
    };
    let shapes: Vec<String> = match model {
        Some(m) => m.shapes().iter().map(|(a, b, c)| format!("{a}x{b}x{c}")).collect(),
        None => args.shapes,
    };
    let types = &args.types;
    let timing = crate::bench_cmd::Timing {
        reps: args.reps,
        steps: args.trace,
        warm: seconds("--warm", args.warm)?,
        stream: args.stream,
    };
    if let Some(s) = args.first_runs {
        let pause = std::time::Duration::from_millis(args.pause_after_first);
        let first = (seconds("--first-runs", s)?, pause, args.prime);
        let forced = (forced, args.scheme.as_deref());
        return first_runs_command(&ctx, (types, &shapes), layouts, forced, first);
    }
    let peers = read_peers(&args.peer)?;
    let rows = bench(
        &ctx,
        (types, &shapes, weights),
        (layouts.0, layouts.1, c_layout),
        forced,
        args.scheme.as_deref(),
        &timing,
        (args.cublas.as_deref(), &peers),
    )?;
    let info = ctx.device_info();
    let device = format!("{} ({} {})", info.name, info.driver_name, info.driver_info);
    if let Some(path) = args.plot {
        std::fs::write(&path, crate::chart::render_svg(&device, &rows)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    print_report(args.json, &rows, |rows| {
        report::render_bench(&device, args.stream, rows)
    })?;
    if let Some(m) = model {
        print!("{}", m.summary(&rows));
    }
    finish(&ctx, true)
}

/// `bench --first-runs`: each type and shape's first runs in this process, one line each.
fn first_runs_command(
    ctx: &vk_sgmat::Context,
    (types, shapes): (&[String], &[String]),
    layouts: (Layout, Layout),
    (forced, scheme): (&GemmOptions, Option<&str>),
    first: (std::time::Duration, std::time::Duration, usize),
) -> Result<bool> {
    for t in bench_types(ctx, types)? {
        let options = crate::args::with_scheme(ctx, t, forced, scheme)?;
        for shape in parse_shapes(shapes)? {
            let r = with_types!(t, |TA, TB, TC| crate::first_runs::first_runs::<TA, TB, TC>(
                ctx, shape, layouts, &options, first
            )?);
            println!("{} {}", t.label(forced.compute), r.line());
        }
    }
    finish(ctx, true)
}

/// The peers' rows in the files `--peer` names.
fn read_peers(files: &[std::path::PathBuf]) -> Result<Vec<report::PeerRow>> {
    let mut peers = Vec::new();
    for p in files {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        peers.extend(report::read_peers(&text)?);
    }
    Ok(peers)
}

/// `vk-sgmat tune`: every candidate scheme of one problem, timed and checked, fastest first.
fn tune_command(args: TuneArgs) -> Result<bool> {
    let TuneArgs {
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
    } = args;
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
    print_report(json, &rows, |rows| {
        report::render_tune(&ctx.device_info().name, (m, n, k), rows)
    })?;
    finish(&ctx, rows.iter().all(|r| r.passed))
}

/// `vk-sgmat peak`: each config's register-resident multiply-accumulate ceiling and the fill bandwidth.
fn peak(args: PeakArgs) -> Result<bool> {
    let PeakArgs { json, dev } = args;
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

/// `vk-sgmat runtime`: the runtime's own costs (host time per enqueued GEMM, GPU busy fraction, a layer as one stream).
fn runtime(args: RuntimeArgs) -> Result<bool> {
    let RuntimeArgs {
        torch,
        quick,
        json,
        dev,
    } = args;
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
    print_report(json, &r, crate::runtime::render)?;
    finish(&ctx, r.verified)
}

/// `vk-sgmat check`: every config of the device on odd shapes, all layouts, alpha and beta.
fn check(args: CheckArgs) -> Result<bool> {
    let CheckArgs {
        quick,
        types,
        json,
        dev,
    } = args;
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

fn info(json: bool) -> Result<bool> {
    let instance = Instance::new(&InstanceOptions::default())?;
    let devices: Vec<_> = instance.devices()?.into_iter().map(|(_, d)| d).collect();
    let mut ranked = devices.clone();
    rank_devices(&mut ranked);
    let selected = ranked.first().filter(|d| d.usable()).map(|d| d.index);
    let device_groups = instance.device_groups()?;
    let cache = vk_sgmat::PipelineCacheFile::default();
    let self_tests = devices
        .iter()
        .map(|d| vk_sgmat::SelfTestReport::stored(d, &cache))
        .collect();
    let report = InfoReport {
        devices,
        selected,
        device_groups,
        self_tests,
    };
    print_report(json, &report, report::render_info)?;
    Ok(true)
}
