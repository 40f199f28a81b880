//! The driver self-test (`ContextOptions::self_test`): a configuration built to compute wrongly
//! (`ContextOptions::inject_fault`, which drops every product on the matrix units, in kernels
//! of both scopes) gives wrong answers without the self-test, and with it is caught by the
//! known-answer GEMM, dropped with its reason, and every kind of work planned on it goes to the
//! next path and comes out right. Verdicts are kept on disk; a damaged file is ignored and
//! rebuilt.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use common::{assert_no_validation_messages, require_matrix_units, run_case, LAYOUT_PAIRS};
use half::f16;
use std::path::PathBuf;
use verify::Rng;
use vk_sgmat::kernel::Load;
use vk_sgmat::plan::Kernel;
use vk_sgmat::tiling::TileScheme;
use vk_sgmat::{
    Activation, Axis, BatchRef, ComponentType, Context, ContextOptions, Error, GPUSubgroupMatrixConfig, GemmOptions,
    Layout, MatMut, MatRef, Matmul, PipelineCacheFile,
};

/// The configuration f16 x f16 -> f32 GEMMs take on this device.
fn f16_config() -> GPUSubgroupMatrixConfig {
    let ctx = common::context();
    require_matrix_units(ctx, "the self-test of a configuration");
    ctx.choose_config(ComponentType::F16, ComponentType::F32, None)
        .expect("an f16 -> f32 configuration")
}

fn faulty(self_test: bool, cache: PipelineCacheFile) -> Context {
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        self_test,
        inject_fault: Some(f16_config()),
        pipeline_cache: cache,
        ..Default::default()
    })
    .expect("a context")
}

/// A context of its own (no kept verdicts) on a device with matrix units, for `what`.
fn healthy(what: &str) -> Context {
    require_matrix_units(common::context(), what);
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        pipeline_cache: PipelineCacheFile::Off,
        ..Default::default()
    })
    .unwrap()
}

/// A directory of this test's own under the system's temporary one, empty.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vk-sgmat-self-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn an_injected_fault_gives_wrong_answers_without_the_self_test_on_matrix_units() {
    let ctx = faulty(false, PipelineCacheFile::Off);
    let mut rng = Rng::new(Rng::fresh_seed());
    let check = run_case::<f16, f16, f32>(
        &ctx,
        &mut rng,
        (67, 45, 33),
        LAYOUT_PAIRS[0],
        0,
        &GemmOptions::default(),
    );
    assert!(
        !check.passed,
        "the injected fault must make the configuration compute wrongly, or the next test proves nothing: {check:?}"
    );
    assert!(ctx.self_test().dropped.is_empty());
    assert_no_validation_messages(&ctx);
}

#[test]
fn the_self_test_drops_a_faulty_configuration_and_its_work_takes_the_next_path_on_matrix_units() {
    let config = f16_config();
    let ctx = faulty(true, PipelineCacheFile::Off);
    let mut rng = Rng::new(Rng::fresh_seed());
    // Every layout, sizes off every tile, alpha and beta: each a family of its own at first.
    for &(m, n, k) in &[(67, 45, 33), (1, 130, 17), (130, 3, 257)] {
        for layouts in LAYOUT_PAIRS {
            let options = GemmOptions {
                alpha: 1.5,
                beta: -0.5,
                ..Default::default()
            };
            let check = run_case::<f16, f16, f32>(&ctx, &mut rng, (m, n, k), layouts, 1, &options);
            assert!(check.passed, "{m}x{n}x{k} {layouts:?}: {check:?}");
        }
    }
    // Large enough for the workgroup-scope kernels where the device has them.
    let check = run_case::<f16, f16, f32>(
        &ctx,
        &mut rng,
        (520, 384, 136),
        LAYOUT_PAIRS[0],
        0,
        &GemmOptions::default(),
    );
    assert!(check.passed, "520x384x136: {check:?}");
    let report = ctx.self_test();
    assert!(report.on);
    let [dropped] = &report.dropped[..] else {
        panic!("one configuration dropped, not {:?}", report.dropped);
    };
    assert_eq!(dropped.config, config);
    assert!(
        dropped.kernel.starts_with("gemm_") && dropped.reason.contains("is exact"),
        "{dropped:?}"
    );
    assert!(
        !ctx.configs().contains(&config),
        "a dropped configuration is no longer offered"
    );
    // The planner no longer takes it, and asking for it by shape says there is none.
    let plan = ctx
        .plan::<f16, f16, f32>(&Matmul::new(), (256, 256, 256), (Layout::RowMajor, Layout::RowMajor))
        .expect("a plan on the next path");
    assert!(
        plan.config != config || Load::without_matrix_units(plan.main_kernel().loads),
        "{}",
        plan.kernel_name()
    );
    let shape = GemmOptions {
        shape: Some((config.m, config.n, config.k)),
        ..Default::default()
    };
    let (a, b) = (vec![f16::ONE; 64 * 64], vec![f16::ONE; 64 * 64]);
    let mut c = vec![0f32; 64 * 64];
    let err = ctx
        .run(
            &Matmul::with_options(&shape),
            MatRef::new(&a, 64, 64),
            MatRef::new(&b, 64, 64),
            MatMut::new(&mut c, 64, 64),
        )
        .unwrap_err();
    assert!(matches!(err, Error::NoConfig { .. }), "{err}");
    assert_no_validation_messages(&ctx);
}

#[test]
fn every_kind_of_work_on_a_faulty_configuration_comes_out_right_on_matrix_units() {
    let ctx = faulty(true, PipelineCacheFile::Off);
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (70, 45, 100);
    let a: Vec<f16> = common::ints(&mut rng, m * k);
    let b: Vec<f16> = common::ints(&mut rng, k * n);
    let bias: Vec<f32> = common::ints(&mut rng, n);
    let exact = |bias: Option<&[f32]>, relu: bool| -> Vec<f32> {
        (0..m * n)
            .map(|ij| {
                let (i, j) = (ij / n, ij % n);
                let dot: f32 = (0..k).map(|l| a[i * k + l].to_f32() * b[l * n + j].to_f32()).sum();
                let x = dot + bias.map_or(0.0, |v| v[j]);
                if relu {
                    x.max(0.0)
                } else {
                    x
                }
            })
            .collect()
    };
    // A fused epilogue, on device operands through a stream, and prepared once.
    let fused = Matmul::new().bias(Axis::Col, &bias).activation(Activation::Relu);
    let mut c = vec![f32::NAN; m * n];
    ctx.run(
        &fused,
        MatRef::new(&a, m, k),
        MatRef::new(&b, k, n),
        MatMut::new(&mut c, m, n),
    )
    .unwrap();
    assert_eq!(c, exact(Some(&bias), true), "fused");
    let (da, db) = (
        ctx.upload(MatRef::new(&a, m, k)).unwrap(),
        ctx.upload(MatRef::new(&b, k, n)).unwrap(),
    );
    let mut dc = ctx.zeros::<f32>(m, n).unwrap();
    let mut s = ctx.stream().unwrap();
    s.run(&Matmul::new(), &da, &db, &mut dc).unwrap();
    let out = s.download(&dc).unwrap();
    s.submit().unwrap();
    assert_eq!(out.wait().unwrap(), exact(None, false), "stream");
    let mut dc2 = ctx.zeros::<f32>(m, n).unwrap();
    let prepared = ctx.prepare(&Matmul::new(), &da, &db, &mut dc2).unwrap();
    prepared.run().unwrap();
    drop(prepared);
    let mut got = vec![0f32; m * n];
    ctx.download(&dc2, MatMut::new(&mut got, m, n)).unwrap();
    assert_eq!(got, exact(None, false), "prepared");
    // Grouped (both groups' weights B): the grouped kernel fails its own test too.
    let rows = [30, m - 30];
    let weights = [b.clone(), b.clone()].concat();
    let mut c = vec![f32::NAN; m * n];
    ctx.run(
        &Matmul::new().grouped(&rows),
        MatRef::new(&a, m, k),
        BatchRef::strided(MatRef::new(&weights, k, n), 2, k * n),
        MatMut::new(&mut c, m, n),
    )
    .unwrap();
    assert_eq!(c, exact(None, false), "grouped");
    // Sizes built into the kernel (workgroup scope, where the device has it): that pipeline is
    // tested at its own sizes.
    let options = GemmOptions {
        specialize: Some(true),
        ..Default::default()
    };
    let check = run_case::<f16, f16, f32>(&ctx, &mut rng, (300, 260, 200), LAYOUT_PAIRS[1], 0, &options);
    assert!(check.passed, "sizes built in: {check:?}");
    assert_eq!(ctx.self_test().dropped.len(), 1);
    assert_no_validation_messages(&ctx);
}

/// A fused and a grouped GEMM: each kernel's own pipeline runs its known-answer GEMM (whole
/// epilogue, two groups), so the self-test compiles nothing the GEMMs do not need.
#[test]
fn fused_and_grouped_kernels_are_tested_on_their_own_pipelines_on_matrix_units() {
    let ctx = healthy("the self-test of fused and grouped kernels");
    let mut rng = Rng::new(Rng::fresh_seed());
    let (rows, n, k) = ([30usize, 0, 41], 45, 100);
    let m: usize = rows.iter().sum();
    let a: Vec<f16> = common::ints(&mut rng, m * k);
    let w: Vec<f16> = common::ints(&mut rng, rows.len() * k * n);
    let bias: Vec<f32> = common::ints(&mut rng, rows.len() * n);
    let da = ctx.upload(MatRef::new(&a, m, k)).unwrap();
    let db = ctx.upload(MatRef::new(&w[..k * n], k, n)).unwrap();
    let dw = ctx
        .upload_batch(BatchRef::strided(MatRef::new(&w, k, n), rows.len(), k * n))
        .unwrap();
    let (mut dc, mut dg) = (ctx.zeros::<f32>(m, n).unwrap(), ctx.zeros::<f32>(m, n).unwrap());
    let fused = Matmul::new().bias(Axis::Col, &bias[..n]).activation(Activation::Relu);
    let grouped = Matmul::new().grouped(&rows).bias(Axis::Col, &bias);
    let mut kernels = Vec::new();
    {
        let one = ctx.prepare(&fused, &da, &db, &mut dc).unwrap();
        let all = ctx.prepare(&grouped, &da, &dw, &mut dg).unwrap();
        for plan in one.plans().chain(all.plans()) {
            kernels.extend(plan.kernels());
        }
        one.run().unwrap();
        all.run().unwrap();
    }
    kernels.sort_by_key(|k| format!("{k:?}"));
    kernels.dedup();
    let gemms = kernels.iter().filter(|k| matches!(k, Kernel::Gemm(_))).count();
    assert!(
        kernels.iter().any(|k| matches!(k, Kernel::Gemm(key) if key.grouped)),
        "{kernels:?}"
    );
    assert_eq!(ctx.self_test().tested, gemms, "{:?}", ctx.self_test());
    assert!(ctx.self_test().dropped.is_empty(), "{:?}", ctx.self_test());
    assert_eq!(
        ctx.pipeline_count(),
        kernels.len(),
        "a pipeline of the test's own: {kernels:?}"
    );
    // Both exact: integer operands, an integer bias, ReLU. The grouped GEMM's rows take
    // group 0's weight and bias, then group 2's (group 1 is empty).
    for (dev, grouped) in [(&dc, false), (&dg, true)] {
        let mut got = vec![0f32; m * n];
        ctx.download(dev, MatMut::new(&mut got, m, n)).unwrap();
        for (ij, &x) in got.iter().enumerate() {
            let (i, j) = (ij / n, ij % n);
            let g = if grouped && i >= rows[0] { 2 } else { 0 };
            let dot: f32 = (0..k)
                .map(|l| a[i * k + l].to_f32() * w[g * k * n + l * n + j].to_f32())
                .sum();
            let v = dot + bias[g * n + j];
            let want = if grouped { v } else { v.max(0.0) };
            assert_eq!(x, want, "grouped {grouped}: C[{i}][{j}]");
        }
    }
    assert_no_validation_messages(&ctx);
}

#[test]
fn a_kernel_with_sizes_built_in_passes_at_its_own_sizes_on_matrix_units() {
    let ctx = healthy("the self-test of kernels with sizes built in");
    let options = GemmOptions {
        specialize: Some(true),
        ..Default::default()
    };
    let mut rng = Rng::new(Rng::fresh_seed());
    for layouts in LAYOUT_PAIRS {
        let check = run_case::<f16, f16, f32>(&ctx, &mut rng, (300, 260, 200), layouts, 3, &options);
        assert!(check.passed, "{layouts:?}: {check:?}");
    }
    // Split-K's slices build in their own depth (on a device with workgroup-scope kernels):
    // 211 in three slices of whole K steps leaves a shallower last one, so two pipelines, each
    // tested at its sizes and checked here.
    // A workgroup-scope scheme of 128x128 tiles where the device has one (the planner's own
    // choice at this size may be subgroup scope).
    let cm2 = &ctx.device_info().cooperative_matrix2;
    let workgroup_scope = cm2.as_ref().is_some_and(|c| c.usable());
    let wg = workgroup_scope.then(|| {
        let config = f16_config();
        let limits = &ctx.device_info().limits;
        TileScheme::workgroup_for_limits(&config, limits, ctx.subgroup_size(), (2, 2), (4, 4), (2 * config.k, 1))
            .expect("a 128x128 workgroup-scope scheme")
    });
    let split = GemmOptions {
        split_k: Some(3),
        scheme: wg,
        ..options
    };
    let shape = (300, 260, 211);
    for layouts in LAYOUT_PAIRS {
        let plan = ctx
            .plan::<f16, f16, f32>(&Matmul::with_options(&split), shape, layouts)
            .unwrap();
        let depths: Vec<_> = plan
            .gemm_dispatches()
            .map(|d| match d.kernel {
                Kernel::Gemm(key) => key.fixed.map(|f| f.k),
                _ => None,
            })
            .collect();
        let built_in = wg.is_some();
        assert!(
            plan.is_split_k()
                && depths.len() == 3
                && (depths[0] != depths[2] && depths.iter().all(Option::is_some) || !built_in),
            "{layouts:?}: slices of depths {depths:?} on {}",
            plan.scheme.name()
        );
        let check = run_case::<f16, f16, f32>(&ctx, &mut rng, shape, layouts, 2, &split);
        assert!(check.passed, "split {layouts:?}: {check:?}");
    }
    let report = ctx.self_test();
    assert!(report.dropped.is_empty() && report.passed >= 1, "{report:?}");
    assert_no_validation_messages(&ctx);
}

#[test]
fn verdicts_are_kept_on_disk_and_a_damaged_file_is_rebuilt_on_matrix_units() {
    require_matrix_units(common::context(), "the self-test's verdicts");
    let dir = fresh_dir("verdicts");
    let open = || {
        Context::with_options(ContextOptions {
            validation: true,
            pipeline_cache: PipelineCacheFile::In(dir.clone()),
            ..Default::default()
        })
        .unwrap()
    };
    let gemm = |ctx: &Context| {
        let mut rng = Rng::new(Rng::fresh_seed());
        let check = run_case::<f16, f16, f32>(ctx, &mut rng, (33, 17, 9), LAYOUT_PAIRS[1], 0, &GemmOptions::default());
        assert!(check.passed, "{check:?}");
    };
    let first = open();
    assert_eq!(first.self_test().passed, 0, "a new directory holds no verdicts");
    gemm(&first);
    let report = first.self_test();
    let file = report.file.clone().expect("a verdict file beside the pipeline cache");
    assert!(report.passed >= 1 && report.dropped.is_empty(), "{report:?}");
    assert!(file.starts_with(&dir) && file.exists(), "{file:?}");
    drop(first);

    assert!(
        report.tested >= 1 && report.testing_time > std::time::Duration::ZERO,
        "{report:?}"
    );

    // A second context knows them before it runs anything, and tests nothing again.
    let second = open();
    assert_eq!(second.self_test().passed, report.passed);
    gemm(&second);
    assert_eq!(second.self_test().tested, 0, "{:?}", second.self_test());
    drop(second);

    // A damaged file is ignored whole, then written again by the next test.
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&file, &bytes).unwrap();
    let third = open();
    assert_eq!(third.self_test().passed, 0, "the damaged file must be ignored");
    gemm(&third);
    drop(third);
    assert!(open().self_test().passed >= 1, "the file is rebuilt");

    // Off: nothing is tested or written.
    let off = Context::with_options(ContextOptions {
        self_test: false,
        pipeline_cache: PipelineCacheFile::In(dir.clone()),
        ..Default::default()
    })
    .unwrap();
    assert!(!off.self_test().on);
    let _ = std::fs::remove_dir_all(&dir);
}
