//! `vk-sgmat gemm`: one GEMM on random data, checked against the f64 reference and timed, on
//! device-resident operands, or as one host call in pieces where an operand exceeds the
//! allocation limit.

use crate::checking::FULL_CHECK;
use crate::report::GemmReport;
use crate::types::Types;
use crate::verify::{compare_rounded, input_roundoff, random_matrix, random_vec, reference, rows_to_check, Rng};
use anyhow::Result;
use std::time::Instant;
use vk_sgmat::plan::Kernel;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, Element, GemmOptions, Layout, MatMut, MatRef};

/// The `rows x cols` row-major `data` stored column by column (equally: its transpose, row-major).
fn transpose_copy<T: Copy>(data: &[T], rows: usize, cols: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(rows * cols);
    for j in 0..cols {
        out.extend((0..rows).map(|i| data[i * cols + j]));
    }
    out
}

/// An `m x n` matrix stored `lc` (column-major: its transpose's row-major storage), row-major.
fn row_major<T: Copy>(stored: Vec<T>, (m, n): (usize, usize), lc: Layout) -> Vec<T> {
    match lc {
        Layout::RowMajor => stored,
        Layout::ColMajor => transpose_copy(&stored, n, m),
    }
}

/// The report's config and tile words for what multiplies in `plan`.
fn kernel_words(plan: &vk_sgmat::plan::GemmPlan) -> (String, String) {
    if let Some(key) = plan.gemv_kernel() {
        let tile = format!(
            "{} rows x {} weight rows per workgroup, {} invocations",
            key.rows,
            key.cols,
            vk_sgmat::kernel::GEMV_THREADS
        );
        return ("matrix-vector, f32 sums".into(), tile);
    }
    let key = plan.main_kernel();
    let g = key.scheme.geometry(&key.config);
    let tile = format!(
        "{}x{}x{}, {} invocations{}",
        g.bm,
        g.bn,
        g.bk,
        g.threads,
        if key.fixed.is_some() { ", sizes built in" } else { "" }
    );
    if vk_sgmat::kernel::Load::without_matrix_units(key.loads) {
        let c = &key.config;
        let how = if key.loads == [vk_sgmat::kernel::Load::Packed; 2] {
            "packed dot products"
        } else {
            "products"
        };
        return (
            format!("no matrix units, {}->{} {how}", c.component_type, c.result_type),
            tile,
        );
    }
    (key.config.to_string(), tile)
}

pub(crate) fn gemm<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (m, n, k): (usize, usize, usize),
    (la, lb, lc): (Layout, Layout, Layout),
    options: &GemmOptions,
    repeat: usize,
) -> Result<GemmReport> {
    let seed = Rng::fresh_seed();
    let mut rng = Rng::new(seed);
    if ctx.tuning_file().is_some() {
        // `--autotune FILE`: the explicit tuning step, before anything is planned.
        ctx.tune::<TA, TB, TC>(&Matmul::with_options(options), (m, n, k), (la, lb))?;
    }
    let plan = ctx.plan::<TA, TB, TC>(&Matmul::with_options(options), (m, n, k), (la, lb))?;
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
    let passes = gemm_passes::<TA, TB, TC>(ctx, (&plan, &cut), options, (la, lb))?;
    let (c, first_call_ms, mut times) = if pieces > 1 {
        // An operand over the allocation limit cannot be a device matrix: the host call, which
        // runs in pieces that fit, timed once with its transfers.
        let mut c_store = c_store;
        let cm = match lc {
            Layout::RowMajor => MatMut::new(&mut c_store, m, n),
            Layout::ColMajor => MatMut::col_major(&mut c_store, m, n),
        };
        let t = Instant::now();
        ctx.run(&Matmul::with_options(options), am, bm, cm)?;
        let secs = t.elapsed().as_secs_f64();
        (row_major(c_store, (m, n), lc), secs * 1e3, vec![secs])
    } else {
        device_runs(ctx, (am, bm, c_ref), (m, n, lc), options, repeat)?
    };
    let rows = rows_to_check(m, n, FULL_CHECK, 256, &mut rng);
    let (expected, magnitude) = reference(&am, &bm, Some((&c_in, n)), options.alpha, options.beta, &rows);
    let input_u = input_roundoff(TA::TYPE, TB::TYPE, options.compute)?;
    let check = compare_rounded(&c, n, n, &rows, (&expected, &magnitude), k, input_u);
    let median = vk_sgmat::median(&mut times);
    let info = ctx.device_info();
    let (config, tile) = kernel_words(&plan);
    Ok(GemmReport {
        device: info.name.clone(),
        driver: format!("{} {}", info.driver_name, info.driver_info),
        m,
        n,
        k,
        types: Types::name_of::<TA, TB, TC>(),
        layout: format!("{}{}{}", la.letter(), lb.letter(), lc.letter()),
        config,
        scheme: plan.kernel_name(),
        tile,
        passes,
        converted_first: count_kernels(&plan, |k| {
            matches!(
                k,
                Kernel::Narrow { .. } | Kernel::SplitPlanes { .. } | Kernel::Transpose { rounds_to: Some(_), .. }
            )
        }),
        relaid: count_kernels(&plan, |k| matches!(k, Kernel::Transpose { .. })),
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
        self_test: {
            let st = ctx.self_test();
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            (st.tested, ms(st.testing_time), ms(st.load_time))
        },
        compiled: ctx.compile_report(),
    })
}

/// The GEMM dispatches that run: `plan`'s, or where the host call cuts the problem into `cut`'s
/// pieces, theirs (the whole problem's plan would bind windows no buffer has).
fn gemm_passes<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    (plan, cut): (&vk_sgmat::plan::GemmPlan, &[vk_sgmat::plan::Piece]),
    options: &GemmOptions,
    layouts: (Layout, Layout),
) -> Result<usize> {
    if cut.len() <= 1 {
        return Ok(plan.gemm_dispatches().count());
    }
    let mut passes = 0;
    for p in cut {
        let shape = (p.rows.len(), p.cols.len(), p.k.len());
        let piece = ctx.plan::<TA, TB, TC>(&Matmul::with_options(options), shape, layouts)?;
        passes += piece.gemm_dispatches().count();
    }
    Ok(passes)
}

/// How many of `plan`'s dispatches run a kernel `which` picks.
fn count_kernels(plan: &vk_sgmat::plan::GemmPlan, which: impl Fn(&Kernel) -> bool) -> usize {
    plan.dispatches.iter().filter(|d| which(&d.kernel)).count()
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
    ctx.run(&Matmul::with_options(options), &da, &db, &mut dc)?;
    let first_call_ms = first.elapsed().as_secs_f64() * 1e3;
    // A column-major device matrix downloads as its transpose's row-major storage.
    let (dr, dcols) = match lc {
        Layout::RowMajor => (m, n),
        Layout::ColMajor => (n, m),
    };
    let mut stored = vec![TC::from_f64(0.0); m * n];
    ctx.download(&dc, MatMut::new(&mut stored, dr, dcols))?;
    let c = row_major(stored, (m, n), lc);
    // Warm up (GPU clocks rise under load), then time each call to completion.
    let warm = Instant::now();
    while warm.elapsed().as_secs_f64() < 0.5 {
        ctx.run(&Matmul::with_options(options), &da, &db, &mut dc)?;
    }
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let t = Instant::now();
        ctx.run(&Matmul::with_options(options), &da, &db, &mut dc)?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok((c, first_call_ms, times))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::scheme_named;
    use half::f16;
    use vk_sgmat::ComponentType;
    use vk_sgmat::ComputeMode;

    /// `gemm --scheme NAME` runs the scheme `tune` lists under that name, and an unknown name is
    /// an error naming the config and some valid schemes.
    #[test]
    fn gemm_runs_a_scheme_named_like_tune_lists_it_on_matrix_units() {
        let ctx =
            Context::new().expect("a Vulkan device with cooperative matrices (the cargo runner provides lavapipe)");
        assert!(
            !ctx.configs().is_empty(),
            "tile schemes name the matrix units' kernels, and {} offers no cooperative-matrix config",
            ctx.device_info().name
        );
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
        // `gemm --batch N --scheme NAME`: the batch runs it too, and is checked.
        let layouts = (Layout::RowMajor, Layout::ColMajor);
        let r =
            crate::batched::run::<f16, f16, f32>(&ctx, (17, 31, 9), 3, false, layouts, &options, None, None).unwrap();
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
