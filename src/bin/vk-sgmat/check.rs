//! `vk-sgmat check`: every config's kernels, and every type combination and mode, against the
//! f64 CPU reference over awkward shapes and all layouts.

use crate::args::layout_name;
use crate::checking::FULL_CHECK;
use crate::progress::Progress;
use crate::report::CheckRow;
use crate::types::{with_types, Types};
use crate::verify::{run_random_gemm, run_random_gemm_c, Check, Rng};
use anyhow::{bail, Result};
use vk_sgmat::tiling::{self as t, KernelScope, TileScheme};
use vk_sgmat::Matmul;
use vk_sgmat::{ComponentType, ComputeMode, Context, GPUSubgroupMatrixConfig, GemmOptions, Layout};

const LAYOUTS: [(Layout, Layout); 4] = [
    (Layout::RowMajor, Layout::RowMajor),
    (Layout::RowMajor, Layout::ColMajor),
    (Layout::ColMajor, Layout::RowMajor),
    (Layout::ColMajor, Layout::ColMajor),
];

/// Checks the asked types (`all`: none were asked, so every pair the device has plus every
/// f32 and mixed combination it can run).
pub fn check(ctx: &Context, quick: bool, asked: &[Types], all: bool) -> Result<Vec<CheckRow>> {
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
    let mut rng = Rng::new(Rng::fresh_seed());
    // A and B of one type, not f32: the configs' own kernels; with none asked, also every
    // such pair of the API the device has no config for (the kernels without matrix units).
    let mut pairs: Vec<(ComponentType, ComponentType)> = asked
        .iter()
        .filter(|t| t.a == t.b && t.a != ComponentType::F32)
        .map(|t| (t.a, t.c))
        .collect();
    if all {
        for [a, b, c] in vk_sgmat::plan::TYPE_PAIRS {
            if a == b && !pairs.contains(&(a, c)) {
                pairs.push((a, c));
            }
        }
    }
    let mut rows = check_configs(ctx, &mut rng, &shapes, &pairs)?;
    let mut typed: Vec<Types> = asked
        .iter()
        .copied()
        .filter(|t| t.a != t.b || t.a == ComponentType::F32)
        .collect();
    if all {
        use ComponentType::*;
        for (a, b) in [(F32, F32), (F16, F32), (F32, F16), (Bf16, F32), (F32, Bf16)] {
            typed.push(Types { a, b, c: F32 });
        }
    }
    rows.extend(check_types(ctx, &mut rng, &shapes, &typed, all)?);
    let mut batched: Vec<Types> = pairs.iter().map(|&(a, c)| Types::pair(a, c)).collect();
    batched.extend(
        typed
            .iter()
            .copied()
            .filter(|t| t.a == ComponentType::F32 && t.b == ComponentType::F32),
    );
    rows.extend(check_batched(ctx, &batched)?);
    rows.extend(check_fused(ctx, &pairs, &shapes));
    if all {
        rows.extend(crate::check_quant::check_quantized(ctx, &mut rng));
    }
    if rows.is_empty() {
        bail!("nothing to check: no type was asked");
    }
    Ok(rows)
}

/// One checked kernel choice: the type pair, its config (none: the kernels without matrix
/// units), a scheme (none: the defaults) and the operands' form.
type Run = (
    (ComponentType, ComponentType),
    Option<GPUSubgroupMatrixConfig>,
    Option<TileScheme>,
    Form,
);

/// What `check_configs` runs for the type pairs `pairs`: every config with its default schemes;
/// then, once per type pair, the workgroup-scope schemes taken by default (the shapes here are
/// mostly too small to pick them) and the largest and the smallest workgroup-scope scheme,
/// where the device offers them. Defaults first: a driver slow to compile some workgroup-scope
/// pipelines (seconds each on the H200) must not keep a time-limited run from checking them.
/// Once per 16-bit and 8-bit pair, operands copied transposed first (`relayout`), which the
/// default takes only at sizes larger than these. Once per pair, the first of those
/// workgroup-scope schemes with the sizes built into its kernel (taken by default from 2^31
/// on), on two shapes with edges and a K remainder: a pipeline per shape. A pair without a
/// config runs on the kernels without matrix units, as the planner routes it.
fn config_runs(ctx: &Context, pairs: &[(ComponentType, ComponentType)]) -> Vec<Run> {
    let configs = ctx.configs();
    let mut runs: Vec<Run> = pairs
        .iter()
        .filter(|&&(a, c)| !configs.iter().any(|k| (k.component_type, k.result_type) == (a, c)))
        .map(|&pair| (pair, None, None, Form::AsStored))
        .collect();
    let mut extras = Vec::new();
    let mut pairs_seen = Vec::new();
    for config in configs {
        let pair = (config.component_type, config.result_type);
        if !pairs.contains(&pair) {
            continue;
        }
        runs.push((pair, Some(config), None, Form::AsStored));
        if pairs_seen.contains(&pair) {
            continue;
        }
        if matches!(config.component_type.size_bytes(), 1 | 2) {
            extras.push((pair, Some(config), None, Form::Relaid));
        }
        pairs_seen.push(pair);
        let wg: Vec<TileScheme> = ctx
            .schemes(&config)
            .into_iter()
            .filter(|s| s.scope() == KernelScope::Workgroup)
            .collect();
        let preferred = preferred_schemes(ctx, &config);
        for s in preferred.iter().chain([wg.first(), wg.last()].into_iter().flatten()) {
            let run = (pair, Some(config), Some(*s), Form::AsStored);
            if !extras.contains(&run) {
                extras.push(run);
            }
        }
        if let Some(s) = preferred.first() {
            extras.push((pair, Some(config), Some(*s), Form::SizesBuiltIn));
        }
    }
    runs.extend(extras);
    runs
}

/// Every config's kernels for the type pairs `pairs` (A and B of one type).
fn check_configs(
    ctx: &Context,
    rng: &mut Rng,
    shapes: &[(usize, usize, usize)],
    pairs: &[(ComponentType, ComponentType)],
) -> Result<Vec<CheckRow>> {
    let layouts = LAYOUTS;
    let mut rows = Vec::new();
    let runs = config_runs(ctx, pairs);
    let cases: usize = runs
        .iter()
        // Two (alpha, beta) pairs per case, as below.
        .map(|(_, _, s, form)| run_shapes(shapes, s.is_some(), *form).len() * layouts.len() * 2)
        .sum();
    let mut progress = Progress::new(cases);
    for (pair, config, scheme, form) in runs {
        let name = run_name(pair, config, scheme, form);
        let scalars = scalar_pairs(pair.1);
        for shape in run_shapes(shapes, scheme.is_some(), form) {
            for (li, &l) in layouts.iter().enumerate() {
                for (alpha, beta) in scalars {
                    let options = GemmOptions {
                        alpha,
                        beta,
                        shape: config.map(|c| (c.m, c.n, c.k)),
                        scheme,
                        relayout: (form == Form::Relaid).then_some(true),
                        specialize: (form == Form::SizesBuiltIn).then_some(true),
                        ..Default::default()
                    };
                    // Padded leading dimensions on every other layout.
                    let extra_ld = li % 2 * 3;
                    let res = with_types!(Types::pair(pair.0, pair.1), |TA, TB, TC| run_random_gemm::<TA, TB, TC>(
                        ctx, rng, shape, l, extra_ld, &options, FULL_CHECK
                    ));
                    let r = check_row(name.clone(), shape, layout_name(l), (alpha, beta), res);
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
    Ok(rows)
}

/// The workgroup-scope schemes the planner takes by default for `config` on some shape (every
/// measured table's leads; the K-contiguous ones also on the grouped walk they take over large
/// grids).
fn preferred_schemes(ctx: &Context, config: &GPUSubgroupMatrixConfig) -> Vec<TileScheme> {
    let (info, sg) = (ctx.device_info(), ctx.subgroup_size());
    let mut preferred = t::preferred_workgroup_schemes(config, info, sg);
    let k_contiguous = t::preferred_k_contiguous_schemes(config, info, sg).concat();
    let grouped = k_contiguous.iter().copied().map(t::on_grouped_walk);
    preferred.extend(k_contiguous.iter().copied().chain(grouped));
    let lists = [
        t::preferred_deep_schemes,
        t::preferred_nn_in_place_schemes,
        t::preferred_nn_untransposed_schemes,
        t::preferred_long_k_schemes,
    ];
    for list in lists {
        preferred.extend(list(config, info, sg));
    }
    preferred.extend(t::preferred_k_contiguous_short_schemes(config, info, sg).concat());
    preferred
}

/// A check run's name: its config (or the types without matrix units), scheme and form.
fn run_name(
    pair: (ComponentType, ComponentType),
    config: Option<GPUSubgroupMatrixConfig>,
    scheme: Option<TileScheme>,
    form: Form,
) -> String {
    match (config, scheme, form) {
        (None, ..) => format!("{}->{} without matrix units", pair.0, pair.1),
        (Some(config), None, Form::Relaid) => format!("{config}, relaid"),
        (Some(config), None, _) => config.to_string(),
        (Some(config), Some(s), Form::SizesBuiltIn) => format!("{config} [{}], sizes built in", s.name()),
        (Some(config), Some(s), _) => format!("{config} [{}]", s.name()),
    }
}

/// How a check run reads its operands and sizes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Form {
    /// Operands as stored, sizes pushed (the default below 2^31).
    AsStored,
    /// Operands copied into the other order first.
    Relaid,
    /// N, K and the leading dimensions built into the kernel.
    SizesBuiltIn,
}

/// The shapes a run takes: a default scheme all of them; the extra runs those up to
/// 513x257x1031 (the larger ones already run every config's default scheme); sizes built in
/// two with edges and a K remainder, since each shape is a pipeline of its own.
fn run_shapes(shapes: &[(usize, usize, usize)], extra: bool, form: Form) -> Vec<(usize, usize, usize)> {
    match form {
        Form::SizesBuiltIn => vec![(127, 129, 65), (300, 5, 700)],
        _ if extra || form == Form::Relaid => shapes[..shapes.len().min(9)].to_vec(),
        _ => shapes.to_vec(),
    }
}

/// The float types of `types` as fused checks run them: f16 inputs stored as f16 from f32 sums.
fn fused_types(types: &[Types]) -> impl Iterator<Item = Types> + '_ {
    types.iter().filter(|t| t.a.is_float() && t.c.is_float()).map(|&t| {
        if t.a == ComponentType::F16 && t.b == ComponentType::F16 {
            Types {
                c: ComponentType::F16,
                ..t
            }
        } else {
            t
        }
    })
}

/// Strided batches of each type (one config each: the batch adds only offsets), in every
/// layout, with B per entry and shared, a batch of one, odd shapes, and alpha/beta.
fn check_batched(ctx: &Context, types: &[Types]) -> Result<Vec<CheckRow>> {
    let cases = [(1, (1, 1, 1)), (5, (7, 5, 3)), (3, (127, 129, 65)), (7, (17, 31, 9))];
    let mut progress = Progress::new(types.len() * (cases.len() * LAYOUTS.len() * 2 + 5));
    let mut rows = Vec::new();
    for &t in types {
        for (count, shape) in cases {
            for (li, &l) in LAYOUTS.iter().enumerate() {
                for shared_b in [false, true] {
                    let scalars = if li % 2 == 0 { (1.0, 0.0) } else { (2.0, 1.0) };
                    let options = GemmOptions {
                        alpha: scalars.0,
                        beta: scalars.1,
                        ..Default::default()
                    };
                    let res = with_types!(t, |TA, TB, TC| crate::batched::run::<TA, TB, TC>(
                        ctx, shape, count, shared_b, l, &options, None, None
                    ))
                    .map(|r| r.check);
                    let b = if shared_b { ", B shared" } else { "" };
                    let name = format!("batch {count} {}{b}", t.name());
                    let r = check_row(name, shape, layout_name(l), scalars, res);
                    let (m, n, k) = shape;
                    let result = if r.passed { "ok" } else { "FAIL" };
                    progress.done(&format!("{} {m}x{n}x{k} {}: {result}", r.config, r.layout));
                    rows.push(r);
                }
            }
        }
    }
    // Fused: bias and activation on every entry, f16 inputs stored as f16 from f32 sums.
    let terms = crate::terms::Terms {
        bias: Some(vk_sgmat::Axis::Col),
        activation: vk_sgmat::Activation::Gelu,
        label: "bias-col,gelu".into(),
    };
    for t in fused_types(types) {
        for (count, shape, l) in [(3, (127, 129, 65), LAYOUTS[0]), (4, (17, 31, 9), LAYOUTS[3])] {
            let options = GemmOptions {
                alpha: 2.0,
                beta: 1.0,
                ..Default::default()
            };
            let res = with_types!(t, |TA, TB, TC| crate::batched::run::<TA, TB, TC>(
                ctx,
                shape,
                count,
                false,
                l,
                &options,
                Some(&terms),
                None
            ))
            .map(|r| r.check);
            let name = format!("batch {count} {} {}", t.name(), terms.label);
            let r = check_row(name, shape, layout_name(l), (2.0, 1.0), res);
            keep(&mut progress, &mut rows, r);
        }
    }
    // Grouped: ragged groups, one empty and one of a single row, B in either layout; then
    // fused: each group's own column bias, GELU, f32 sums stored as f16 where the inputs are f16.
    let groups = [7, 0, 13, 1, 29];
    let options = GemmOptions {
        alpha: 2.0,
        beta: 1.0,
        ..Default::default()
    };
    // Each also with the sizes as counts on the device (`Matmul::grouped_by_device_counts`).
    let plain = types
        .iter()
        .flat_map(|&t| [Layout::RowMajor, Layout::ColMajor].map(|lb| (t, lb, None)));
    let fused = fused_types(types).map(|t| (t, Layout::ColMajor, Some(&terms)));
    let both = plain
        .chain(fused)
        .flat_map(|(t, lb, f)| [false, true].map(|c| (t, lb, f, c)));
    for (t, lb, terms, counted) in both {
        let res = with_types!(t, |TA, TB, TC| crate::grouped::run_grouped::<TA, TB, TC>(
            ctx,
            &groups,
            (23, 37),
            lb,
            (&options, terms, counted),
            None
        ))
        .map(|r| r.check);
        let label = terms.map_or(String::new(), |f| format!(" {}", f.label));
        let label = if counted { format!("{label} counted") } else { label };
        let name = format!("grouped {groups:?} {}{label}", t.name());
        let total = groups.iter().sum();
        let r = check_row(name, (total, 23, 37), format!("n{}", lb.letter()), (2.0, 1.0), res);
        keep(&mut progress, &mut rows, r);
    }
    progress.finish();
    Ok(rows)
}

/// Fused epilogues for the asked type pairs with float or dequantised integer results: every
/// output type, the shapes above, the layouts, terms and (alpha, beta)
/// taken in turn, each scheme the default would pick.
fn check_fused(
    ctx: &Context,
    pairs: &[(ComponentType, ComponentType)],
    shapes: &[(usize, usize, usize)],
) -> Vec<CheckRow> {
    use ComponentType::*;
    const TERMS: [&str; 6] = [
        "bias-col,gelu",
        "bias-row,gelu-erf",
        "silu",
        "bias-col,relu",
        "none",
        "bias-row",
    ];
    let mut runs = Vec::new();
    for &(input, result) in pairs {
        let outs: &[ComponentType] = match (input, result) {
            (F16 | Bf16, F32) => &[F16, Bf16, F32],
            (I8, I32) | (U8, U32) => &[F16, F32],
            _ => continue,
        };
        for (i, &shape) in shapes.iter().enumerate() {
            for (j, &out) in outs.iter().enumerate() {
                runs.push((input, out, shape, i + j));
            }
        }
    }
    let mut progress = Progress::new(runs.len());
    let mut rows = Vec::new();
    for (input, out, shape, turn) in runs {
        let terms = TERMS[turn % TERMS.len()];
        let l = LAYOUTS[turn % LAYOUTS.len()];
        let scalars = if turn % 2 == 0 { (1.0, 0.0) } else { (0.5, -1.0) };
        let options = GemmOptions {
            alpha: scalars.0,
            beta: scalars.1,
            ..Default::default()
        };
        let report = crate::terms::parse(terms).and_then(|(bias, act)| {
            let spec = (bias, act, terms.to_string());
            crate::fused::run_types(ctx, (input, out), shape, l, &options, &spec, None)
        });
        let scheme = report.as_ref().map_or(String::new(), |r| format!(" [{}]", r.scheme));
        let name = format!("fused {input}->{out} {terms}{scheme}");
        let r = check_row(name, shape, layout_name(l), scalars, report.map(|r| r.check));
        let (m, n, k) = shape;
        let result = if r.passed { "ok" } else { "FAIL" };
        progress.done(&format!("{} {m}x{n}x{k} {}: {result}", r.config, r.layout));
        rows.push(r);
    }
    progress.finish();
    rows
}

/// The (alpha, beta) pairs checked for a result type: plain, then scaled (integers for integer
/// results, which take only scalars that fit them).
fn scalar_pairs(result: ComponentType) -> [(f64, f64); 2] {
    match result {
        ComponentType::U32 => [(1.0, 0.0), (2.0, 1.0)],
        t if t.is_float() => [(1.0, 0.0), (0.5, -1.0)],
        _ => [(1.0, 0.0), (-2.0, 3.0)],
    }
}

/// Reports `r` on the progress line by its config and layout, and keeps it.
fn keep(progress: &mut Progress, rows: &mut Vec<CheckRow>, r: CheckRow) {
    let result = if r.passed { "ok" } else { "FAIL" };
    progress.done(&format!("{} {}: {result}", r.config, r.layout));
    rows.push(r);
}

/// The row of one checked case.
fn check_row(
    config: String,
    shape: (usize, usize, usize),
    layout: String,
    (alpha, beta): (f64, f64),
    res: Result<Check, impl std::fmt::Display>,
) -> CheckRow {
    let (check, error) = match res {
        Ok(c) => (Some(c), None),
        Err(e) => (None, Some(e.to_string())),
    };
    CheckRow {
        config,
        shape,
        layout,
        alpha,
        beta,
        rel_error: check.as_ref().map_or(f64::NAN, |c| c.rel_error),
        tolerance: check.as_ref().map_or(0.0, |c| c.tolerance),
        mismatches: check.as_ref().map_or(0, |c| c.mismatches),
        passed: check.as_ref().is_some_and(|c| c.passed),
        error,
    }
}

/// f32 and mixed-type GEMMs in every mode the device can run (a combination without a config
/// is skipped when checking everything, an error when asked for), then column-major C.
fn check_types(
    ctx: &Context,
    rng: &mut Rng,
    shapes: &[(usize, usize, usize)],
    typed: &[Types],
    all: bool,
) -> Result<Vec<CheckRow>> {
    let runs = type_runs(ctx, typed, all)?;
    let mut progress = Progress::new(runs.len() * shapes.len() * LAYOUTS.len());
    let mut rows = Vec::new();
    for (t, mode, lc, convert_first) in runs {
        let name = format!(
            "{}{}{}",
            t.label(mode),
            if lc == Layout::ColMajor { ", C column-major" } else { "" },
            if convert_first == Some(true) {
                ", converted first"
            } else {
                ""
            }
        );
        for &shape in shapes {
            for (li, &(la, lb)) in LAYOUTS.iter().enumerate() {
                let scalars = scalar_pairs(t.c)[li % 2];
                let options = GemmOptions {
                    alpha: scalars.0,
                    beta: scalars.1,
                    compute: mode,
                    convert_first,
                    ..Default::default()
                };
                let extra_ld = li % 2 * 3;
                let res = with_types!(t, |TA, TB, TC| run_random_gemm_c::<TA, TB, TC>(
                    ctx,
                    rng,
                    shape,
                    (la, lb, lc),
                    extra_ld,
                    &options,
                    FULL_CHECK
                ));
                let layout = format!("{}{}", layout_name((la, lb)), lc.letter());
                let r = check_row(name.clone(), shape, layout, scalars, res);
                progress.done(&format!(
                    "{} {}x{}x{} {}: {}",
                    r.config,
                    shape.0,
                    shape.1,
                    shape.2,
                    r.layout,
                    if r.passed { "ok" } else { "FAIL" }
                ));
                rows.push(r);
            }
        }
    }
    progress.finish();
    Ok(rows)
}

/// What [`check_types`] runs: (types, mode, C's layout, f32 operands converted first).
type TypeRun = (Types, ComputeMode, Layout, Option<bool>);

/// [`check_types`]' runs: each of `typed` in every mode the device runs it in (also converted
/// first where f32 operands would be), and with `all` column-major C for every pair the device
/// has; an error where a type asked for by name runs in no mode.
fn type_runs(ctx: &Context, typed: &[Types], all: bool) -> Result<Vec<TypeRun>> {
    const MODES: [ComputeMode; 4] = [
        ComputeMode::Accurate,
        ComputeMode::FastF16,
        ComputeMode::FastBf16,
        ComputeMode::Exact,
    ];
    // (types, mode, C's layout, f32 operands converted first).
    let mut runs: Vec<TypeRun> = Vec::new();
    // The accurate split done first runs where a workgroup-scope scheme takes its planes.
    let first = GemmOptions {
        convert_first: Some(true),
        ..Default::default()
    };
    let workgroup = ctx
        .plan::<f32, f32, f32>(
            &Matmul::with_options(&first),
            (64, 64, 64),
            (Layout::RowMajor, Layout::RowMajor),
        )
        .is_ok();
    let mut skipped = Vec::new();
    for &t in typed {
        // Mixed pairs run the 16-bit side's config whatever the mode: one mode suffices.
        let modes: &[ComputeMode] = if t.a == t.b { &MODES } else { &MODES[..1] };
        for &mode in modes {
            let options = GemmOptions {
                compute: mode,
                ..Default::default()
            };
            let runs_here = ctx.route_for([t.a, t.b, t.c], &options);
            let f32_side = t.a == ComponentType::F32 || t.b == ComponentType::F32;
            let converts = f32_side && mode != ComputeMode::Exact && (mode != ComputeMode::Accurate || workgroup);
            match runs_here {
                Ok(_) => {
                    runs.push((t, mode, Layout::RowMajor, None));
                    // Converted first as well as the default (as loaded at these sizes).
                    if converts {
                        runs.push((t, mode, Layout::RowMajor, Some(true)));
                    }
                }
                Err(e) => skipped.push(format!("{} {}: {e}", t.name(), mode.name())),
            }
        }
        // Asked for by name, a combination must run in some mode.
        if !all && !runs.iter().any(|r| r.0 == t) {
            bail!("{}: no mode runs on this device: {}", t.name(), skipped.join("; "));
        }
    }
    for s in &skipped {
        eprintln!("check: skipped {s}");
    }
    if all {
        // Column-major C for every pair the device has (C^T = B^T A^T).
        let mut pairs: Vec<Types> = ctx
            .configs()
            .iter()
            .map(|c| Types::pair(c.component_type, c.result_type))
            .collect();
        pairs.sort();
        pairs.dedup();
        runs.extend(
            pairs
                .into_iter()
                .map(|t| (t, ComputeMode::default(), Layout::ColMajor, None)),
        );
    }
    Ok(runs)
}
