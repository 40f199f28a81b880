//! Parsing the command line's values, and the setup every command shares: its context (with
//! the device options) and how it finishes (validation messages counted as failures).

use crate::cli::{DeviceArgs, PathArgs};
use crate::types::Types;
use anyhow::{bail, Context as _, Result};
use vk_sgmat::plan::DispatchLimits;
use vk_sgmat::tiling::TileScheme;
use vk_sgmat::{
    ComputeMode, Context, ContextOptions, DeviceSelector, GPUSubgroupMatrixConfig, GemmOptions, HelperCommand, Layout,
    PipelineCacheFile, PipelineCompiler,
};

pub(crate) fn context(dev: &DeviceArgs) -> Result<Context> {
    context_with(dev, true)
}

/// Where a context of this binary compiles its pipelines: on NVIDIA's driver in a helper
/// process of this binary (`main` serves it), unless asked not to.
pub(crate) fn compiler(in_process: bool) -> PipelineCompiler {
    match HelperCommand::this_program() {
        Some(helper) if !in_process => PipelineCompiler::HelperOnNvidia(helper),
        _ => PipelineCompiler::InProcess,
    }
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
        matrix_units: !dev.no_matrix_units,
        self_test: !dev.no_self_test,
        pipeline_compiler: compiler(dev.compile_in_process),
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
    for m in ctx.validation_messages().unknown_to_layer() {
        eprintln!("validation (the layer predates an extension in use; not counted): {m}");
    }
    Ok(passed && msgs.is_empty())
}

/// `--split-k`: None (auto) or a count of K slices (the library checks its range).
pub(crate) fn parse_split_k(s: &str) -> Result<Option<u32>> {
    match s {
        "auto" => Ok(None),
        _ => match s.parse() {
            Ok(n) => Ok(Some(n)),
            Err(_) => bail!("--split-k {s:?}: use auto or a number of K slices (1 = off)"),
        },
    }
}

/// A flag of auto, on or off (`--relayout`, `--specialize`): None, Some(true), Some(false).
pub(crate) fn parse_on_off(flag: &str, s: &str) -> Result<Option<bool>> {
    match s {
        "auto" => Ok(None),
        "on" => Ok(Some(true)),
        "off" => Ok(Some(false)),
        _ => bail!("{flag} {s:?}: use auto, on or off"),
    }
}

/// `--convert`: None (auto), Some(true) (first), Some(false) (as loaded).
pub(crate) fn parse_convert(s: &str) -> Result<Option<bool>> {
    match s {
        "auto" => Ok(None),
        "first" => Ok(Some(true)),
        "load" => Ok(Some(false)),
        _ => bail!("--convert {s:?}: use auto, first or load"),
    }
}

pub(crate) fn parse_mode(s: &str) -> Result<ComputeMode> {
    ComputeMode::parse(s).with_context(|| format!("--mode {s:?}: use accurate, fast, fast-bf16 or exact"))
}

/// A duration given in seconds on the command line: finite, not negative, at most an hour.
pub(crate) fn seconds(flag: &str, s: f64) -> Result<std::time::Duration> {
    if !(0.0..=3600.0).contains(&s) {
        bail!("{flag} {s}: give seconds from 0 to 3600");
    }
    Ok(std::time::Duration::from_secs_f64(s))
}

pub(crate) fn parse_c_layout(s: &str) -> Result<Layout> {
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

/// `forced` with the scheme called `name` (if any) for the types `t`, else `forced`'s own.
pub(crate) fn with_scheme(ctx: &Context, t: Types, forced: &GemmOptions, name: Option<&str>) -> Result<GemmOptions> {
    let named = name
        .map(|name| scheme_named(ctx, t, forced.compute, forced.shape, name))
        .transpose()?;
    Ok(GemmOptions {
        scheme: named.or(forced.scheme),
        ..forced.clone()
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

pub(crate) fn parse_shape(s: &str) -> Result<(u32, u32, u32)> {
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

pub(crate) fn layout_name((a, b): (Layout, Layout)) -> String {
    format!("{}{}", a.letter(), b.letter())
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

/// The kernel path's options as `GemmOptions` (the rest default).
pub(crate) fn path_options(p: &PathArgs) -> Result<GemmOptions> {
    Ok(GemmOptions {
        compute: parse_mode(&p.mode)?,
        convert_first: parse_convert(&p.convert)?,
        relayout: parse_on_off("--relayout", &p.relayout)?,
        specialize: parse_on_off("--specialize", &p.specialize)?,
        matrix_vector: parse_on_off("--matrix-vector", &p.gemv.matrix_vector)?,
        gemv_cols: p.gemv.gemv_cols,
        gemv_unroll: p.gemv.gemv_unroll,
        gemv_lanes: p.gemv.gemv_lanes,
        gemv_group_rows: p.gemv.gemv_group_rows,
        int8_activations: parse_on_off("--int8-activations", &p.gemv.int8_activations)?,
        gemv_wide_loads: parse_on_off("--gemv-wide-loads", &p.gemv.gemv_wide_loads)?,
        split_k: parse_split_k(&p.split_k)?,
        ..Default::default()
    })
}

/// Prints `value` as JSON, or as the text `render` makes of it.
pub(crate) fn print_report<T: serde::Serialize + ?Sized>(
    json: bool,
    value: &T,
    render: impl FnOnce(&T) -> String,
) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        print!("{}", render(value));
    }
    Ok(())
}
