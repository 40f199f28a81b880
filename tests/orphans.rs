//! Work left behind by dropped streams: downloads, tickets and matrices whose submission never
//! happened say so on every query, whatever ran since on the same queue or core, and never hand
//! out another submission's data. Inputs are small integers, so every result is exact.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, context, ints};
use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{Context, DeviceMatrix, Download, Error, GemmOptions, MatMut, MatRef};

/// Row-major reference product in f64.
fn product(a: &[f16], b: &[f16], (m, n, k): (usize, usize, usize)) -> Vec<f32> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p].to_f64();
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j].to_f64();
            }
        }
    }
    c.into_iter().map(|x| x as f32).collect()
}

/// Asserts that every way of reading `d` says its work was discarded, and yields no data.
fn assert_discarded(d: Download<f32>, what: &str) {
    let discarded = |r: &Result<(), Error>| matches!(r, Err(Error::NotSubmitted { discarded: true }));
    assert!(discarded(&d.is_done().map(drop)), "{what}: is_done {:?}", d.is_done());
    assert!(discarded(&d.try_wait().map(drop)), "{what}: try_wait");
    assert!(discarded(&d.ticket().wait()), "{what}: the ticket's wait");
    assert!(
        discarded(&d.ticket().is_done().map(drop)),
        "{what}: the ticket's is_done"
    );
    match d.wait() {
        Err(e @ Error::NotSubmitted { discarded: true }) => {
            assert!(e.to_string().contains("submit()"), "{what}: {e}")
        }
        other => panic!("{what}: wait returned {:?}", other.map(|v| v.len())),
    }
}

/// Host copy of a device matrix through a blocking download.
fn host<T: vk_sgmat::Element>(ctx: &Context, m: &DeviceMatrix<T>) -> Vec<T> {
    let mut out = vec![T::from_f64(-7.0); m.rows() * m.cols()];
    ctx.download(m, MatMut::new(&mut out, m.rows(), m.cols())).unwrap();
    out
}

/// The case: a download enqueued on a stream that is dropped unsubmitted, then another
/// stream on the same queue (which reuses the dropped stream's core) submits. The orphaned
/// download once returned an earlier download's data as its own.
#[test]
fn download_of_a_dropped_stream_returns_no_data() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n) = (64, 64);
    let p: Vec<f32> = ints(&mut rng, m * n);
    let q: Vec<f32> = p.iter().map(|x| x + 100.0).collect();
    let dp = ctx.upload(MatRef::new(&p, m, n)).unwrap();
    let dq = ctx.upload(MatRef::new(&q, m, n)).unwrap();
    assert_eq!(host(ctx, &dp), p, "an ordinary blocking download of P");
    let orphan = {
        let mut s1 = ctx.stream_on(0).unwrap();
        s1.download(&dq).unwrap()
    };
    let mut s2 = ctx.stream_on(0).unwrap();
    let a: Vec<f16> = ints(&mut rng, 9 * 5);
    let b: Vec<f16> = ints(&mut rng, 5 * 7);
    let (da, db) = (
        s2.upload(MatRef::new(&a, 9, 5)).unwrap(),
        s2.upload(MatRef::new(&b, 5, 7)).unwrap(),
    );
    let mut dc = ctx.zeros::<f32>(9, 7).unwrap();
    s2.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut dc)
        .unwrap();
    let d2 = s2.download(&dc).unwrap();
    s2.submit().unwrap().wait().unwrap();
    assert_eq!(
        d2.wait().unwrap(),
        product(&a, &b, (9, 7, 5)),
        "the second stream's own result"
    );
    assert_discarded(orphan, "download of a dropped stream");
    // wait_into says so too, and leaves the caller's memory as it was.
    let orphan = {
        let mut s1 = ctx.stream_on(0).unwrap();
        s1.download(&dq).unwrap()
    };
    ctx.stream_on(0).unwrap().synchronize().unwrap();
    let mut out = vec![-1.0f32; m * n];
    assert!(matches!(
        orphan.wait_into(MatMut::new(&mut out, m, n)),
        Err(Error::NotSubmitted { discarded: true })
    ));
    assert!(out.iter().all(|&x| x == -1.0), "wait_into wrote data it never read");
    assert_no_validation_messages(ctx);
}

/// A dropped stream with an upload into a new matrix, an upload into an existing one, a GEMM
/// and a download pending: none of it happens, and the new matrix, which holds no data, is
/// refused everywhere rather than read.
#[test]
fn dropped_uploads_gemms_and_downloads_leave_nothing_behind() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (13, 11, 7);
    let a: Vec<f16> = ints(&mut rng, m * k);
    let b: Vec<f16> = ints(&mut rng, k * n);
    let old_b: Vec<f16> = ints(&mut rng, k * n);
    let mut kept_b = ctx.upload(MatRef::new(&old_b, k, n)).unwrap();
    let mut c = ctx.zeros::<f32>(m, n).unwrap();
    let (fresh, download) = {
        let mut s = ctx.stream_on(1).unwrap();
        let fresh = s.upload(MatRef::new(&a, m, k)).unwrap();
        s.upload_into(MatRef::new(&b, k, n), &mut kept_b).unwrap();
        s.run(&Matmul::with_options(&GemmOptions::default()), &fresh, &kept_b, &mut c)
            .unwrap();
        let download = s.download(&c).unwrap();
        (fresh, download)
    };
    assert_discarded(download, "download");
    assert_eq!(host(ctx, &kept_b), old_b, "a dropped upload_into changed its target");
    assert!(host(ctx, &c).iter().all(|&x| x == 0.0), "a dropped GEMM wrote C");
    // The new matrix was never written: reading it would return another buffer's old contents.
    let mut out = vec![f16::ZERO; m * k];
    let e = ctx.download(&fresh, MatMut::new(&mut out, m, k)).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidOperand(s) if s.contains("discarded")),
        "blocking download of a discarded upload: {e}"
    );
    let mut s = ctx.stream().unwrap();
    let e = s
        .run(&Matmul::with_options(&GemmOptions::default()), &fresh, &kept_b, &mut c)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidOperand(_)), "a GEMM reading it: {e}");
    // Refused as C as well, and the stream stays usable after the error.
    let mut fresh = fresh;
    let dk = s.upload(MatRef::new(&b, k, n)).unwrap();
    let e = s.upload_into(MatRef::new(&a, m, k), &mut fresh).unwrap_err();
    assert!(matches!(e, Error::InvalidOperand(_)), "uploading into it: {e}");
    let d = s.download(&dk).unwrap();
    s.submit().unwrap();
    assert_eq!(d.wait().unwrap(), b, "the stream after the refusals");
    assert_no_validation_messages(ctx);
}

/// Two streams on one queue, one holding a download it has not submitted yet: it is "not
/// submitted" (not done, not another's data) while the other submits, cannot be waited for on
/// the GPU, and returns its own data once submitted.
#[test]
fn two_streams_on_one_queue_keep_their_own_downloads() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n) = (17, 19);
    let x: Vec<f32> = ints(&mut rng, m * n);
    let y: Vec<f32> = x.iter().map(|v| v - 50.0).collect();
    let dx = ctx.upload(MatRef::new(&x, m, n)).unwrap();
    let dy = ctx.upload(MatRef::new(&y, m, n)).unwrap();
    let mut s1 = ctx.stream_on(0).unwrap();
    let mut s2 = ctx.stream_on(0).unwrap();
    let d1 = s1.download(&dx).unwrap();
    for _ in 0..3 {
        let d2 = s2.download(&dy).unwrap();
        s2.submit().unwrap();
        assert_eq!(d2.wait().unwrap(), y);
        let pending = |r: Result<bool, Error>| matches!(r, Err(Error::NotSubmitted { discarded: false }));
        assert!(pending(d1.is_done()), "{:?}", d1.is_done());
        assert!(matches!(d1.try_wait(), Err(Error::NotSubmitted { discarded: false })));
    }
    // Waiting for it on the GPU would wait for a value no one may ever signal.
    let e = s2.wait_for(d1.ticket()).unwrap_err();
    assert!(matches!(e, Error::NotSubmitted { discarded: false }), "{e}");
    s1.submit().unwrap();
    s2.wait_for(d1.ticket()).unwrap();
    s2.submit().unwrap().wait().unwrap();
    assert!(d1.is_done().unwrap());
    assert_eq!(d1.try_wait().unwrap().as_deref(), Some(&x[..]));
    assert_eq!(d1.wait().unwrap(), x);
    assert_no_validation_messages(ctx);
}

/// A stream submits the first half of a chain and is dropped with the second half enqueued:
/// the first half's results stand, the second's download is discarded, and its C is untouched.
#[test]
fn stream_dropped_mid_chain() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, k, n, p) = (21, 9, 15, 6);
    let a: Vec<f16> = ints(&mut rng, m * k);
    let b: Vec<f16> = ints(&mut rng, k * n);
    let w: Vec<f16> = ints(&mut rng, n * p);
    let mut h = ctx.zeros::<f16>(m, n).unwrap();
    let mut out = ctx.zeros::<f32>(m, p).unwrap();
    let (first, second) = {
        let mut s = ctx.stream().unwrap();
        let (da, db, dw) = (
            s.upload(MatRef::new(&a, m, k)).unwrap(),
            s.upload(MatRef::new(&b, k, n)).unwrap(),
            s.upload(MatRef::new(&w, n, p)).unwrap(),
        );
        s.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut h)
            .unwrap();
        let first = s.download(&h).unwrap();
        s.submit().unwrap();
        s.run(&Matmul::with_options(&GemmOptions::default()), &h, &dw, &mut out)
            .unwrap();
        (first, s.download(&out).unwrap())
    };
    let want: Vec<f16> = product(&a, &b, (m, n, k)).into_iter().map(f16::from_f32).collect();
    assert_eq!(first.wait().unwrap(), want, "the submitted half");
    assert_discarded(second, "the dropped half");
    assert!(
        host(ctx, &out).iter().all(|&x| x == 0.0),
        "the dropped GEMM wrote its C"
    );
    assert_no_validation_messages(ctx);
}

/// Eight threads, each dropping every other stream with a download pending, all on one queue
/// so cores are recycled between them: each submitted download returns its own thread's data,
/// each dropped one says it was discarded.
#[test]
fn dropped_streams_under_eight_threads() {
    let ctx = context();
    let seed = Rng::fresh_seed();
    std::thread::scope(|scope| {
        for t in 0..8u64 {
            scope.spawn(move || {
                let mut rng = Rng::new(seed ^ (t + 1));
                let (m, n, k) = (5 + t as usize, 7, 3 + t as usize);
                for round in 0..6 {
                    let a: Vec<f16> = ints(&mut rng, m * k);
                    let b: Vec<f16> = ints(&mut rng, k * n);
                    let mut s = ctx.stream_on(0).unwrap();
                    let (da, db) = (
                        s.upload(MatRef::new(&a, m, k)).unwrap(),
                        s.upload(MatRef::new(&b, k, n)).unwrap(),
                    );
                    let mut c = ctx.zeros::<f32>(m, n).unwrap();
                    s.run(&Matmul::with_options(&GemmOptions::default()), &da, &db, &mut c)
                        .unwrap();
                    let d = s.download(&c).unwrap();
                    if round % 2 == 0 {
                        s.submit().unwrap();
                        drop(s);
                        let what = format!("thread {t} round {round}");
                        assert_eq!(d.wait().unwrap(), product(&a, &b, (m, n, k)), "{what}");
                    } else {
                        drop(s);
                        assert_discarded(d, &format!("thread {t} round {round}"));
                    }
                }
            });
        }
    });
    assert_no_validation_messages(ctx);
}

/// A timed batch whose enqueue fails is discarded with the timing's query pool, so the
/// stream's next submission records nothing into a destroyed pool.
#[test]
fn failed_timed_batch_leaves_the_stream_clean() {
    let ctx = context();
    let a = vec![f16::ONE; 8 * 8];
    let mut s = ctx.stream().unwrap();
    let da = s.upload(MatRef::new(&a, 8, 8)).unwrap();
    let mut wrong = ctx.zeros::<f32>(8, 9).unwrap();
    let e = s
        .timed(|s| {
            s.run(&Matmul::with_options(&GemmOptions::default()), &da, &da, &mut wrong)?;
            Ok(1)
        })
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
    let mut c = ctx.zeros::<f32>(8, 8).unwrap();
    s.run(&Matmul::with_options(&GemmOptions::default()), &da, &da, &mut c)
        .unwrap();
    let d = s.download(&c).unwrap();
    s.submit().unwrap();
    assert!(d.wait().unwrap().iter().all(|&x| x == 8.0));
    assert_no_validation_messages(ctx);
}
