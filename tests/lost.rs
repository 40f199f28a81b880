//! A context that cannot go on says so: after a submission outlived
//! [`ContextOptions::gpu_timeout`] (as a hung GPU's would), every later call is the same typed
//! error at once, never another wait; a new context works. And planning is pure: a plan of any
//! size compiles nothing and runs nothing.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{compare, reference, Rng};
use common::{context, ints};
use half::f16;
use std::time::{Duration, Instant};
use vk_sgmat::device::DeviceKind;
use vk_sgmat::{Context, ContextOptions, Error, Layout, MatMut, MatRef, Matmul};

#[test]
fn a_timed_out_context_refuses_every_later_call_and_a_new_one_works() {
    let hung = Context::with_options(ContextOptions {
        gpu_timeout: Duration::ZERO,
        ..Default::default()
    })
    .unwrap();
    // Work the device cannot finish between its submission and the wait (lavapipe takes
    // milliseconds for this shape; a GPU one some hundred times larger).
    let (m, n, k) = match hung.device_info().kind {
        DeviceKind::Cpu => (256, 256, 2048),
        _ => (4096, 4096, 4096),
    };
    let mut rng = Rng::new(Rng::fresh_seed());
    let a: Vec<f16> = ints(&mut rng, m * k);
    let b: Vec<f16> = ints(&mut rng, k * n);
    let mut c = vec![0f32; m * n];
    let op = Matmul::new();
    let e = hung
        .run(
            &op,
            MatRef::new(&a, m, k),
            MatRef::new(&b, k, n),
            MatMut::new(&mut c, m, n),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::GpuTimeout { timeout } if timeout == Duration::ZERO),
        "{e}"
    );
    assert!(e.to_string().contains("make a new Context"), "{e}");
    // Every later call of the context: the same error, before anything is recorded.
    let small: Vec<f16> = ints(&mut rng, 4 * 4);
    let mut out = vec![0f32; 16];
    let again = hung.run(
        &op,
        MatRef::new(&small, 4, 4),
        MatRef::new(&small, 4, 4),
        MatMut::new(&mut out, 4, 4),
    );
    assert!(matches!(again, Err(Error::GpuTimeout { .. })), "{again:?}");
    assert!(matches!(
        hung.upload(MatRef::new(&small, 4, 4)),
        Err(Error::GpuTimeout { .. })
    ));
    assert!(matches!(hung.zeros::<f32>(4, 4), Err(Error::GpuTimeout { .. })));
    let mut s = hung.stream().unwrap();
    assert!(matches!(
        s.upload(MatRef::new(&small, 4, 4)),
        Err(Error::GpuTimeout { .. })
    ));
    drop(s);
    // A new context on the same device runs, and right.
    let fresh = context();
    let (m, n, k) = (37, 29, 53);
    let a: Vec<f16> = ints(&mut rng, m * k);
    let b: Vec<f16> = ints(&mut rng, k * n);
    let mut c = vec![0f32; m * n];
    let (ar, br) = (MatRef::new(&a, m, k), MatRef::new(&b, k, n));
    fresh.run(&op, ar, br, MatMut::new(&mut c, m, n)).unwrap();
    let rows: Vec<usize> = (0..m).collect();
    let (want, magnitude) = reference::<f16, f16, f32>(&ar, &br, None, 1.0, 0.0, &rows);
    let check = compare(&c, n, n, &rows, &want, &magnitude, k);
    assert!(check.passed, "{check:?}");
    // The timed-out submission still runs on the device, and nothing may wait for it: a process
    // that exits under it can crash the driver (lavapipe's threads outlived its teardown in a
    // CI run: SIGSEGV after every test had passed). Give it far longer than it takes.
    std::thread::sleep(Duration::from_secs(3));
}

/// Planning a 16384^3 f16 GEMM allocates nothing, compiles no pipeline and runs nothing: the
/// context's pipeline count stays as it was. The first plan of a config builds its scheme lists
/// once per context (pure host work); after that a plan takes well under a millisecond.
#[test]
fn planning_compiles_nothing_and_runs_nothing() {
    let ctx = Context::with_options(ContextOptions {
        pipeline_cache: vk_sgmat::PipelineCacheFile::Off,
        ..Default::default()
    })
    .unwrap();
    let before = ctx.pipeline_count();
    let op = Matmul::new();
    let n = 16384;
    let layouts = [
        (Layout::RowMajor, Layout::RowMajor),
        (Layout::RowMajor, Layout::ColMajor),
        (Layout::ColMajor, Layout::ColMajor),
    ];
    let started = Instant::now();
    for l in layouts {
        let plan = ctx.plan::<f16, f16, f32>(&op, (n, n, n), l).unwrap();
        assert!(!plan.dispatches.is_empty());
    }
    let first = started.elapsed();
    let mut each = Vec::new();
    for _ in 0..20 {
        for l in layouts {
            let t = Instant::now();
            ctx.plan::<f16, f16, f32>(&op, (n, n, n), l).unwrap();
            each.push(t.elapsed());
        }
    }
    each.sort();
    let median = each[each.len() / 2];
    eprintln!("16384^3 f16 plans: first three {first:?} (scheme lists built), then a median of {median:?}");
    assert_eq!(ctx.pipeline_count(), before, "planning created pipelines");
    assert!(median < Duration::from_millis(1), "a plan took {median:?}");
}
