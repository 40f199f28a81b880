//! GEMMs planned as small GPUs would plan them (issue 49): the device's compute limits
//! tightened to 16 and 32 KiB of shared memory and 256 invocations per workgroup, or its
//! 16-bit storage taken away (`ContextOptions::compute_limits`). Every plan's kernels fit those
//! limits, and the GEMM families pass the f64 reference under the validation layer, with and
//! without matrix units; 16-bit results without 16-bit storage are a typed error.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, run_case, LAYOUT_PAIRS};
use half::f16;
use vk_sgmat::device::ComputeLimits;
use vk_sgmat::plan::Kernel;
use vk_sgmat::{
    ComponentType, Context, ContextOptions, Element, Error, Fused, GemmOptions, Layout, MatMut, MatRef, Matmul,
};

fn small(shared: u32, matrix_units: bool) -> Context {
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        matrix_units,
        compute_limits: Some(ComputeLimits {
            max_shared_memory: shared,
            max_workgroup_invocations: 256,
            storage_buffer_16bit_access: true,
        }),
        ..Default::default()
    })
    .expect("a Vulkan device and the validation layer (the cargo runner provides lavapipe)")
}

/// Asserts that every GEMM kernel of the plan fits the context's limits.
fn assert_fits<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    shape: (usize, usize, usize),
    l: (Layout, Layout),
) {
    let limits = &ctx.device_info().limits;
    let plan = ctx.plan::<TA, TB, TC>(&Matmul::new(), shape, l).unwrap();
    for d in &plan.dispatches {
        if let Kernel::Gemm(key) = d.kernel {
            let g = key.scheme.geometry(&key.tile_config());
            assert!(
                g.shared_bytes <= limits.max_shared_memory && g.threads <= limits.max_workgroup_invocations,
                "{}: {} bytes, {} invocations over {limits:?}",
                key.name(),
                g.shared_bytes,
                g.threads
            );
        }
    }
}

/// alpha 2 and beta 1: exact scalings every type holds.
fn scaled() -> GemmOptions {
    GemmOptions {
        alpha: 2.0,
        beta: 1.0,
        ..Default::default()
    }
}

fn families(ctx: &Context) {
    let mut rng = Rng::new(Rng::fresh_seed());
    let scaled = scaled();
    for (i, shape) in [(67, 45, 33), (130, 129, 257), (1, 200, 65)].into_iter().enumerate() {
        let l = LAYOUT_PAIRS[i % LAYOUT_PAIRS.len()];
        assert_fits::<f16, f16, f32>(ctx, shape, l);
        assert_fits::<i8, i8, i32>(ctx, shape, l);
        let checks = [
            run_case::<f16, f16, f32>(ctx, &mut rng, shape, l, 3, &scaled),
            run_case::<f32, f32, f32>(ctx, &mut rng, shape, l, 0, &GemmOptions::default()),
            run_case::<i8, i8, i32>(ctx, &mut rng, shape, l, 0, &scaled),
            run_case::<f16, f16, f16>(ctx, &mut rng, shape, l, 0, &GemmOptions::default()),
        ];
        for c in checks {
            assert!(c.passed, "{shape:?} {l:?}: {c:?}");
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn sixteen_kib_of_shared_memory() {
    let ctx = small(16 << 10, true);
    assert!(ctx.device_info().limits.max_shared_memory <= 16 << 10);
    families(&ctx);
}

#[test]
fn thirty_two_kib_of_shared_memory() {
    families(&small(32 << 10, true));
}

#[test]
fn sixteen_kib_without_matrix_units() {
    families(&small(16 << 10, false));
}

/// A device without 16-bit storage: beside a cooperative-matrix device's configs (its f16 ones
/// filtered out, i8 kept), or on the kernels without matrix units alone (the CI tiers without
/// them, where the configs of unusable matrix units must not come back).
#[test]
fn without_16bit_storage() {
    let ctx = Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        compute_limits: Some(ComputeLimits {
            max_shared_memory: u32::MAX,
            max_workgroup_invocations: u32::MAX,
            storage_buffer_16bit_access: false,
        }),
        ..Default::default()
    })
    .expect("a Vulkan device and the validation layer (the cargo runner provides lavapipe)");
    assert!(!ctx.device_info().features.storage_buffer_16bit_access);
    let f16 = ComponentType::F16;
    assert!(
        ctx.configs()
            .iter()
            .all(|c| c.component_type != f16 && c.result_type != f16),
        "f16 configs need 16-bit storage: {:?}",
        ctx.configs()
    );
    let mut rng = Rng::new(Rng::fresh_seed());
    let scaled = scaled();
    // f16 and bf16 operands read as 32-bit words; 8-bit ones on their configs; decode's shapes.
    for (i, shape) in [(67, 45, 33), (1, 200, 65), (130, 3, 129)].into_iter().enumerate() {
        let l = LAYOUT_PAIRS[i % LAYOUT_PAIRS.len()];
        let checks = [
            run_case::<f16, f16, f32>(&ctx, &mut rng, shape, l, 3, &scaled),
            run_case::<half::bf16, half::bf16, f32>(&ctx, &mut rng, shape, l, 0, &GemmOptions::default()),
            run_case::<f16, f32, f32>(&ctx, &mut rng, shape, l, 0, &GemmOptions::default()),
            run_case::<f32, f32, f32>(&ctx, &mut rng, shape, l, 0, &GemmOptions::default()),
            run_case::<i8, i8, i32>(&ctx, &mut rng, shape, l, 0, &scaled),
        ];
        for c in checks {
            assert!(c.passed, "{shape:?} {l:?}: {c:?}");
        }
    }
    // A 16-bit result needs the feature: a typed error that says so, before the GPU.
    let (m, n, k) = (33, 17, 9);
    let (a, b) = (vec![f16::ONE; m * k], vec![f16::ONE; k * n]);
    let mut c = vec![f16::ZERO; m * n];
    let err = ctx
        .run(
            &Matmul::new(),
            MatRef::new(&a, m, k),
            MatRef::new(&b, k, n),
            MatMut::new(&mut c, m, n),
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::Unsupported(_)) && err.to_string().contains("storageBuffer16BitAccess"),
        "{err}"
    );
    // Integer products dequantised into an f16 C on the matrix units store 16-bit values too.
    let (ai, bi) = (vec![1i8; m * k], vec![1i8; k * n]);
    let (rows, cols) = (vec![0.5f32; m], vec![2.0f32; n]);
    let dequant = Fused::new().scales(&rows, &cols);
    let result = ctx.run(
        &Matmul::new().fused(&dequant),
        MatRef::new(&ai, m, k),
        MatRef::new(&bi, k, n),
        MatMut::new(&mut c, m, n),
    );
    match result {
        Ok(()) => assert!(c.iter().all(|&x| x.to_f32() == k as f32), "{c:?}"),
        Err(err) => assert!(err.to_string().contains("storageBuffer16BitAccess"), "{err}"),
    }
    // An f32 C from the same dequantised product works.
    let mut c32 = vec![0f32; m * n];
    ctx.run(
        &Matmul::new().fused(&dequant),
        MatRef::new(&ai, m, k),
        MatRef::new(&bi, k, n),
        MatMut::new(&mut c32, m, n),
    )
    .unwrap();
    assert!(c32.iter().all(|&x| x == k as f32), "{c32:?}");
    assert_no_validation_messages(&ctx);
}
