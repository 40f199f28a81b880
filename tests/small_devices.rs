//! GEMMs planned as small GPUs would plan them (issue 49): the device's compute limits
//! tightened to 16 and 32 KiB of shared memory and 256 invocations per workgroup
//! (`ContextOptions::compute_limits`). Every plan's kernels fit those limits, and the GEMM
//! families pass the f64 reference under the validation layer, with and without matrix units.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, run_case};
use half::f16;
use vk_sgmat::device::ComputeLimits;
use vk_sgmat::plan::Kernel;
use vk_sgmat::{Context, ContextOptions, Element, GemmOptions, Layout, Matmul};

fn small(shared: u32, matrix_units: bool) -> Context {
    Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        matrix_units,
        compute_limits: Some(ComputeLimits {
            max_shared_memory: shared,
            max_workgroup_invocations: 256,
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

fn families(ctx: &Context) {
    let mut rng = Rng::new(Rng::fresh_seed());
    let layouts = [
        (Layout::RowMajor, Layout::RowMajor),
        (Layout::RowMajor, Layout::ColMajor),
        (Layout::ColMajor, Layout::RowMajor),
        (Layout::ColMajor, Layout::ColMajor),
    ];
    let scaled = GemmOptions {
        alpha: 2.0,
        beta: 1.0,
        ..Default::default()
    };
    for (i, shape) in [(67, 45, 33), (130, 129, 257), (1, 200, 65)].into_iter().enumerate() {
        let l = layouts[i % layouts.len()];
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
