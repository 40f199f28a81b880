//! Streams on the present driver: chained GEMMs without host waits, many GEMMs per submission,
//! ordering between streams and blocking calls, lifetimes, and misuse as typed errors. Inputs are
//! small integers, so every f16 result is exact and compared exactly.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, capped_context, context};
use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, ContextOptions, DeviceMatrix, Error, GemmOptions, Layout, MatMut, MatRef};

/// A random m x n matrix of integers in -2..=2 (exact in f16 and in every sum below).
fn small_ints(rng: &mut Rng, m: usize, n: usize) -> Vec<f16> {
    (0..m * n)
        .map(|_| f16::from_f32((rng.next_u64() % 5) as f32 - 2.0))
        .collect()
}

/// Row-major reference product in f64.
fn product(a: &[f16], b: &[f16], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p].to_f64();
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j].to_f64();
            }
        }
    }
    c
}

fn assert_exact<T: Copy + Into<f64>>(got: &[T], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.into(), w, "{what}: element {i}");
    }
}

#[test]
fn chained_gemms_run_in_one_submission() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, k, n, p) = (37, 19, 23, 11);
    let a = small_ints(&mut rng, m, k);
    let b = small_ints(&mut rng, k, n);
    let w = small_ints(&mut rng, n, p);
    let mut s = ctx.stream().unwrap();
    let da = s.upload(MatRef::new(&a, m, k)).unwrap();
    let db = s.upload(MatRef::new(&b, k, n)).unwrap();
    let dw = s.upload(MatRef::new(&w, n, p)).unwrap();
    // The first GEMM's C (f16) is the second one's A: a barrier between them, no host wait.
    let mut h = ctx.zeros::<f16>(m, n).unwrap();
    let mut out = ctx.zeros::<f32>(m, p).unwrap();
    s.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut h)
        .unwrap();
    s.run(&Matmul::with_options(&GemmOptions::default()), &h, &dw, &mut out)
        .unwrap();
    let down = s.download(&out).unwrap();
    let ticket = s.submit().unwrap();
    let got = down.wait().unwrap();
    assert!(ticket.is_done().unwrap());
    let hidden = product(&a, &b, (m, n, k));
    let hidden16: Vec<f16> = hidden.iter().map(|&x| f16::from_f64(x)).collect();
    assert_exact(&got, &product(&hidden16, &w, (m, p, n)), "A*B*W");
    assert_no_validation_messages(ctx);
}

#[test]
fn many_gemms_per_submission_and_dropped_operands() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let mut s = ctx.stream().unwrap();
    let mut expected = Vec::new();
    let mut outputs: Vec<DeviceMatrix<f32>> = Vec::new();
    for i in 0..40 {
        let (m, n, k) = (8 + i % 7, 9 + i % 5, 5 + i % 11);
        let a = small_ints(&mut rng, m, k);
        let b = small_ints(&mut rng, k, n);
        // A and B are dropped right after the GEMM is enqueued: the stream keeps them alive.
        let da = s.upload(MatRef::new(&a, m, k)).unwrap();
        let db = s.upload(MatRef::new(&b, k, n)).unwrap();
        let mut c = ctx.zeros::<f32>(m, n).unwrap();
        s.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut c)
            .unwrap();
        expected.push(product(&a, &b, (m, n, k)));
        outputs.push(c);
    }
    let downloads: Vec<_> = outputs.iter().map(|c| s.download(c).unwrap()).collect();
    drop(outputs);
    s.submit().unwrap();
    for (i, (d, want)) in downloads.into_iter().zip(&expected).enumerate() {
        assert_exact(&d.wait().unwrap(), want, &format!("GEMM {i}"));
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn streams_and_blocking_calls_see_submitted_results_in_order() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, k, n) = (33, 17, 29);
    let a = small_ints(&mut rng, m, k);
    let b = small_ints(&mut rng, k, n);
    let da = ctx.upload(MatRef::new(&a, m, k)).unwrap();
    let db = ctx.upload(MatRef::new(&b, k, n)).unwrap();
    let mut c = ctx.zeros::<f16>(m, n).unwrap();
    let mut s1 = ctx.stream().unwrap();
    let mut s2 = ctx.stream().unwrap();
    s1.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut c)
        .unwrap();
    let t1 = s1.submit().unwrap();
    // s2 reads C: its submission waits for s1's on the GPU; no host wait here.
    let ident: Vec<f16> = (0..n * n)
        .map(|i| f16::from_f32(if i % (n + 1) == 0 { 1.0 } else { 0.0 }))
        .collect();
    let di = s2.upload(MatRef::new(&ident, n, n)).unwrap();
    let mut c2 = ctx.zeros::<f32>(m, n).unwrap();
    s2.run(&Matmul::with_options(&GemmOptions::default()), &c, &di, &mut c2)
        .unwrap();
    let d2 = s2.download(&c2).unwrap();
    s2.submit().unwrap();
    // A blocking download of C right after s1's submission waits for it as well.
    let mut host = vec![f16::ZERO; m * n];
    ctx.download(&c, MatMut::new(&mut host, m, n)).unwrap();
    assert!(t1.is_done().unwrap());
    let want = product(&a, &b, (m, n, k));
    assert_exact(&host, &want, "blocking download after s1");
    assert_exact(&d2.wait().unwrap(), &want, "s2 after s1");
    // An explicit GPU-side wait on another stream's ticket also orders them.
    let mut s3 = ctx.stream().unwrap();
    s3.wait_for(&t1).unwrap();
    s3.submit().unwrap().wait().unwrap();
    assert_no_validation_messages(ctx);
}

/// Streams that another stream's submission waits on are dropped while it still runs, more of
/// them than a context keeps idle, so some cores and their semaphores go: a semaphore must
/// outlive every submission waiting on it (validation reports one destroyed in use; the H100
/// showed it when the multi-device copy streams went first).
#[test]
fn streams_dropped_while_another_waits_on_them() {
    let ctx = Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        ..Default::default()
    })
    .unwrap();
    let mut rng = Rng::new(Rng::fresh_seed());
    // Long enough on lavapipe that the waiting GEMM still runs when the streams are dropped.
    let (m, k, n) = (256, 512, 256);
    let a = small_ints(&mut rng, m, k);
    let b = small_ints(&mut rng, k, n);
    let da = ctx.upload(MatRef::new(&a, m, k)).unwrap();
    let db = ctx.upload(MatRef::new(&b, k, n)).unwrap();
    let mut c = ctx.zeros::<f32>(m, n).unwrap();
    let mut waiter = ctx.stream().unwrap();
    let mut others = Vec::new();
    for i in 0..12 {
        let mut s = ctx.stream().unwrap();
        // A real submission; the uploaded matrix is dropped at once (the stream keeps it).
        let _ = s.upload(MatRef::new(&a[..i + 1], 1, i + 1)).unwrap();
        waiter.wait_for(&s.submit().unwrap()).unwrap();
        others.push(s);
    }
    waiter
        .run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut c)
        .unwrap();
    let done = waiter.download(&c).unwrap();
    waiter.submit().unwrap();
    drop(others);
    assert_exact(
        &done.wait().unwrap(),
        &product(&a, &b, (m, n, k)),
        "after the waited streams went",
    );
    drop(waiter);
    assert_no_validation_messages(&ctx);
}

#[test]
fn misuse_is_a_typed_error() {
    let ctx = context();
    let a = vec![f16::ONE; 16 * 16];
    let mut s = ctx.stream().unwrap();
    let da = s.upload(MatRef::new(&a, 16, 16)).unwrap();
    // Waiting on work never submitted would hang: it is an error instead.
    let d = s.download(&da).unwrap();
    let ticket = d.ticket().clone();
    let e = d.wait().unwrap_err();
    assert!(
        matches!(e, Error::NotSubmitted { discarded: false }) && e.to_string().contains("submit"),
        "{e}"
    );
    assert!(matches!(ticket.wait(), Err(Error::NotSubmitted { discarded: false })));
    // A matrix of another context.
    let other = Context::with_options(ContextOptions {
        validation: true,
        ..Default::default()
    })
    .unwrap();
    let foreign = other.upload(MatRef::new(&a, 16, 16)).unwrap();
    let mut c = ctx.zeros::<f32>(16, 16).unwrap();
    let e = s
        .run(&Matmul::with_options(&GemmOptions::default()), &foreign, &da, &mut c)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidOperand(_)), "{e}");
    let e = s.download(&foreign).unwrap_err();
    assert!(matches!(e, Error::InvalidOperand(_)), "{e}");
    // Shape errors leave the stream usable.
    let mut wrong = ctx.zeros::<f32>(16, 15).unwrap();
    assert!(matches!(
        s.run(&Matmul::with_options(&GemmOptions::default()), &da, &da, &mut wrong),
        Err(Error::ShapeMismatch(_))
    ));
    let mut col = ctx.upload(MatRef::col_major(&a, 16, 16)).unwrap();
    assert!(matches!(
        s.upload_into(MatRef::new(&a, 16, 16), &mut col),
        Err(Error::ShapeMismatch(_))
    ));
    s.run(&Matmul::with_options(&GemmOptions::default()), &da, &da, &mut c)
        .unwrap();
    let d = s.download(&c).unwrap();
    s.submit().unwrap();
    assert!(d.wait().unwrap().iter().all(|&x| x == 16.0));
    assert_eq!(col.layout(), Layout::ColMajor);
    assert_no_validation_messages(ctx);
    assert_no_validation_messages(&other);
}

#[test]
fn contexts_streams_and_tickets_cross_threads() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Context>();
    sync::<Context>();
    send::<vk_sgmat::Stream<'static>>();
    send::<vk_sgmat::Ticket>();
    sync::<vk_sgmat::Ticket>();
    send::<vk_sgmat::Download<f16>>();
    // A stream used from another thread, its ticket waited on from this one.
    let ctx = context();
    let a = vec![f16::ONE; 8 * 8];
    let (ticket, c) = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let mut s = ctx.stream().unwrap();
                let da = s.upload(MatRef::new(&a, 8, 8)).unwrap();
                let mut c = ctx.zeros::<f32>(8, 8).unwrap();
                s.run(&Matmul::with_options(&GemmOptions::default()), &da, &da, &mut c)
                    .unwrap();
                (s.submit().unwrap(), c)
            })
            .join()
            .unwrap()
    });
    ticket.wait().unwrap();
    assert!(ticket.is_done().unwrap());
    let mut host = vec![0.0f32; 64];
    ctx.download(&c, MatMut::new(&mut host, 8, 8)).unwrap();
    assert!(host.iter().all(|&x| x == 8.0), "{host:?}");
}

#[test]
fn idle_memory_is_counted_and_released() {
    // A context of its own: no other test's work in its pool or streams.
    let ctx = capped_context(1 << 30);
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (45, 29, 33);
    let a = small_ints(&mut rng, m, k);
    let b = small_ints(&mut rng, k, n);
    let want = product(&a, &b, (m, n, k));
    // Every kind of memory kept between calls: the blocking call's staging and readback, a
    // stream's staging (its core idle once dropped), the pinned pipeline's band buffers.
    let run = |what: &str| {
        let mut c = vec![f32::NAN; m * n];
        ctx.run(
            &Matmul::new(),
            MatRef::new(&a, m, k),
            MatRef::new(&b, k, n),
            MatMut::new(&mut c, m, n),
        )
        .unwrap();
        assert_exact(&c, &want, &format!("{what}: blocking"));
        let mut s = ctx.stream().unwrap();
        let (da, db) = (
            s.upload(MatRef::new(&a, m, k)).unwrap(),
            s.upload(MatRef::new(&b, k, n)).unwrap(),
        );
        let mut dc = ctx.zeros::<f32>(m, n).unwrap();
        s.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)
            .unwrap();
        let down = s.download(&dc).unwrap();
        s.submit().unwrap();
        assert_exact(&down.wait().unwrap(), &want, &format!("{what}: stream"));
        drop(s);
        let mut pa = ctx.pinned_matrix::<f16>(m, k, Layout::RowMajor).unwrap();
        pa.data_mut().copy_from_slice(&a);
        let mut pb = ctx.pinned_matrix::<f16>(k, n, Layout::RowMajor).unwrap();
        pb.data_mut().copy_from_slice(&b);
        let mut pc = ctx.pinned_matrix::<f32>(m, n, Layout::RowMajor).unwrap();
        pc.data_mut().fill(f32::NAN);
        ctx.run(&Matmul::with_options(&GemmOptions::default()), &pa, &pb, &mut pc)
            .unwrap();
        assert_exact(pc.data(), &want, &format!("{what}: pinned"));
    };
    run("first");
    let idle = ctx.idle_memory();
    assert!(idle > 0, "nothing kept for reuse after three kinds of call");
    assert_eq!(ctx.release_idle_memory().unwrap(), idle, "released what was counted");
    assert_eq!(ctx.idle_memory(), 0, "kept after release");
    run("after release");
    assert!(ctx.idle_memory() > 0, "the calls after a release keep memory again");
    assert_no_validation_messages(&ctx);
}
