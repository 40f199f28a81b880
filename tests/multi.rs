//! One GEMM over several devices. Several contexts on the present driver stand in for several
//! GPUs (each context its own logical device, queues and memory), so the cut, the transfers, the
//! gather and the failure path all run for real. Inputs are small integers: every result is
//! exact and compared exactly against the f64 reference.

mod common;
mod multi_support;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::assert_no_validation_messages;
use half::f16;
use multi_support::*;
use std::sync::Arc;
use std::time::Duration;
use vk_sgmat::device::{DeviceKind, Instance, InstanceOptions};
use vk_sgmat::Matmul;
use vk_sgmat::{
    Context, ContextOptions, DeviceSet, Error, GemmOptions, Layout, MatMut, MatRef, MultiContext, Role, SplitKind,
};

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
                mc.run(&Matmul::new(), av, bv, MatMut::new(&mut c, m, n)).unwrap();
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
        mc.run(
            &Matmul::with_options(&options).split(&split),
            av,
            bv,
            MatMut::new(&mut c, m, n),
        )
        .unwrap();
        assert_exact((av, bv), Some(&c_in), (2.0, -0.5), &c, &format!("{kind:?}"));
        // Column-major C: the same values stored column by column.
        let mut ct: Vec<f32> = (0..m * n).map(|i| c_in[(i % m) * n + i / m]).collect();
        mc.run(
            &Matmul::with_options(&options).split(&split),
            av,
            bv,
            MatMut::col_major(&mut ct, m, n),
        )
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
    mc.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)
        .unwrap();
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
    mc.run(&Matmul::with_options(&GemmOptions::default()), &dc, &dw, &mut dd)
        .unwrap();
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
    mc.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)
        .unwrap();
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
        .run(
            &Matmul::new(),
            MatRef::new(&a, m, k),
            MatRef::new(&b, k, n),
            MatMut::new(&mut c, m, n),
        )
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
        mc.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)
    })();
    assert!(matches!(placed, Err(Error::OnDevice { device: 0, .. })), "{placed:?}");
    // Pinned operands fail the same way.
    let pinned = (|| {
        let a = mc.pinned_matrix::<f16>(m, k, Layout::RowMajor)?;
        let b = mc.pinned_matrix::<f16>(k, n, Layout::RowMajor)?;
        let mut c = mc.pinned_matrix::<f32>(m, n, Layout::RowMajor)?;
        mc.run(&Matmul::with_options(&GemmOptions::default()), &a, &b, &mut c)
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
    let e = mc.run(
        &Matmul::with_options(&GemmOptions::default()).split(&other),
        av,
        bv,
        MatMut::new(&mut c, m, n),
    );
    assert!(matches!(e, Err(Error::ShapeMismatch(_))), "{e:?}");
    let e = mc.distribute(av, &split, Role::B);
    assert!(matches!(e, Err(Error::ShapeMismatch(_))), "{e:?}");
    // B cut for another split has no block where C's blocks need one.
    let cols = mc.split::<f16, f16>(m, n, k, SplitKind::Cols).unwrap();
    let da = mc.distribute(av, &split, Role::A).unwrap();
    let db = mc.distribute(bv, &cols, Role::B).unwrap();
    let mut dc = mc.zeros::<f32>(&split).unwrap();
    let e = mc.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc);
    assert!(matches!(e, Err(Error::InvalidOperand(_))), "{e:?}");
    // A matrix of a larger MultiContext names a device this one lacks.
    let one = multi(1, &[1.0]);
    let e = one.gather(&dc, MatMut::new(&mut c, m, n));
    assert!(matches!(e, Err(Error::InvalidOperand(_))), "{e:?}");
    let e = one.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc);
    assert!(matches!(e, Err(Error::InvalidOperand(_))), "{e:?}");
    // Integer inputs with a float result: the device names what it has.
    let ai = vec![1i8; m * k];
    let bi = vec![1i8; k * n];
    let e = mc.run(
        &Matmul::new(),
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
