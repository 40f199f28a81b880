//! Several devices with pinned host matrices: operands copied in place over every cut, traced
//! steps, the buffer pool, distribution and gathering, int8, one context and other devices'
//! matrices. As in `multi`, several contexts on the present driver stand in for several GPUs and
//! every result is exact.

mod common;
mod multi_support;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{reference, Rng};
use common::{assert_no_validation_messages, capped_context};
use half::f16;
use multi_support::*;
use std::sync::Arc;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, Error, GemmOptions, Layout, MatMut, MatRef, MultiContext, PipelineStep, Role, SplitKind};

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
                mc.run(&Matmul::with_options(&options).split(&split), &a, &b, &mut c)
                    .unwrap();
                let got = row_major(c.data());
                assert_exact(views, Some(&c0), (2.0, -0.5), &got, &format!("{what} {kind:?}"));
            }
            // beta = 0: C's old contents (poison) are not read.
            c.data_mut().fill(f32::NAN);
            mc.run(&Matmul::with_options(&GemmOptions::default()), &a, &b, &mut c)
                .unwrap();
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
    mc.run(&Matmul::with_options(&options).split(&split), &a, &b, &mut c)
        .unwrap();
    assert_exact(views, Some(&c_in), (-1.0, 2.0), c.data(), "pinned, in bands");
    let mut staged = c_in.clone();
    mc.run(
        &Matmul::with_options(&options).split(&split),
        views.0,
        views.1,
        MatMut::new(&mut staged, m, n),
    )
    .unwrap();
    assert_exact(views, Some(&c_in), (-1.0, 2.0), &staged, "staged, in bands");
    c.data_mut().fill(f32::NAN);
    capped[1]
        .run(&Matmul::with_options(&GemmOptions::default()), &a, &b, &mut c)
        .unwrap();
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
    let parts = mc.run_traced(&Matmul::new().split(&split), &a, &b, &mut c).unwrap();
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
        let parts = mc.run_traced(&Matmul::new().split(&split), &a, &b, &mut c).unwrap();
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
        mc.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)
            .unwrap();
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
            mc.run(&Matmul::with_options(&GemmOptions::default()), &a, &b, &mut c)
                .unwrap();
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
        ctx.run(&Matmul::with_options(&GemmOptions::default()), &a, &b, &mut c)
            .unwrap();
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
    let e = ctx.run(&Matmul::with_options(&GemmOptions::default()), &ai, &ai, &mut cf);
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
    mc.run(&Matmul::with_options(&GemmOptions::default()), &a, &b, &mut c)
        .unwrap();
    let views = (MatRef::new(&av, m, k), MatRef::new(&bv, k, n));
    assert_exact(views, None, (1.0, 0.0), c.data(), "staged pinned operands");
    // Shapes and sizes are checked before anything runs.
    let e = mc.run(&Matmul::with_options(&GemmOptions::default()), &b, &a, &mut c);
    assert!(matches!(e, Err(Error::ShapeMismatch(_))), "{e:?}");
    let e = mc.pinned_matrix::<f32>(0, 5, Layout::RowMajor);
    assert!(matches!(e, Err(Error::ZeroSize { .. })), "{e:?}");
    let e = mc.pinned_matrix::<f32>(usize::MAX / 2, 3, Layout::RowMajor);
    assert!(matches!(e, Err(Error::TooLarge(_))), "{e:?}");
    no_messages();
}
