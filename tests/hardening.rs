//! Untrusted input on the present driver: tile schemes built from arbitrary fields, autotune files
//! with damaged entries, option values out of range. Each is a typed error or an exact result.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{run_random_gemm, run_random_gemm_c, Rng};
use common::{assert_no_validation_messages, capped_context, context};
use half::f16;
use proptest::prelude::*;
use vk_sgmat::plan::DispatchLimits;
use vk_sgmat::tiling::TileScheme;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, ContextOptions, Error, GemmOptions, Layout, MatMut, MatRef, MAX_SPLIT_K};

proptest! {
    // Every valid case compiles a pipeline, which lavapipe does slowly: few cases, small fields.
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    /// A scheme from arbitrary fields either runs an i8 GEMM exactly or is refused with a typed
    /// error before anything is submitted.
    #[test]
    fn arbitrary_schemes_give_exact_results_or_typed_errors_on_matrix_units(
        sg in (1u32..=2, 1u32..=3),
        fr in (1u32..=3, 1u32..=2),
        k_mult in 1u32..=4,
        pad in prop_oneof![Just(0u32), Just(16), Just(8), Just(1 << 31)],
        stages in 1u32..=3,
        raster in prop_oneof![Just(0u32), Just(3), Just(1 << 20)],
        shape in (1usize..80, 1usize..80, 1usize..80),
        b_col in any::<bool>(),
    ) {
        let ctx = context();
        common::require_matrix_units(ctx, "arbitrary tile schemes");
        let config = ctx.choose_config(vk_sgmat::ComponentType::I8, vk_sgmat::ComponentType::I32, None).unwrap();
        let json = serde_json::json!({
            "subgroup_size": ctx.subgroup_size(), "sg_m": sg.0, "sg_n": sg.1, "fr_m": fr.0, "fr_n": fr.1,
            "k_step": k_mult * config.k, "pad_bytes": pad, "stages": stages, "raster_group": raster,
        });
        let Ok(scheme) = serde_json::from_value::<TileScheme>(json) else {
            prop_assert!(pad % 16 != 0 || pad > 256 || raster > 16 || stages > 2, "refused a scheme within bounds");
            return Ok(());
        };
        let options = GemmOptions { scheme: Some(scheme), beta: 1.0, ..Default::default() };
        let layouts = (Layout::RowMajor, if b_col { Layout::ColMajor } else { Layout::RowMajor });
        let mut rng = Rng::new(Rng::fresh_seed());
        match run_random_gemm::<i8, i8, i32>(ctx, &mut rng, shape, layouts, 0, &options, usize::MAX) {
            Ok(check) => prop_assert!(check.passed, "{} {shape:?}: {check:?}", scheme.name()),
            Err(e) => prop_assert!(matches!(e, Error::InvalidTileScheme(_)), "{}: {e}", scheme.name()),
        }
        assert_no_validation_messages(ctx);
    }
}

/// An autotune file is untrusted: an entry outside the scheme bounds is dropped when read, one the
/// device cannot run is dropped when looked up; either way the bucket is tuned again and the
/// result is right.
#[test]
fn damaged_autotune_entries_are_dropped_and_retuned_on_matrix_units() {
    common::require_matrix_units(context(), "the autotuner");
    let path = std::env::temp_dir().join(format!("vk-sgmat-hardening-{}.json", std::process::id()));
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
    let layouts = (Layout::RowMajor, Layout::RowMajor);
    let shape = (70, 60, 50);
    let run = |ctx: &Context, rng: &mut Rng| {
        ctx.tune::<f16, f16, f32>(&Matmul::new(), shape, layouts).unwrap();
        let check =
            run_random_gemm::<f16, f16, f32>(ctx, rng, shape, layouts, 0, &GemmOptions::default(), usize::MAX).unwrap();
        assert!(check.passed, "{check:?}");
        assert_no_validation_messages(ctx);
    };
    run(&make(), &mut rng);
    let good: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let subgroup_size = good["entries"][0]["scheme"]["subgroup_size"].as_u64().unwrap();
    // Out of bounds (pad of 2^31 bytes: wrong results before), then within bounds but a subgroup
    // size the device cannot pin.
    for (field, value) in [("pad_bytes", 1u64 << 31), ("subgroup_size", subgroup_size * 2)] {
        let mut damaged = good.clone();
        damaged["entries"][0]["scheme"][field] = value.into();
        std::fs::write(&path, serde_json::to_vec(&damaged).unwrap()).unwrap();
        let ctx = make();
        run(&ctx, &mut rng);
        assert!(
            ctx.pipeline_count() >= 2,
            "{field}: a dropped entry is tuned again ({} pipelines)",
            ctx.pipeline_count()
        );
        let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let scheme = serde_json::from_value::<TileScheme>(file["entries"][0]["scheme"].clone()).unwrap();
        assert_eq!(u64::from(scheme.subgroup_size()), subgroup_size, "{field}: {file}");
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn options_out_of_range_are_typed_errors() {
    let ctx = context();
    let a = vec![f16::ONE; 16 * 16];
    let mut c = vec![42.0f32; 16 * 16];
    for split_k in [0, MAX_SPLIT_K + 1, u32::MAX] {
        let options = GemmOptions {
            split_k: Some(split_k),
            ..Default::default()
        };
        let e = ctx
            .run(
                &Matmul::with_options(&options),
                MatRef::new(&a, 16, 16),
                MatRef::new(&a, 16, 16),
                MatMut::new(&mut c, 16, 16),
            )
            .unwrap_err();
        assert!(
            matches!(e, Error::InvalidOption(_)) && e.to_string().contains("split_k"),
            "{e}"
        );
    }
    assert!(c.iter().all(|&x| x == 42.0), "C was written");
    let device = DispatchLimits::from_device(&ctx.device_info().limits);
    let looser = [
        DispatchLimits {
            offset_alignment: 0,
            ..device
        },
        DispatchLimits {
            offset_alignment: 24,
            ..device
        },
        DispatchLimits {
            max_groups: [0, 1, 1],
            ..device
        },
        DispatchLimits {
            max_range: device.max_range + 1,
            ..device
        },
        DispatchLimits {
            max_allocation: 1000,
            ..device
        },
    ];
    for limits in looser {
        let e = Context::with_options(ContextOptions {
            limits_override: Some(limits),
            ..Default::default()
        })
        .unwrap_err();
        assert!(
            matches!(e, Error::InvalidOption(_)) && e.to_string().contains("limits_override"),
            "{limits:?}: {e}"
        );
    }
    assert_no_validation_messages(ctx);
}

/// Host operands larger than one allocation run in pieces (issue 14 section 2). A 4 KiB limit
/// stands in for the H200's 4 GiB: every case below has an operand over it, cut along rows (a
/// tall A), columns (a wide B), C's longer side, or K (one row of A over the limit, the later
/// pieces adding to C), in every layout of A, B and C, with alpha and beta; i8 results are exact.
/// A device matrix over the limit is a typed error.
#[test]
fn host_operands_over_the_allocation_limit_run_in_pieces() {
    let ctx = capped_context(4096);
    let mut rng = Rng::new(Rng::fresh_seed());
    let options = GemmOptions {
        alpha: 3.0,
        beta: -2.0,
        ..Default::default()
    };
    let layouts = [Layout::RowMajor, Layout::ColMajor];
    let cases = [
        ((300, 20, 50), true),
        ((20, 300, 50), true),
        ((200, 150, 8), true),
        ((37, 41, 5000), false),
    ];
    for (shape, every_layout) in cases {
        for la in layouts {
            for lb in layouts {
                for lc in layouts {
                    if !every_layout && lb != lc {
                        continue; // K pieces take many submissions: fewer layouts.
                    }
                    let check =
                        run_random_gemm_c::<i8, i8, i32>(&ctx, &mut rng, shape, (la, lb, lc), 0, &options, usize::MAX)
                            .unwrap_or_else(|e| panic!("{shape:?} {la:?} {lb:?} {lc:?}: {e}"));
                    assert!(check.passed, "{shape:?} {la:?} {lb:?} {lc:?}: {check:?}");
                }
            }
        }
    }
    // Floats: K pieces accumulate in an f32 C within the usual bound.
    let check = run_random_gemm::<f16, f16, f32>(
        &ctx,
        &mut rng,
        (33, 17, 3000),
        (Layout::RowMajor, Layout::ColMajor),
        0,
        &options,
        usize::MAX,
    )
    .unwrap();
    assert!(check.passed, "f16 K pieces: {check:?}");
    let e = ctx.zeros::<f32>(64, 64).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge(_)) && e.to_string().contains("allocation limit of 4096"),
        "{e}"
    );
    assert_no_validation_messages(&ctx);
}
