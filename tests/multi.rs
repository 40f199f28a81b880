//! One GEMM over several devices. Several contexts on the present driver stand in for several
//! GPUs (each context its own logical device, queues and memory), so the cut, the transfers, the
//! gather and the failure path all run for real. Inputs are small integers: every result is
//! exact and compared exactly against the f64 reference.

mod common;

use common::{assert_no_validation_messages, capped_context};
use half::f16;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use vk_sgmat::device::{DeviceKind, Instance, InstanceOptions};
use vk_sgmat::verify::{reference, Rng};
use vk_sgmat::{
    Context, ContextOptions, DeviceSet, Element, Error, GemmOptions, Layout, MatMut, MatRef, MultiContext,
    PinnedMatrix, PipelineStep, Role, SplitKind,
};

/// Four contexts on the device, validation on and outputs poisoned; shared by the tests
/// (lavapipe compiles pipelines slowly).
fn contexts() -> &'static [Arc<Context>] {
    static CTXS: OnceLock<Vec<Arc<Context>>> = OnceLock::new();
    CTXS.get_or_init(|| {
        (0..4)
            .map(|_| {
                let options = ContextOptions {
                    validation: true,
                    poison_outputs: true,
                    ..Default::default()
                };
                Arc::new(Context::with_options(options).unwrap_or_else(|e| {
                    panic!("these tests need a usable Vulkan device (run them through cargo: the runner provisions lavapipe): {e}")
                }))
            })
            .collect()
    })
}

fn multi(n: usize, weights: &[f64]) -> MultiContext {
    MultiContext::with_weights(contexts()[..n].to_vec(), weights.to_vec()).unwrap()
}

fn no_messages() {
    for c in contexts() {
        assert_no_validation_messages(c);
    }
}

/// Integers in -3..=3 stored `layout` (dense): exact in f16, and every sum below is exact in f32.
fn small_ints<T: Element>(rng: &mut Rng, rows: usize, cols: usize) -> Vec<T> {
    (0..rows * cols)
        .map(|_| T::from_f64((rng.next_u64() % 7) as f64 - 3.0))
        .collect()
}

fn view<T>(data: &[T], rows: usize, cols: usize, layout: Layout) -> MatRef<'_, T> {
    match layout {
        Layout::RowMajor => MatRef::new(data, rows, cols),
        Layout::ColMajor => MatRef::col_major(data, rows, cols),
    }
}

/// Checks row-major `got` (m x n) against alpha*A*B + beta*C_in exactly.
fn assert_exact<TA: Element, TB: Element>(
    (a, b): (MatRef<'_, TA>, MatRef<'_, TB>),
    c_in: Option<&[f32]>,
    (alpha, beta): (f64, f64),
    got: &[f32],
    what: &str,
) {
    let (m, n) = (a.rows, b.cols);
    let rows: Vec<usize> = (0..m).collect();
    let (want, _) = reference(&a, &b, c_in.map(|c| (c, n)), alpha, beta, &rows);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(f64::from(g), w, "{what}: C[{}][{}]", i / n, i % n);
    }
}

#[test]
fn host_gemm_over_two_contexts_with_uneven_shares_is_exact() {
    let mc = multi(2, &[1.0, 3.0]);
    let mut rng = Rng::new(Rng::fresh_seed());
    for &(m, n, k) in &[(1, 1, 1), (67, 45, 33), (523, 131, 97), (1031, 7, 19), (5, 1100, 64)] {
        for la in [Layout::RowMajor, Layout::ColMajor] {
            for lb in [Layout::RowMajor, Layout::ColMajor] {
                let a = small_ints::<f16>(&mut rng, m, k);
                let b = small_ints::<f16>(&mut rng, k, n);
                let (av, bv) = (view(&a, m, k, la), view(&b, k, n, lb));
                let mut c = vec![f32::NAN; m * n];
                mc.gemm(av, bv, MatMut::new(&mut c, m, n)).unwrap();
                assert_exact((av, bv), None, (1.0, 0.0), &c, &format!("{m}x{n}x{k} {la:?} {lb:?}"));
            }
        }
    }
    // Both devices took part where the cut leaves each a band.
    let s = mc.split::<f16, f16>(1031, 7, 19, SplitKind::Auto).unwrap();
    assert_eq!(s.parts.len(), 2);
    assert!(s.parts[1].rows.len() > 2 * s.parts[0].rows.len(), "{s:?}");
    no_messages();
}

#[test]
fn alpha_beta_and_column_major_c_over_every_cut() {
    let mc = multi(4, &[1.0, 2.0, 3.0, 4.0]);
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (301, 283, 45);
    let a = small_ints::<f16>(&mut rng, m, k);
    let b = small_ints::<f16>(&mut rng, k, n);
    let c_in = small_ints::<f32>(&mut rng, m, n);
    let (av, bv) = (MatRef::new(&a, m, k), MatRef::new(&b, k, n));
    let options = GemmOptions {
        alpha: 2.0,
        beta: -0.5,
        ..Default::default()
    };
    let kinds = [
        SplitKind::Auto,
        SplitKind::Rows,
        SplitKind::Cols,
        SplitKind::Grid { rows: 2, cols: 2 },
        SplitKind::Grid { rows: 1, cols: 3 },
    ];
    for kind in kinds {
        let split = mc.split::<f16, f16>(m, n, k, kind).unwrap();
        let mut c = c_in.clone();
        mc.gemm_split(av, bv, MatMut::new(&mut c, m, n), &options, &split)
            .unwrap();
        assert_exact((av, bv), Some(&c_in), (2.0, -0.5), &c, &format!("{kind:?}"));
        // Column-major C: the same values stored column by column.
        let mut ct: Vec<f32> = (0..m * n).map(|i| c_in[(i % m) * n + i / m]).collect();
        mc.gemm_split(av, bv, MatMut::col_major(&mut ct, m, n), &options, &split)
            .unwrap();
        let back: Vec<f32> = (0..m * n).map(|i| ct[(i % n) * m + i / n]).collect();
        assert_exact(
            (av, bv),
            Some(&c_in),
            (2.0, -0.5),
            &back,
            &format!("{kind:?}, C column-major"),
        );
    }
    no_messages();
}

/// A pinned `rows x cols` matrix of `mc` stored `layout`, filled with small integers; and its
/// elements as a plain vector, for the reference.
fn pinned_ints<T: Element>(
    mc: &MultiContext,
    rng: &mut Rng,
    (rows, cols): (usize, usize),
    layout: Layout,
) -> (PinnedMatrix<T>, Vec<T>) {
    let mut p = mc.pinned_matrix::<T>(rows, cols, layout).unwrap();
    assert!(
        p.data().iter().all(|x| x.to_f64() == 0.0),
        "a pinned matrix starts zeroed"
    );
    let values = small_ints::<T>(rng, rows, cols);
    p.data_mut().copy_from_slice(&values);
    (p, values)
}

#[test]
fn pinned_operands_are_copied_in_place_over_every_cut() {
    let mc = multi(2, &[1.0, 3.0]);
    let mut rng = Rng::new(Rng::fresh_seed());
    let options = GemmOptions {
        alpha: 2.0,
        beta: -0.5,
        ..Default::default()
    };
    for &(m, n, k) in &[(1, 1, 1), (67, 45, 33), (523, 131, 97), (5, 1100, 64)] {
        let (n_, t_) = (Layout::RowMajor, Layout::ColMajor);
        let every = [n_, t_]
            .into_iter()
            .flat_map(|a| [n_, t_].into_iter().map(move |b| (a, b)));
        for (la, lb, lc) in every.flat_map(|(a, b)| [(a, b, n_), (a, b, t_)]) {
            let (a, av) = pinned_ints::<f16>(&mc, &mut rng, (m, k), la);
            let (b, bv) = pinned_ints::<f16>(&mc, &mut rng, (k, n), lb);
            let (mut c, c_in) = pinned_ints::<f32>(&mc, &mut rng, (m, n), lc);
            for (imported, name) in [
                (a.imported_on(&contexts()[0]), "A"),
                (c.imported_on(&contexts()[1]), "C"),
            ] {
                assert!(
                    imported,
                    "{name} is not imported: this test needs VK_EXT_external_memory_host (lavapipe has it)"
                );
            }
            let what = format!("{m}x{n}x{k} {la:?} {lb:?} C {lc:?}");
            // C in row-major order, for the reference and the comparison.
            let row_major = |c: &[f32]| -> Vec<f32> {
                match lc {
                    Layout::RowMajor => c.to_vec(),
                    Layout::ColMajor => (0..m * n).map(|i| c[(i % n) * m + i / n]).collect(),
                }
            };
            let c0 = row_major(&c_in);
            let views = (view(&av, m, k, la), view(&bv, k, n, lb));
            let kinds = [SplitKind::Auto, SplitKind::Cols, SplitKind::Grid { rows: 2, cols: 1 }];
            for kind in kinds {
                c.data_mut().copy_from_slice(&c_in);
                let split = mc.split::<f16, f16>(m, n, k, kind).unwrap();
                mc.gemm_pinned_split(&a, &b, &mut c, &options, &split).unwrap();
                let got = row_major(c.data());
                assert_exact(views, Some(&c0), (2.0, -0.5), &got, &format!("{what} {kind:?}"));
            }
            // beta = 0: C's old contents (poison) are not read.
            c.data_mut().fill(f32::NAN);
            mc.gemm_pinned(&a, &b, &mut c, &GemmOptions::default()).unwrap();
            assert_exact(views, None, (1.0, 0.0), &row_major(c.data()), &format!("{what} beta 0"));
        }
    }
    no_messages();
}

#[test]
fn host_and_pinned_operands_in_several_bands() {
    // A 64 KiB allocation limit cuts each device's rows into bands of at most 32 KiB of A and C,
    // so the banded pipeline (the next band's copy while this one multiplies) runs here too.
    let capped: Vec<Arc<Context>> = (0..2).map(|_| Arc::new(capped_context(64 << 10))).collect();
    let mc = MultiContext::with_weights(capped.clone(), vec![1.0, 3.0]).unwrap();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (523, 131, 97);
    let options = GemmOptions {
        alpha: -1.0,
        beta: 2.0,
        ..Default::default()
    };
    let (a, av) = pinned_ints::<f16>(&mc, &mut rng, (m, k), Layout::RowMajor);
    let (b, bv) = pinned_ints::<f16>(&mc, &mut rng, (k, n), Layout::ColMajor);
    let (mut c, c_in) = pinned_ints::<f32>(&mc, &mut rng, (m, n), Layout::RowMajor);
    let views = (MatRef::new(&av, m, k), MatRef::col_major(&bv, k, n));
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Rows).unwrap();
    mc.gemm_pinned_split(&a, &b, &mut c, &options, &split).unwrap();
    assert_exact(views, Some(&c_in), (-1.0, 2.0), c.data(), "pinned, in bands");
    let mut staged = c_in.clone();
    mc.gemm_split(views.0, views.1, MatMut::new(&mut staged, m, n), &options, &split)
        .unwrap();
    assert_exact(views, Some(&c_in), (-1.0, 2.0), &staged, "staged, in bands");
    c.data_mut().fill(f32::NAN);
    capped[1].gemm_pinned(&a, &b, &mut c, &GemmOptions::default()).unwrap();
    assert_exact(views, None, (1.0, 0.0), c.data(), "one context, in bands");
    for ctx in &capped {
        assert_no_validation_messages(ctx);
    }
}

#[test]
fn traced_pinned_gemm_times_every_step_in_dependency_order() {
    let capped: Vec<Arc<Context>> = (0..2).map(|_| Arc::new(capped_context(64 << 10))).collect();
    let mc = MultiContext::with_weights(capped.clone(), vec![1.0, 1.0]).unwrap();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (400, 96, 80);
    let (a, av) = pinned_ints::<f16>(&mc, &mut rng, (m, k), Layout::RowMajor);
    let (b, bv) = pinned_ints::<f16>(&mc, &mut rng, (k, n), Layout::RowMajor);
    let mut c = mc.pinned_matrix::<f32>(m, n, Layout::RowMajor).unwrap();
    c.data_mut().fill(f32::NAN);
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Rows).unwrap();
    let call = std::time::Instant::now();
    let parts = mc
        .gemm_pinned_traced(&a, &b, &mut c, &GemmOptions::default(), &split)
        .unwrap();
    let call_ms = call.elapsed().as_secs_f64() * 1e3;
    let views = (MatRef::new(&av, m, k), MatRef::new(&bv, k, n));
    assert_exact(views, None, (1.0, 0.0), c.data(), "traced");
    assert_eq!(parts.iter().map(|p| p.device).collect::<Vec<_>>(), [0, 1]);
    for part in &parts {
        let at = |step: PipelineStep, band: usize| {
            let found = part.steps.iter().find(|t| t.step == step && t.band == band);
            let t = found.unwrap_or_else(|| panic!("device {}: no {step:?} for band {band}", part.device));
            assert!(0.0 <= t.start_ms && t.start_ms <= t.end_ms, "{t:?}");
            (t.start_ms, t.end_ms)
        };
        let bands = part.steps.iter().filter(|t| t.step == PipelineStep::Multiply).count();
        assert!(bands > 1, "device {}: the cap should give several bands", part.device);
        // The host's side in order, within the call; the waits within the part.
        let h = &part.host;
        assert!(
            0.0 <= h.began_ms
                && h.began_ms <= h.first_submit_ms
                && h.first_submit_ms <= h.ended_ms
                && h.ended_ms <= call_ms
                && h.waiting_ms <= h.ended_ms - h.began_ms,
            "device {}: {h:?} in a call of {call_ms} ms",
            part.device
        );
        let b_in = at(PipelineStep::BIn, 0);
        // The work adds up to the part's: B once, its rows of A in and of C out, its products.
        let rows = split.parts[part.device].rows.len() as u64;
        let work = |step: PipelineStep| -> u64 { part.steps.iter().filter(|t| t.step == step).map(|t| t.work).sum() };
        let (m_, n_, k_) = (rows, n as u64, k as u64);
        assert_eq!(
            [
                PipelineStep::BIn,
                PipelineStep::AIn,
                PipelineStep::Multiply,
                PipelineStep::COut
            ]
            .map(work),
            [k_ * n_ * 2, m_ * k_ * 2, 2 * m_ * n_ * k_, m_ * n_ * 4],
            "device {}",
            part.device
        );
        for band in 0..bands {
            // Each step waits for what it reads: B and the band's A before its multiply, the
            // multiply before its C goes out.
            let (a_in, mul, c_out) = (
                at(PipelineStep::AIn, band),
                at(PipelineStep::Multiply, band),
                at(PipelineStep::COut, band),
            );
            let what = format!("device {} band {band}: {:?}", part.device, part.steps);
            assert!(b_in.1 <= mul.0 && a_in.1 <= mul.0 && mul.1 <= c_out.0, "{what}");
        }
    }
    for ctx in &capped {
        assert_no_validation_messages(ctx);
    }
}

#[test]
fn repeated_pinned_gemms_take_every_buffer_from_the_pool() {
    // Fresh contexts (no other test's work in their pools). B is over four times A's and C's
    // blocks, so only B's own buffer, given back, serves it again: a buffer the call frees
    // rather than returns shows as one allocated on every repeat.
    let fresh: Vec<Arc<Context>> = (0..2).map(|_| Arc::new(capped_context(1 << 30))).collect();
    let mc = MultiContext::with_weights(fresh.clone(), vec![1.0, 1.0]).unwrap();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (16, 512, 256);
    let (a, av) = pinned_ints::<f16>(&mc, &mut rng, (m, k), Layout::RowMajor);
    let (b, bv) = pinned_ints::<f16>(&mc, &mut rng, (k, n), Layout::RowMajor);
    let mut c = mc.pinned_matrix::<f32>(m, n, Layout::RowMajor).unwrap();
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Rows).unwrap();
    let views = (MatRef::new(&av, m, k), MatRef::new(&bv, k, n));
    for call in 0..4 {
        c.data_mut().fill(f32::NAN);
        let parts = mc
            .gemm_pinned_traced(&a, &b, &mut c, &GemmOptions::default(), &split)
            .unwrap();
        assert_exact(views, None, (1.0, 0.0), c.data(), "repeated");
        let made: Vec<usize> = parts.iter().map(|p| p.host.new_buffers).collect();
        assert!(call == 0 || made == [0, 0], "call {call} allocated {made:?}");
    }
    // What the calls keep for the next is counted, and freed on request.
    let idle = mc.idle_memory();
    assert!(idle > 0, "no memory kept for the next call");
    assert_eq!(mc.release_idle_memory().unwrap(), idle);
    assert_eq!(mc.idle_memory(), 0);
    for ctx in &fresh {
        assert_no_validation_messages(ctx);
    }
}

#[test]
fn pinned_matrices_distributed_and_gathered() {
    let mc = multi(4, &[1.0, 2.0, 1.0, 3.0]);
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (157, 91, 53);
    for (kind, la) in [
        (SplitKind::Rows, Layout::RowMajor),
        (SplitKind::Grid { rows: 2, cols: 2 }, Layout::ColMajor),
    ] {
        let (a, av) = pinned_ints::<f16>(&mc, &mut rng, (m, k), la);
        let (b, bv) = pinned_ints::<f16>(&mc, &mut rng, (k, n), Layout::RowMajor);
        let split = mc.split::<f16, f16>(m, n, k, kind).unwrap();
        let da = mc.distribute_pinned(&a, &split, Role::A).unwrap();
        let db = mc.distribute_pinned(&b, &split, Role::B).unwrap();
        let mut dc = mc.zeros::<f32>(&split).unwrap();
        mc.gemm_distributed(&da, &db, &mut dc, &GemmOptions::default()).unwrap();
        let views = (view(&av, m, k, la), MatRef::new(&bv, k, n));
        // C's blocks are row-major: written in place into a row-major C, through the host into
        // a column-major one.
        for lc in [Layout::RowMajor, Layout::ColMajor] {
            let mut c = mc.pinned_matrix::<f32>(m, n, lc).unwrap();
            c.data_mut().fill(f32::NAN);
            mc.gather_pinned(&dc, &mut c).unwrap();
            let got: Vec<f32> = match lc {
                Layout::RowMajor => c.data().to_vec(),
                Layout::ColMajor => (0..m * n).map(|i| c.data()[(i % n) * m + i / n]).collect(),
            };
            assert_exact(views, None, (1.0, 0.0), &got, &format!("{kind:?}, gathered {lc:?}"));
        }
        // A gathered back in place is A.
        let mut back = mc.pinned_matrix::<f16>(m, k, la).unwrap();
        mc.gather_pinned(&da, &mut back).unwrap();
        assert!(back.data() == &av[..], "{kind:?}: A gathered back differs");
    }
    no_messages();
}

#[test]
fn pinned_int8_operands_are_exact() {
    // One-byte elements: device lines padded to 16 bytes, so most lines here carry padding.
    let mc = multi(2, &[2.0, 1.0]);
    let mut rng = Rng::new(Rng::fresh_seed());
    for &(m, n, k) in &[(37, 29, 33), (130, 17, 65)] {
        for (la, lb) in [
            (Layout::RowMajor, Layout::ColMajor),
            (Layout::ColMajor, Layout::RowMajor),
        ] {
            let (a, av) = pinned_ints::<i8>(&mc, &mut rng, (m, k), la);
            let (b, bv) = pinned_ints::<i8>(&mc, &mut rng, (k, n), lb);
            let mut c = mc.pinned_matrix::<i32>(m, n, Layout::RowMajor).unwrap();
            c.data_mut().fill(i32::MIN);
            mc.gemm_pinned(&a, &b, &mut c, &GemmOptions::default()).unwrap();
            let rows: Vec<usize> = (0..m).collect();
            let (want, _) = reference(
                &view(&av, m, k, la),
                &view(&bv, k, n, lb),
                None::<(&[i32], usize)>,
                1.0,
                0.0,
                &rows,
            );
            for (i, (&g, &w)) in c.data().iter().zip(&want).enumerate() {
                assert_eq!(f64::from(g), w, "i8 {m}x{n}x{k} {la:?} {lb:?}: C[{}][{}]", i / n, i % n);
            }
        }
    }
    no_messages();
}

#[test]
fn pinned_operands_on_one_context() {
    let ctx = &contexts()[2];
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (211, 97, 61);
    for lc in [Layout::RowMajor, Layout::ColMajor] {
        let mut a = ctx.pinned_matrix::<f16>(m, k, Layout::ColMajor).unwrap();
        let av = small_ints::<f16>(&mut rng, m, k);
        a.data_mut().copy_from_slice(&av);
        let mut b = ctx.pinned_matrix::<f16>(k, n, Layout::RowMajor).unwrap();
        let bv = small_ints::<f16>(&mut rng, k, n);
        b.data_mut().copy_from_slice(&bv);
        let mut c = ctx.pinned_matrix::<f32>(m, n, lc).unwrap();
        assert!(
            a.imported_on(ctx) && c.imported_on(ctx),
            "this test needs VK_EXT_external_memory_host"
        );
        c.data_mut().fill(f32::NAN);
        ctx.gemm_pinned(&a, &b, &mut c, &GemmOptions::default()).unwrap();
        let got: Vec<f32> = match lc {
            Layout::RowMajor => c.data().to_vec(),
            Layout::ColMajor => (0..m * n).map(|i| c.data()[(i % n) * m + i / n]).collect(),
        };
        let views = (MatRef::col_major(&av, m, k), MatRef::new(&bv, k, n));
        assert_exact(views, None, (1.0, 0.0), &got, &format!("one context, C {lc:?}"));
    }
    // A plan the device cannot run is refused before anything moves.
    let ai = ctx.pinned_matrix::<i8>(4, 4, Layout::RowMajor).unwrap();
    let mut cf = ctx.pinned_matrix::<f32>(4, 4, Layout::RowMajor).unwrap();
    let e = ctx.gemm_pinned(&ai, &ai, &mut cf, &GemmOptions::default());
    assert!(e.is_err(), "i8 x i8 -> f32 has no config on lavapipe: {e:?}");
    assert_no_validation_messages(ctx);
}

#[test]
fn pinned_matrices_of_other_devices_are_staged() {
    let mc = multi(2, &[1.0, 1.0]);
    let elsewhere = multi(1, &[1.0]);
    let (m, n, k) = (130, 70, 40);
    let mut rng = Rng::new(Rng::fresh_seed());
    // Made for context 0 alone: context 1 finds A in no import of its own, and copies it.
    let (a, av) = pinned_ints::<f16>(&elsewhere, &mut rng, (m, k), Layout::RowMajor);
    assert!(a.imported_on(&contexts()[0]) && !a.imported_on(&contexts()[1]));
    let (b, bv) = pinned_ints::<f16>(&mc, &mut rng, (k, n), Layout::RowMajor);
    let mut c = contexts()[3].pinned_matrix::<f32>(m, n, Layout::RowMajor).unwrap();
    c.data_mut().fill(f32::NAN);
    mc.gemm_pinned(&a, &b, &mut c, &GemmOptions::default()).unwrap();
    let views = (MatRef::new(&av, m, k), MatRef::new(&bv, k, n));
    assert_exact(views, None, (1.0, 0.0), c.data(), "staged pinned operands");
    // Shapes and sizes are checked before anything runs.
    let e = mc.gemm_pinned(&b, &a, &mut c, &GemmOptions::default());
    assert!(matches!(e, Err(Error::ShapeMismatch(_))), "{e:?}");
    let e = mc.pinned_matrix::<f32>(0, 5, Layout::RowMajor);
    assert!(matches!(e, Err(Error::ZeroSize { .. })), "{e:?}");
    let e = mc.pinned_matrix::<f32>(usize::MAX / 2, 3, Layout::RowMajor);
    assert!(matches!(e, Err(Error::TooLarge(_))), "{e:?}");
    no_messages();
}

#[test]
fn resident_gemms_chain_on_the_devices() {
    let mc = multi(2, &[1.0, 1.0]);
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k, p) = (389, 77, 41, 29);
    let a = small_ints::<f16>(&mut rng, m, k);
    let b = small_ints::<f16>(&mut rng, k, n);
    let w = small_ints::<f32>(&mut rng, n, p);
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Rows).unwrap();
    let da = mc.distribute(MatRef::new(&a, m, k), &split, Role::A).unwrap();
    let db = mc.distribute(MatRef::new(&b, k, n), &split, Role::B).unwrap();
    let mut dc = mc.zeros::<f32>(&split).unwrap();
    mc.gemm_distributed(&da, &db, &mut dc, &GemmOptions::default()).unwrap();
    let mut c = vec![f32::NAN; m * n];
    mc.gather(&dc, MatMut::new(&mut c, m, n)).unwrap();
    assert_exact(
        (MatRef::new(&a, m, k), MatRef::new(&b, k, n)),
        None,
        (1.0, 0.0),
        &c,
        "first",
    );

    // C, cut by rows, is the next GEMM's A where it lies: only W moves.
    let next = mc.split::<f32, f32>(m, p, n, SplitKind::Rows).unwrap();
    let dw = mc.distribute(MatRef::new(&w, n, p), &next, Role::B).unwrap();
    let mut dd = mc.zeros::<f32>(&next).unwrap();
    mc.gemm_distributed(&dc, &dw, &mut dd, &GemmOptions::default()).unwrap();
    let mut d = vec![f32::NAN; m * p];
    mc.gather(&dd, MatMut::col_major(&mut d, m, p)).unwrap();
    let d_rows: Vec<f32> = (0..m * p).map(|i| d[(i % p) * m + i / p]).collect();
    assert_exact(
        (MatRef::new(&c, m, n), MatRef::new(&w, n, p)),
        None,
        (1.0, 0.0),
        &d_rows,
        "chained",
    );
    no_messages();
}

#[test]
fn resident_gemm_on_a_two_by_two_grid() {
    let mc = multi(4, &[1.0; 4]);
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (150, 190, 37);
    let a = small_ints::<f16>(&mut rng, k, m); // stored column-major: A is m x k
    let b = small_ints::<f16>(&mut rng, k, n);
    let (av, bv) = (MatRef::col_major(&a, m, k), MatRef::new(&b, k, n));
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Auto).unwrap();
    assert_eq!(split.grid, (2, 2));
    let da = mc.distribute(av, &split, Role::A).unwrap();
    let db = mc.distribute(bv, &split, Role::B).unwrap();
    let mut dc = mc.zeros::<f32>(&split).unwrap();
    mc.gemm_distributed(&da, &db, &mut dc, &GemmOptions::default()).unwrap();
    let mut c = vec![f32::NAN; m * n];
    mc.gather(&dc, MatMut::new(&mut c, m, n)).unwrap();
    assert_exact((av, bv), None, (1.0, 0.0), &c, "2x2 grid");
    // A's row bands are on two devices each; gathering A gives A back.
    let mut a_back = vec![f16::NAN; m * k];
    mc.gather(&da, MatMut::new(&mut a_back, m, k)).unwrap();
    assert!((0..m * k).all(|i| a_back[i] == a[(i % k) * m + i / k]));
    no_messages();
}

#[test]
fn a_failing_device_is_named_and_no_result_is_returned() {
    // Device 0 gives up on the GPU at once: its waits time out, as a hung GPU's would. It comes
    // first and takes most of the work: the devices' tickets are waited on in order, so a hung
    // device waited on after a healthy one could finish its share meanwhile and pass the wait.
    let hung = Arc::new(
        Context::with_options(ContextOptions {
            gpu_timeout: Duration::ZERO,
            validation: true,
            ..Default::default()
        })
        .unwrap(),
    );
    let mc = MultiContext::with_weights(vec![hung, contexts()[0].clone()], vec![3.0, 1.0]).unwrap();
    let mut rng = Rng::new(Rng::fresh_seed());
    // Work the hung device cannot finish between its last submission and its wait: lavapipe
    // takes milliseconds for this shape; a GPU needs one some hundred times larger.
    let (m, n, k) = match contexts()[0].device_info().kind {
        DeviceKind::Cpu => (256, 256, 2048),
        _ => (4096, 4096, 4096),
    };
    let a = small_ints::<f16>(&mut rng, m, k);
    let b = small_ints::<f16>(&mut rng, k, n);
    let mut c = vec![0.0f32; m * n];
    let e = mc
        .gemm(MatRef::new(&a, m, k), MatRef::new(&b, k, n), MatMut::new(&mut c, m, n))
        .unwrap_err();
    match &e {
        Error::OnDevice { device: 0, source, .. } => {
            assert!(e.to_string().contains("device 0"), "{e}");
            assert!(source.to_string().contains("did not finish in time"), "{e}");
        }
        other => panic!("expected device 0 to fail, got {other}"),
    }
    // Device-resident operands fail the same way.
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Rows).unwrap();
    let placed = (|| {
        let da = mc.distribute(MatRef::new(&a, m, k), &split, Role::A)?;
        let db = mc.distribute(MatRef::new(&b, k, n), &split, Role::B)?;
        let mut dc = mc.zeros::<f32>(&split)?;
        mc.gemm_distributed(&da, &db, &mut dc, &GemmOptions::default())
    })();
    assert!(matches!(placed, Err(Error::OnDevice { device: 0, .. })), "{placed:?}");
    // Pinned operands fail the same way.
    let pinned = (|| {
        let a = mc.pinned_matrix::<f16>(m, k, Layout::RowMajor)?;
        let b = mc.pinned_matrix::<f16>(k, n, Layout::RowMajor)?;
        let mut c = mc.pinned_matrix::<f32>(m, n, Layout::RowMajor)?;
        mc.gemm_pinned(&a, &b, &mut c, &GemmOptions::default())
    })();
    assert!(matches!(pinned, Err(Error::OnDevice { device: 0, .. })), "{pinned:?}");
    // The hung context goes while its work may still run: what that work uses is leaked, not
    // destroyed under it (a pipeline destroyed in use crashed lavapipe's queue thread).
    let hung_messages = mc.contexts()[0].validation_messages().clone();
    drop(mc);
    let hung_messages = hung_messages.messages();
    assert!(hung_messages.is_empty(), "the hung context: {hung_messages:?}");
    assert_no_validation_messages(&contexts()[0]);
}

#[test]
fn misuse_is_a_typed_error() {
    let mc = multi(2, &[1.0, 1.0]);
    let (m, n, k) = (40, 30, 20);
    let a = vec![f16::ONE; m * k];
    let b = vec![f16::ONE; k * n];
    let mut c = vec![0.0f32; m * n];
    let split = mc.split::<f16, f16>(m, n, k, SplitKind::Rows).unwrap();
    let other = mc.split::<f16, f16>(m, n + 1, k, SplitKind::Rows).unwrap();
    let (av, bv) = (MatRef::new(&a, m, k), MatRef::new(&b, k, n));
    let e = mc.gemm_split(av, bv, MatMut::new(&mut c, m, n), &GemmOptions::default(), &other);
    assert!(matches!(e, Err(Error::ShapeMismatch(_))), "{e:?}");
    let e = mc.distribute(av, &split, Role::B);
    assert!(matches!(e, Err(Error::ShapeMismatch(_))), "{e:?}");
    // B cut for another split has no block where C's blocks need one.
    let cols = mc.split::<f16, f16>(m, n, k, SplitKind::Cols).unwrap();
    let da = mc.distribute(av, &split, Role::A).unwrap();
    let db = mc.distribute(bv, &cols, Role::B).unwrap();
    let mut dc = mc.zeros::<f32>(&split).unwrap();
    let e = mc.gemm_distributed(&da, &db, &mut dc, &GemmOptions::default());
    assert!(matches!(e, Err(Error::InvalidOperand(_))), "{e:?}");
    // A matrix of a larger MultiContext names a device this one lacks.
    let one = multi(1, &[1.0]);
    let e = one.gather(&dc, MatMut::new(&mut c, m, n));
    assert!(matches!(e, Err(Error::InvalidOperand(_))), "{e:?}");
    let e = one.gemm_distributed(&da, &db, &mut dc, &GemmOptions::default());
    assert!(matches!(e, Err(Error::InvalidOperand(_))), "{e:?}");
    // Integer inputs with a float result: the device names what it has.
    let ai = vec![1i8; m * k];
    let bi = vec![1i8; k * n];
    let e = mc.gemm(
        MatRef::new(&ai, m, k),
        MatRef::new(&bi, k, n),
        MatMut::new(&mut c, m, n),
    );
    assert!(matches!(e, Err(Error::OnDevice { device: 0, .. })), "{e:?}");
    for w in [vec![], vec![1.0], vec![1.0, 0.0], vec![1.0, f64::INFINITY]] {
        let e = MultiContext::with_weights(contexts()[..2].to_vec(), w.clone());
        assert!(matches!(e, Err(Error::InvalidOption(_))), "{w:?}: {e:?}");
    }
    assert_eq!(DeviceSet::parse("all"), DeviceSet::All);
    assert_eq!(DeviceSet::parse("0,1").clone(), DeviceSet::parse(" 0,1 "));
    no_messages();
}

#[test]
fn measured_shares_and_device_selection() {
    let mc = MultiContext::from_contexts(contexts()[..2].to_vec()).unwrap();
    assert_eq!(mc.weights().len(), 2);
    assert!(
        mc.weights().iter().all(|w| w.is_finite() && *w > 0.0),
        "{:?}",
        mc.weights()
    );
    // Every usable device of the best kind: here, the one device, once.
    let all = MultiContext::with_options(&DeviceSet::All, ContextOptions::default()).unwrap();
    assert!(!all.contexts().is_empty());
    let named = MultiContext::with_options(&DeviceSet::parse("0,0"), ContextOptions::default()).unwrap();
    assert_eq!(named.contexts().len(), 2);
    let e = MultiContext::with_options(&DeviceSet::parse("0,99"), ContextOptions::default());
    assert!(matches!(e, Err(Error::DeviceNotFound { .. })), "{e:?}");
}

#[test]
fn device_groups_cover_every_device_once() {
    // What `vk-sgmat info` reports of them, and what tells whether several GPUs could share
    // device memory (one group) or only host memory (a group each).
    let instance = Instance::new(&InstanceOptions::default()).unwrap();
    let count = instance.devices().unwrap().len();
    let groups = instance.device_groups().unwrap();
    assert!(groups.iter().all(|g| !g.is_empty()), "{groups:?}");
    let mut seen = groups.concat();
    seen.sort_unstable();
    assert_eq!(seen, (0..count).collect::<Vec<_>>(), "{groups:?}");
}
