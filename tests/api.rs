//! The public API on the present driver: typed errors for bad input (nothing is submitted, C is
//! left untouched), device-resident matrices, multi-pass plans under reduced limits, and the
//! free `gemm` on the default context.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{compare, reference, Rng};
use common::{assert_no_validation_messages, context, run_case};
use half::{bf16, f16};
use vk_sgmat::plan::DispatchLimits;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, ContextOptions, DeviceSelector, Error, GemmOptions, Layout, MatMut, MatRef};

fn err<T: std::fmt::Debug>(r: vk_sgmat::Result<T>) -> Error {
    r.expect_err("expected an error")
}

#[test]
fn bad_input_gets_typed_errors_and_c_is_untouched() {
    let ctx = context();
    let a = vec![f16::ONE; 4 * 5];
    let b = vec![f16::ONE; 6 * 3];
    let mut c = vec![42.0f32; 4 * 3];

    let e = err(ctx.run(
        &Matmul::new(),
        MatRef::new(&a, 4, 5),
        MatRef::new(&b, 6, 3),
        MatMut::new(&mut c, 4, 3),
    ));
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
    assert!(e.to_string().contains("A's columns must equal B's rows"), "{e}");

    let b2 = vec![f16::ONE; 5 * 3];
    let e = err(ctx.run(
        &Matmul::new(),
        MatRef::new(&a, 4, 5),
        MatRef::new(&b2, 5, 3),
        MatMut::new(&mut c, 3, 3),
    ));
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");

    let e = err(ctx.run(
        &Matmul::new(),
        MatRef::new(&a[..10], 4, 5),
        MatRef::new(&b2, 5, 3),
        MatMut::new(&mut c, 4, 3),
    ));
    assert!(
        matches!(
            e,
            Error::ShortSlice {
                matrix: "A",
                needed: 20,
                got: 10
            }
        ),
        "{e}"
    );

    let e = err(ctx.run(
        &Matmul::new(),
        MatRef::new(&a, 4, 5).with_ld(4),
        MatRef::new(&b2, 5, 3),
        MatMut::new(&mut c, 4, 3),
    ));
    assert!(
        matches!(
            e,
            Error::BadLeadingDimension {
                matrix: "A",
                ld: 4,
                min: 5
            }
        ),
        "{e}"
    );

    let e = err(ctx.run(
        &Matmul::new(),
        MatRef::new(&a, 4, 0),
        MatRef::new(&b2, 0, 3),
        MatMut::new(&mut c, 4, 3),
    ));
    assert!(matches!(e, Error::ZeroSize { k: 0, .. }), "{e}");

    let opts = GemmOptions {
        alpha: f64::NAN,
        ..Default::default()
    };
    let e = err(ctx.run(
        &Matmul::with_options(&opts),
        MatRef::new(&a, 4, 5),
        MatRef::new(&b2, 5, 3),
        MatMut::new(&mut c, 4, 3),
    ));
    assert!(matches!(e, Error::InvalidScalar { name: "alpha", .. }), "{e}");

    let opts = GemmOptions {
        shape: Some((3, 3, 3)),
        ..Default::default()
    };
    let e = err(ctx.run(
        &Matmul::with_options(&opts),
        MatRef::new(&a, 4, 5),
        MatRef::new(&b2, 5, 3),
        MatMut::new(&mut c, 4, 3),
    ));
    assert!(matches!(e, Error::NoConfig { .. }), "{e}");

    assert!(c.iter().all(|&v| v == 42.0), "C must not be written on error");

    let ai = vec![1i8; 4];
    let mut ci = vec![0i32; 4];
    let opts = GemmOptions {
        alpha: 0.5,
        ..Default::default()
    };
    let e = err(ctx.run(
        &Matmul::with_options(&opts),
        MatRef::new(&ai, 2, 2),
        MatRef::new(&ai, 2, 2),
        MatMut::new(&mut ci, 2, 2),
    ));
    assert!(matches!(e, Error::InvalidScalar { name: "alpha", .. }), "{e}");
    assert!(e.to_string().contains("integer"), "{e}");
    assert_no_validation_messages(ctx);
}

/// A type pair the device has no config for runs without matrix units; a fragment shape it
/// lacks is a typed error that lists what exists.
#[test]
fn a_type_pair_without_config_runs_without_matrix_units() {
    let ctx = context();
    let a = vec![bf16::ONE; 4];
    let mut c = vec![f32::NAN; 4];
    ctx.run(
        &Matmul::new(),
        MatRef::new(&a, 2, 2),
        MatRef::new(&a, 2, 2),
        MatMut::new(&mut c, 2, 2),
    )
    .expect("bf16 runs with or without a bf16 config");
    assert!(c.iter().all(|&v| v == 2.0), "{c:?}");
    let has_bf16 = ctx
        .configs()
        .iter()
        .any(|c| c.component_type == vk_sgmat::ComponentType::Bf16);
    let (route, config) = ctx
        .route_for(
            [
                vk_sgmat::ComponentType::Bf16,
                vk_sgmat::ComponentType::Bf16,
                vk_sgmat::ComponentType::F32,
            ],
            &GemmOptions::default(),
        )
        .unwrap();
    assert_eq!(
        has_bf16,
        route.loads == [vk_sgmat::kernel::Load::Native; 2],
        "{route:?} {config}"
    );

    let h = vec![f16::ONE; 4];
    let opts = GemmOptions {
        shape: Some((3, 3, 3)),
        ..Default::default()
    };
    let r = ctx.run(
        &Matmul::with_options(&opts),
        MatRef::new(&h, 2, 2),
        MatRef::new(&h, 2, 2),
        MatMut::new(&mut c, 2, 2),
    );
    let e = err(r);
    let msg = e.to_string();
    assert!(matches!(e, Error::NoConfig { .. }), "{msg}");
    assert!(msg.contains("f16 x f16 -> f32"), "{msg}");
    for cfg in ctx.configs() {
        assert!(msg.contains(&cfg.to_string()), "the message must list {cfg}: {msg}");
    }
    // f32 x f32 needs no f32 config: it runs on every device (the accurate split, or the exact
    // kernel), so a user's f32 matrices always multiply.
    let x = vec![1.0f32; 4];
    c.fill(f32::NAN);
    ctx.run(
        &Matmul::new(),
        MatRef::new(&x, 2, 2),
        MatRef::new(&x, 2, 2),
        MatMut::new(&mut c, 2, 2),
    )
    .expect("f32 x f32 runs on every device");
    assert!(c.iter().all(|&v| v == 2.0), "{c:?}");
}

#[test]
fn unknown_device_is_an_error_naming_the_devices() {
    let e = err(Context::with_options(ContextOptions {
        device: DeviceSelector::Name("no-such-gpu-anywhere".into()),
        ..Default::default()
    }));
    assert!(matches!(e, Error::DeviceNotFound { .. }), "{e}");
    assert!(e.to_string().contains(&context().device_info().name), "{e}");
}

#[test]
fn device_resident_matrices_run_many_gemms() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (70, 45, 33);
    let a: Vec<f16> = crate::verify::random_vec(&mut rng, m * k);
    let b: Vec<f16> = crate::verify::random_vec(&mut rng, n * k);
    let am = MatRef::new(&a, m, k);
    let bm = MatRef::col_major(&b, k, n);
    let da = ctx.upload(am).unwrap();
    let db = ctx.upload(bm).unwrap();
    let mut dc = ctx.zeros::<f32>(m, n).unwrap();
    // C = A*B, then C = A*B + C twice: 3 A*B.
    ctx.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)
        .unwrap();
    let acc = GemmOptions {
        beta: 1.0,
        ..Default::default()
    };
    ctx.run(&Matmul::with_options(&acc), &da, &db, &mut dc).unwrap();
    ctx.run(&Matmul::with_options(&acc), &da, &db, &mut dc).unwrap();
    let mut c = vec![f32::NAN; m * n];
    ctx.download(&dc, MatMut::new(&mut c, m, n)).unwrap();
    let rows: Vec<usize> = (0..m).collect();
    let (expected, magnitude) = reference::<f16, f16, f32>(&am, &bm, None, 3.0, 0.0, &rows);
    let check = compare(&c, n, n, &rows, &expected, &magnitude, 3 * k);
    assert!(check.passed, "{check:?}");
    // Round trip of an input matrix.
    let mut back = vec![f16::ZERO; n * k];
    ctx.download(&db, MatMut::new(&mut back, n, k)).unwrap();
    assert_eq!(back, b);
    // A column-major C works too (as C^T = B^T A^T): its storage is C's transpose.
    let mut col_c = ctx.upload(MatRef::col_major(&vec![f32::NAN; m * n], m, n)).unwrap();
    ctx.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut col_c)
        .unwrap();
    let mut ct = vec![f32::NAN; n * m];
    ctx.download(&col_c, MatMut::new(&mut ct, n, m)).unwrap();
    let (once, magnitude1) = reference::<f16, f16, f32>(&am, &bm, None, 1.0, 0.0, &rows);
    let c_rows: Vec<f32> = (0..m * n).map(|idx| ct[(idx % n) * m + idx / n]).collect();
    let check = compare(&c_rows, n, n, &rows, &once, &magnitude1, k);
    assert!(check.passed, "column-major C: {check:?}");
    assert_no_validation_messages(ctx);
}

/// A context whose dispatch limits are cut down so that GEMMs split into many passes (bands over
/// M and N, chunks over K that accumulate).
fn multi_pass_context() -> Context {
    let limits = DispatchLimits {
        max_groups: [2, 3, 4],
        max_range: 32 << 10,
        offset_alignment: 256,
        // Vulkan's guaranteed minimum maxMemoryAllocationSize.
        max_allocation: 1 << 30,
        // Vulkan's guaranteed minimum maxComputeSharedMemorySize.
        max_shared: 16 << 10,
    };
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        limits_override: Some(limits),
        ..Default::default()
    })
    .expect("context")
}

const MULTI_PASS_LAYOUTS: [(Layout, Layout); 4] = [
    (Layout::RowMajor, Layout::RowMajor),
    (Layout::RowMajor, Layout::ColMajor),
    (Layout::ColMajor, Layout::RowMajor),
    (Layout::ColMajor, Layout::ColMajor),
];

/// [`multi_pass_context`]'s plans run on a real driver and pass the reference.
#[test]
fn multi_pass_plans_are_correct() {
    let ctx = multi_pass_context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let layouts = MULTI_PASS_LAYOUTS;
    for (i, l) in layouts.into_iter().enumerate() {
        let shape = [(130, 150, 70), (67, 200, 45), (150, 66, 91), (97, 97, 97)][i];
        let plan = ctx
            .plan::<f16, f16, f32>(
                &Matmul::with_options(&GemmOptions::default()),
                (shape.0, shape.1, shape.2),
                l,
            )
            .unwrap();
        let passes = plan.gemm_dispatches().count();
        assert!(passes > 1, "{shape:?} {l:?}: expected a multi-pass plan, got {passes}");
        for opts in [
            GemmOptions::default(),
            GemmOptions {
                alpha: 0.5,
                beta: -1.0,
                ..Default::default()
            },
        ] {
            let check = run_case::<f16, f16, f32>(&ctx, &mut rng, shape, l, 5, &opts);
            assert!(check.passed, "{shape:?} {l:?} {opts:?}: {check:?}");
        }
        let check = run_case::<i8, i8, i32>(
            &ctx,
            &mut rng,
            shape,
            l,
            0,
            &GemmOptions {
                beta: 1.0,
                ..Default::default()
            },
        );
        assert!(check.passed, "i8 {shape:?} {l:?}: {check:?}");
    }
    // Column-major A with a long K: only chunks along K shrink its window.
    let plan = ctx
        .plan::<f16, f16, f32>(
            &Matmul::with_options(&GemmOptions::default()),
            (16, 16, 4000),
            (Layout::ColMajor, Layout::RowMajor),
        )
        .unwrap();
    assert!(
        plan.dispatches.iter().any(|d| d.after_previous),
        "a long K must be split into accumulating passes"
    );
    // Row-major A whose 16 rows of K = 4000 exceed the range cannot be split: a typed error.
    let e = ctx.plan::<f16, f16, f32>(
        &Matmul::with_options(&GemmOptions::default()),
        (16, 16, 4000),
        (Layout::RowMajor, Layout::RowMajor),
    );
    assert!(matches!(e, Err(Error::TooLarge(_))), "{e:?}");
    let check = run_case::<f16, f16, f32>(
        &ctx,
        &mut rng,
        (16, 16, 4000),
        (Layout::ColMajor, Layout::RowMajor),
        0,
        &GemmOptions::default(),
    );
    assert!(check.passed, "{check:?}");
    assert_no_validation_messages(&ctx);
}

/// [`multi_pass_context`]'s plans with copies first (f32 operands rounded to f16, operands
/// transposed) run on a real driver and pass the reference.
#[test]
fn multi_pass_copies_first_are_correct_on_matrix_units() {
    let ctx = multi_pass_context();
    common::require_matrix_units(&ctx, "operands rounded or transposed first");
    let mut rng = Rng::new(Rng::fresh_seed());
    let layouts = MULTI_PASS_LAYOUTS;
    // f32 operands converted first: copies in scratch, then the same multi-pass GEMM over them.
    let first = GemmOptions {
        compute: vk_sgmat::ComputeMode::FastF16,
        convert_first: Some(true),
        beta: 0.5,
        ..Default::default()
    };
    for l in layouts {
        // C (48000 bytes) over the 32 KiB window: bands on any device, whatever its tiles (a
        // GPU's cover a smaller C in one dispatch); A and B copies within it.
        let (m, n, k) = (60, 200, 40);
        let plan = ctx
            .plan::<f32, f32, f32>(&Matmul::with_options(&first), (m, n, k), l)
            .unwrap();
        let narrow = vk_sgmat::plan::Kernel::Narrow {
            to: vk_sgmat::ComponentType::F16,
        };
        assert!(plan.kernels().contains(&narrow), "{l:?}");
        assert!(plan.gemm_dispatches().count() > 1, "{l:?}: expected a multi-pass plan");
        let check = run_case::<f32, f32, f32>(&ctx, &mut rng, (m, n, k), l, 3, &first);
        assert!(check.passed, "f32 converted first {l:?}: {check:?}");
    }
    // Operands copied transposed first by two workgroups (each loops over several 64x64 tiles,
    // a barrier per tile), then the multi-pass GEMM over the copies.
    let relaid = GemmOptions {
        relayout: Some(true),
        alpha: -1.5,
        ..Default::default()
    };
    for l in layouts {
        let (m, n, k) = (150, 90, 70);
        let plan = ctx
            .plan::<f16, f16, f32>(&Matmul::with_options(&relaid), (m, n, k), l)
            .unwrap();
        let copies = plan
            .dispatches
            .iter()
            .filter(|d| matches!(d.kernel, vk_sgmat::plan::Kernel::Transpose { .. }))
            .count();
        let wrong = usize::from(l.0 == Layout::RowMajor) + usize::from(l.1 == Layout::ColMajor);
        assert_eq!(copies, wrong, "{l:?}");
        assert!(plan.gemm_dispatches().count() > 1, "{l:?}: expected a multi-pass plan");
        let check = run_case::<f16, f16, f32>(&ctx, &mut rng, (m, n, k), l, 3, &relaid);
        assert!(check.passed, "relaid {l:?}: {check:?}");
        let fast = GemmOptions {
            relayout: Some(true),
            ..first.clone()
        };
        let check = run_case::<f32, f32, f32>(&ctx, &mut rng, (60, 100, 40), l, 1, &fast);
        assert!(check.passed, "f32 converted first and relaid {l:?}: {check:?}");
    }
    // An f32 operand over one binding's range is not converted first: a typed error that says so.
    let big = ctx
        .plan::<f32, f32, f32>(&Matmul::with_options(&first), (130, 150, 70), layouts[0])
        .unwrap_err();
    assert!(
        matches!(big, vk_sgmat::Error::TooLarge(ref m) if m.contains("as it loads")),
        "{big}"
    );
    assert_no_validation_messages(&ctx);
}

#[test]
fn free_function_uses_the_default_context() {
    let (m, n, k) = (19, 23, 29);
    let a: Vec<u8> = (0..m * k).map(|i| (i % 251) as u8).collect();
    let b: Vec<u8> = (0..k * n).map(|i| (i % 13) as u8).collect();
    let mut c = vec![0u32; m * n];
    vk_sgmat::gemm(MatRef::new(&a, m, k), MatRef::new(&b, k, n), MatMut::new(&mut c, m, n)).unwrap();
    for (i, j) in [(0, 0), (m - 1, n - 1), (7, 11)] {
        let want: u32 = (0..k).map(|p| u32::from(a[i * k + p]) * u32::from(b[p * n + j])).sum();
        assert_eq!(c[i * n + j], want, "C[{i}][{j}]");
    }
}

/// Tuning is an explicit step: planning and running never time anything (the tuning file stays
/// unwritten). `Context::tune` times several schemes the first time a shape bucket is seen and
/// stores the winner keyed by the device; a later context reuses it without timing anything. A
/// corrupt file and a file from another device are ignored and replaced.
#[test]
fn autotune_stores_and_reuses_winners_on_matrix_units() {
    common::require_matrix_units(context(), "the autotuner choosing among their schemes");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("autotune-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tune.json");
    let _ = std::fs::remove_file(&path);
    let make = || {
        Context::with_options(ContextOptions {
            validation: true,
            poison_outputs: true,
            autotune: Some(path.clone()),
            ..Default::default()
        })
        .expect("context")
    };
    let mut rng = Rng::new(Rng::fresh_seed());
    let layouts = (Layout::RowMajor, Layout::ColMajor);
    let foreign = r#"{"format":1,"device_name":"x","device_uuid":"00","driver_version":1,"entries":[]}"#;
    let shape = (100, 90, 70);
    let untuned = make();
    let check = run_case::<f16, f16, f32>(&untuned, &mut rng, shape, layouts, 0, &GemmOptions::default());
    assert!(check.passed, "{check:?}");
    assert!(!path.exists(), "running a GEMM tuned it");
    drop(untuned);
    let mut stored = None;
    for old in [None, Some("not json"), Some(foreign)] {
        if let Some(text) = old {
            std::fs::write(&path, text).unwrap();
        }
        let ctx = make();
        ctx.tune::<f16, f16, f32>(&Matmul::new(), shape, layouts).unwrap();
        let check = run_case::<f16, f16, f32>(&ctx, &mut rng, shape, layouts, 0, &GemmOptions::default());
        assert!(check.passed, "{old:?}: {check:?}");
        assert!(
            ctx.pipeline_count() >= 2,
            "{old:?}: tuning a bucket should time several schemes, made {} pipelines",
            ctx.pipeline_count()
        );
        let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(file["device_uuid"], ctx.device_info().device_uuid.as_str(), "{file}");
        let entries = file["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 1, "{file}");
        assert_eq!(
            entries[0]["key"]["bucket"],
            serde_json::json!([128, 128, 128]),
            "{file}"
        );
        assert_eq!(entries[0]["key"]["layouts"], "nt", "{file}");
        stored = Some(serde_json::from_value::<vk_sgmat::tiling::TileScheme>(entries[0]["scheme"].clone()).unwrap());
        assert_no_validation_messages(&ctx);
    }
    // Another shape of the same bucket, in a new context: the stored winner, no timing.
    let ctx = make();
    let key = ctx
        .plan::<f16, f16, f32>(&Matmul::with_options(&GemmOptions::default()), (120, 70, 100), layouts)
        .unwrap()
        .main_kernel();
    assert_eq!(Some(key.scheme), stored);
    let check = run_case::<f16, f16, f32>(&ctx, &mut rng, (120, 70, 100), layouts, 0, &GemmOptions::default());
    assert!(check.passed, "{check:?}");
    assert_eq!(ctx.pipeline_count(), 1, "a stored winner needs no timing");
    assert_no_validation_messages(&ctx);
}

/// Workgroup-scope (VK_NV_cooperative_matrix2) schemes: where the device offers them, each of the
/// candidates it lists computes correct results on odd shapes in every layout; where it does not
/// (lavapipe: no workgroup scope, no tensor addressing), asking for one is a typed error that
/// names what is missing, raised before anything runs.
#[test]
fn workgroup_scope_schemes_run_where_offered_and_are_refused_elsewhere_on_matrix_units() {
    common::require_matrix_units(context(), "workgroup-scope schemes");
    use vk_sgmat::tiling::{KernelScope, TileScheme};
    use vk_sgmat::ComponentType::{F16, F32};
    let ctx = context();
    let config = ctx.choose_config(F16, F32, None).unwrap();
    let offered = ctx
        .device_info()
        .cooperative_matrix2
        .as_ref()
        .is_some_and(|c| !c.workgroup_entries(&config).is_empty());
    let wg: Vec<TileScheme> = ctx
        .schemes(&config)
        .into_iter()
        .filter(|s| s.scope() == KernelScope::Workgroup)
        .collect();
    assert_eq!(offered, !wg.is_empty(), "{wg:?}");
    if offered {
        let mut rng = Rng::new(Rng::fresh_seed());
        for scheme in [wg[0], wg[wg.len() - 1]] {
            let options = GemmOptions {
                scheme: Some(scheme),
                alpha: 0.5,
                beta: -1.0,
                ..Default::default()
            };
            for layouts in [
                (Layout::RowMajor, Layout::RowMajor),
                (Layout::ColMajor, Layout::ColMajor),
            ] {
                let check = run_case::<f16, f16, f32>(ctx, &mut rng, (131, 67, 37), layouts, 3, &options);
                assert!(check.passed, "{} {layouts:?}: {check:?}", scheme.name());
            }
        }
    } else {
        let scheme = TileScheme::workgroup_for_limits(
            &config,
            &ctx.device_info().limits,
            ctx.subgroup_size(),
            (1, 4),
            (4, 1),
            (4 * config.k, 1),
        )
        .unwrap();
        let a = vec![f16::ONE; 8 * 8];
        let mut c = vec![42.0f32; 8 * 8];
        let options = GemmOptions {
            scheme: Some(scheme),
            ..Default::default()
        };
        let e = err(ctx.run(
            &Matmul::with_options(&options),
            MatRef::new(&a, 8, 8),
            MatRef::new(&a, 8, 8),
            MatMut::new(&mut c, 8, 8),
        ));
        let msg = e.to_string();
        assert!(
            matches!(e, Error::Unsupported(_))
                && msg.contains("VK_NV_cooperative_matrix2")
                && msg.contains("cooperativeMatrixWorkgroupScope"),
            "{msg}"
        );
        assert!(c.iter().all(|&x| x == 42.0), "C was written");
    }
    assert_no_validation_messages(ctx);
}

/// Float operands with an integer C: one typed error in every mode, which says what float and
/// integer operands give, and names no mode that would write the integer type.
#[test]
fn float_operands_into_an_integer_c_say_what_is_supported() {
    let ctx = context();
    let (m, n, k) = (5, 4, 3);
    let (a, b) = (vec![1.0f32; m * k], vec![1.0f32; k * n]);
    let (ah, bh) = (vec![f16::ONE; m * k], vec![f16::ONE; k * n]);
    for compute in [
        vk_sgmat::ComputeMode::Accurate,
        vk_sgmat::ComputeMode::FastF16,
        vk_sgmat::ComputeMode::FastBf16,
        vk_sgmat::ComputeMode::Exact,
    ] {
        let options = GemmOptions {
            compute,
            ..Default::default()
        };
        let mut c = vec![7i32; m * n];
        let e = ctx
            .run(
                &Matmul::with_options(&options),
                MatRef::new(&a, m, k),
                MatRef::new(&b, k, n),
                MatMut::new(&mut c, m, n),
            )
            .unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, Error::Unsupported(_)) && text.contains("i8 or u8") && !text.contains("write i32"),
            "{compute:?}: {e}"
        );
        let mut c = vec![7u32; m * n];
        let e = ctx
            .run(
                &Matmul::with_options(&options),
                MatRef::new(&ah, m, k),
                MatRef::new(&bh, k, n),
                MatMut::new(&mut c, m, n),
            )
            .unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "f16 into u32, {compute:?}: {e}");
        assert!(c.iter().all(|&x| x == 7), "a refused call wrote C");
    }
}
