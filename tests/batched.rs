//! Strided-batched GEMM on the present driver: host and device batches, every layout, shared
//! (stride 0) operands, strides with gaps, batches beyond the grid's z limit and beyond the
//! buffer windows, and misuse as typed errors. Every entry of C is compared with an f64 reference;
//! small-integer inputs make f16 and integer results exact, random floats use the usual bound.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{tolerance, unit_roundoff, Rng};
use common::{assert_no_validation_messages, capped_context, context, LAYOUTS};
use half::f16;
use vk_sgmat::plan::DispatchLimits;
use vk_sgmat::Matmul;
use vk_sgmat::{
    BatchMut, BatchRef, ComputeMode, Context, ContextOptions, DeviceBatch, Element, Error, GemmOptions, Layout, MatMut,
    MatRef,
};

/// Integers in -2..=2, or uniform floats in [-1, 1) when `ints` is false.
fn values<T: Element>(rng: &mut Rng, len: usize, ints: bool) -> Vec<T> {
    (0..len)
        .map(|_| {
            let v = if ints {
                (rng.next_u64() % 5) as f64 - 2.0
            } else {
                rng.unit() * 2.0 - 1.0
            };
            T::from_f64(v)
        })
        .collect()
}

/// A host batch of `count` `rows x cols` entries stored `layout`, with `gap` extra elements in
/// each leading dimension and between entries (stride 0 where `shared`); its slice.
#[derive(Clone)]
struct HostBatch<T> {
    data: Vec<T>,
    rows: usize,
    cols: usize,
    layout: Layout,
    ld: usize,
    count: usize,
    stride: usize,
}

impl<T: Element> HostBatch<T> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        rng: &mut Rng,
        count: usize,
        (rows, cols): (usize, usize),
        layout: Layout,
        gap: usize,
        shared: bool,
        ints: bool,
    ) -> Self {
        let (outer, inner) = match layout {
            Layout::RowMajor => (rows, cols),
            Layout::ColMajor => (cols, rows),
        };
        let ld = inner + gap;
        let stride = if shared { 0 } else { outer * ld + gap };
        let len = (count - 1) * stride + outer * ld;
        Self {
            data: values(rng, len, ints),
            rows,
            cols,
            layout,
            ld,
            count,
            stride,
        }
    }

    fn mat(&self) -> MatRef<'_, T> {
        MatRef::stored(&self.data, self.rows, self.cols, self.layout, self.ld)
    }

    fn batch(&self) -> BatchRef<'_, T> {
        BatchRef::strided(self.mat(), self.count, self.stride)
    }

    fn at(&self, i: usize, r: usize, c: usize) -> f64 {
        self.data[i * self.stride + self.mat().index(r, c)].to_f64()
    }
}

/// Checks every element of every entry of C against `alpha * A[i] B[i] + beta * C_in[i]`:
/// exactly where `exact`, else within the relative bound of the result type (and `input_u`,
/// the unit roundoff of what the operands were rounded to).
fn check<TA: Element, TB: Element, TC: Element>(
    a: &HostBatch<TA>,
    b: &HostBatch<TB>,
    (c_in, c): (&HostBatch<TC>, &HostBatch<TC>),
    (alpha, beta): (f64, f64),
    exact: bool,
    input_u: f64,
) {
    let (m, n, k) = (a.rows, b.cols, a.cols);
    let bound = tolerance(TC::TYPE, k) + 2.0 * input_u;
    for i in 0..c.count {
        let (mut diff2, mut mag2) = (0.0f64, 0.0f64);
        for r in 0..m {
            for j in 0..n {
                let (mut dot, mut mag) = (0.0, 0.0);
                for p in 0..k {
                    let x = a.at(i, r, p) * b.at(i, p, j);
                    dot += x;
                    mag += x.abs();
                }
                let want = alpha * dot + if beta == 0.0 { 0.0 } else { beta * c_in.at(i, r, j) };
                let got = c.at(i, r, j);
                if exact {
                    assert_eq!(got, want, "entry {i} ({r}, {j})");
                }
                assert!(
                    got.is_finite(),
                    "entry {i} ({r}, {j}) = {got}: an element was not written"
                );
                diff2 += (got - want).powi(2);
                mag2 += (alpha.abs() * mag + (beta * c_in.at(i, r, j)).abs()).powi(2);
            }
        }
        let err = (diff2 / mag2.max(f64::MIN_POSITIVE)).sqrt();
        assert!(
            err <= bound,
            "entry {i}: relative error {err:.3e} over the bound {bound:.3e}"
        );
    }
}

/// Runs a host batch, every operand strided with gaps (B shared where asked), C poisoned by the
/// context, and checks it.
#[allow(clippy::too_many_arguments)]
fn run_host<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    rng: &mut Rng,
    count: usize,
    (m, n, k): (usize, usize, usize),
    layouts: [Layout; 3],
    share_b: bool,
    options: &GemmOptions,
    ints: bool,
    input_u: f64,
) {
    let a = HostBatch::<TA>::new(rng, count, (m, k), layouts[0], 3, false, ints);
    let b = HostBatch::<TB>::new(rng, count, (k, n), layouts[1], 1, share_b, ints);
    let c_in = HostBatch::<TC>::new(rng, count, (m, n), layouts[2], 2, false, ints);
    let mut c = c_in.clone();
    let c_mat = MatMut {
        data: &mut c.data,
        rows: m,
        cols: n,
        ld: c_in.ld,
        layout: layouts[2],
    };
    ctx.run(
        &Matmul::with_options(options),
        a.batch(),
        b.batch(),
        BatchMut::strided(c_mat, count, c_in.stride),
    )
    .unwrap_or_else(|e| panic!("batch {count} of {m}x{n}x{k} {layouts:?}: {e}"));
    // Small integers, alpha 2 and beta 0.5 leave every sum exact in f16 and f32.
    let exact = ints && input_u == 0.0;
    check(&a, &b, (&c_in, &c), (options.alpha, options.beta), exact, input_u);
}

#[test]
fn host_batches_match_the_reference_in_every_layout() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let options = GemmOptions {
        alpha: 2.0,
        beta: 0.5,
        ..Default::default()
    };
    for la in LAYOUTS {
        for lb in LAYOUTS {
            for lc in LAYOUTS {
                for share_b in [false, true] {
                    let layouts = [la, lb, lc];
                    run_host::<f16, f16, f32>(ctx, &mut rng, 5, (13, 7, 11), layouts, share_b, &options, true, 0.0);
                }
            }
        }
    }
    // Random floats, sizes of no tile's multiple, a batch of one, and a prime batch.
    for (count, shape) in [(1, (1, 1, 1)), (3, (37, 29, 41)), (7, (17, 1, 31)), (2, (1, 53, 9))] {
        let plain = GemmOptions::default();
        let layouts = [Layout::ColMajor, Layout::RowMajor, Layout::RowMajor];
        run_host::<f16, f16, f32>(ctx, &mut rng, count, shape, layouts, false, &plain, false, 0.0);
        run_host::<f16, f16, f16>(ctx, &mut rng, count, shape, layouts, true, &plain, false, 0.0);
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn integer_and_f32_batches() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let plain = GemmOptions::default();
    let rm = [Layout::RowMajor; 3];
    let tn = [Layout::ColMajor, Layout::RowMajor, Layout::ColMajor];
    run_host::<i8, i8, i32>(ctx, &mut rng, 6, (19, 23, 70), rm, false, &plain, true, 0.0);
    run_host::<u8, u8, u32>(ctx, &mut rng, 4, (9, 33, 17), tn, true, &plain, true, 0.0);
    // f32 operands: the default (accurate) mode runs a batch on the exact kernel; the fast
    // mode rounds to f16 on load.
    run_host::<f32, f32, f32>(ctx, &mut rng, 3, (21, 18, 35), tn, false, &plain, false, 0.0);
    let fast = GemmOptions {
        compute: ComputeMode::FastF16,
        ..Default::default()
    };
    let u16 = unit_roundoff(vk_sgmat::ComponentType::F16);
    run_host::<f32, f32, f32>(ctx, &mut rng, 3, (21, 18, 35), rm, true, &fast, false, u16);
    run_host::<f16, f32, f32>(ctx, &mut rng, 4, (12, 40, 24), tn, false, &plain, false, u16);
    assert_no_validation_messages(ctx);
}

#[test]
fn device_batches_with_a_shared_weight_on_a_stream() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (count, m, n, k) = (6, 19, 10, 27);
    let x = HostBatch::<f16>::new(&mut rng, count, (m, k), Layout::RowMajor, 0, false, true);
    let w = HostBatch::<f16>::new(&mut rng, 1, (k, n), Layout::ColMajor, 0, false, true);
    let kt = HostBatch::<f16>::new(&mut rng, count, (k, n), Layout::ColMajor, 0, false, true);
    let mut s = ctx.stream().unwrap();
    let dx = ctx.upload_batch(x.batch()).unwrap();
    assert_eq!((dx.count(), dx.rows(), dx.cols()), (count, m, k));
    let dw = s.upload(w.mat()).unwrap();
    let dkt = ctx.upload_batch(kt.batch()).unwrap();
    let mut y = ctx.zeros_batch::<f32>(count, m, n).unwrap();
    let mut z = ctx.zeros_batch::<f32>(count, m, n).unwrap();
    // Every entry times the one weight, and every entry times its own column-major B.
    s.run(&Matmul::with_options(&GemmOptions::default()), &dx, &dw, &mut y)
        .unwrap();
    s.run(&Matmul::with_options(&GemmOptions::default()), &dx, &dkt, &mut z)
        .unwrap();
    let (ry, rz) = (s.download(y.matrix()).unwrap(), s.download(z.matrix()).unwrap());
    s.submit().unwrap();
    let as_host = |data: Vec<f32>| HostBatch {
        data,
        rows: m,
        cols: n,
        layout: Layout::RowMajor,
        ld: n,
        count,
        stride: m * n,
    };
    let zero = as_host(vec![0.0; count * m * n]);
    let w_shared = HostBatch { count, stride: 0, ..w };
    let z0 = as_host(rz.wait().unwrap());
    check(
        &x,
        &w_shared,
        (&zero, &as_host(ry.wait().unwrap())),
        (1.0, 0.0),
        true,
        0.0,
    );
    check(&x, &kt, (&zero, &z0), (1.0, 0.0), true, 0.0);
    // The blocking form, accumulating: z += x * w.
    let accumulate = GemmOptions {
        beta: 1.0,
        ..Default::default()
    };
    ctx.run(&Matmul::with_options(&accumulate), &dx, &dw, &mut z).unwrap();
    let mut z1 = vec![0.0f32; count * m * n];
    ctx.download(z.matrix(), MatMut::new(&mut z1, count * m, n)).unwrap();
    check(&x, &w_shared, (&z0, &as_host(z1)), (1.0, 1.0), true, 0.0);
    // Misuse: counts that differ, a matrix that does not cut into entries, a count of zero.
    let mut short = ctx.zeros_batch::<f32>(count - 1, m, n).unwrap();
    let e = s
        .run(&Matmul::with_options(&GemmOptions::default()), &dx, &dw, &mut short)
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
    let e = DeviceBatch::from_matrix(ctx.zeros::<f32>(10, 4).unwrap(), 3).unwrap_err();
    assert!(
        matches!(e, Error::InvalidOperand(_)) && e.to_string().contains("3 equal entries"),
        "{e}"
    );
    assert!(DeviceBatch::from_matrix(ctx.zeros::<f32>(10, 4).unwrap(), 0).is_err());
    assert_no_validation_messages(ctx);
}

/// Batches the grid's z cannot hold at once, or whose windows outgrow the buffer range, run in
/// chunks: checked on a context with cut-down limits, and once beyond the real z limit.
#[test]
fn batches_beyond_the_device_limits_run_in_chunks() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let z_limit = ctx.device_info().limits.max_workgroup_count[2] as usize;
    let (m, n, k) = (3, 2, 5);
    run_host::<f16, f16, f32>(
        ctx,
        &mut rng,
        z_limit + 2,
        (m, n, k),
        [Layout::RowMajor; 3],
        false,
        &GemmOptions::default(),
        true,
        0.0,
    );
    let device = DispatchLimits::from_device(&ctx.device_info().limits);
    let limits = DispatchLimits {
        max_groups: [device.max_groups[0], device.max_groups[1], 4],
        max_range: 8 << 10,
        ..device
    };
    let small = Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        limits_override: Some(limits),
        ..Default::default()
    })
    .unwrap();
    for layouts in [
        [Layout::RowMajor; 3],
        [Layout::ColMajor, Layout::ColMajor, Layout::RowMajor],
    ] {
        run_host::<f16, f16, f32>(
            &small,
            &mut rng,
            11,
            (40, 24, 16),
            layouts,
            false,
            &GemmOptions::default(),
            true,
            0.0,
        );
        run_host::<f16, f16, f32>(
            &small,
            &mut rng,
            9,
            (40, 24, 16),
            layouts,
            true,
            &GemmOptions::default(),
            true,
            0.0,
        );
    }
    assert_no_validation_messages(&small);
    assert_no_validation_messages(ctx);
}

#[test]
fn bad_batches_are_typed_errors() {
    let ctx = context();
    let (a, b) = (vec![f16::ONE; 4 * 6 * 5], vec![f16::ONE; 5 * 3]);
    let mut c = vec![0.0f32; 4 * 6 * 3];
    let opts = GemmOptions::default();
    let av = BatchRef::new(&a, 4, 6, 5);
    let bv = BatchRef::broadcast(MatRef::new(&b, 5, 3), 4);
    // Counts that differ.
    let e = ctx
        .run(
            &Matmul::with_options(&opts),
            av,
            BatchRef::broadcast(MatRef::new(&b, 5, 3), 3),
            BatchMut::new(&mut c, 4, 6, 3),
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
    // A slice too short for the last entry.
    let e = ctx
        .run(
            &Matmul::with_options(&opts),
            BatchRef::new(&a[1..], 4, 6, 5),
            bv,
            BatchMut::new(&mut c, 4, 6, 3),
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShortSlice { matrix: "A", .. }), "{e}");
    // C's entries overlapping (a shared C would race).
    let e = ctx
        .run(
            &Matmul::with_options(&opts),
            av,
            bv,
            BatchMut::strided(MatMut::new(&mut c, 6, 3), 4, 0),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidOperand(_)) && e.to_string().contains("overlap"),
        "{e}"
    );
    // No entries.
    let e = ctx
        .run(
            &Matmul::with_options(&opts),
            BatchRef::new(&a, 0, 6, 5),
            bv,
            BatchMut::new(&mut c, 0, 6, 3),
        )
        .unwrap_err();
    assert!(e.to_string().contains("at least 1"), "{e}");
    // Entries of 0 rows, 0 columns or K = 0: the zero-size error a single GEMM gets, not an
    // overlap (and no panic computing one).
    let empty: [f16; 0] = [];
    let mut none: [f32; 0] = [];
    for (m, n, k) in [(0, 3, 5), (6, 0, 5), (6, 3, 0)] {
        let (a0, b0) = (&a[..4 * m * k], &b[..n * k]);
        let (bv0, c0) = (BatchRef::broadcast(MatRef::new(b0, k, n), 4), &mut c[..4 * m * n]);
        let e = ctx
            .run(
                &Matmul::with_options(&opts),
                BatchRef::new(a0, 4, m, k),
                bv0,
                BatchMut::new(c0, 4, m, n),
            )
            .unwrap_err();
        assert!(matches!(e, Error::ZeroSize { .. }), "{m}x{n}x{k}: {e}");
    }
    let e = ctx
        .run(
            &Matmul::with_options(&opts),
            BatchRef::new(&empty, 3, 0, 5),
            BatchRef::broadcast(MatRef::new(&b, 5, 3), 3),
            BatchMut::strided(MatMut::new(&mut none, 0, 3), 3, 0),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::ZeroSize { m: 0, .. }),
        "entries of 0 rows at stride 0: {e}"
    );
    // Entry shapes that do not multiply.
    let e = ctx
        .run(
            &Matmul::with_options(&opts),
            BatchRef::new(&a, 4, 5, 6),
            bv,
            BatchMut::new(&mut c, 4, 6, 3),
        )
        .unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
    // Sizes whose products overflow: typed errors, no panic.
    let e = ctx
        .run(
            &Matmul::with_options(&opts),
            BatchRef::new(&a, 3, usize::MAX, 2),
            bv,
            BatchMut::new(&mut c, 4, 6, 3),
        )
        .unwrap_err();
    assert!(matches!(e, Error::TooLarge(_) | Error::ShortSlice { .. }), "{e}");
    assert!(ctx.upload_batch(BatchRef::new(&a, usize::MAX, 6, 5)).is_err());
    assert!(ctx.upload_batch(BatchRef::new(&a, 2, 0, 5)).is_err());
    assert!(c.iter().all(|&x| x == 0.0), "a refused GEMM leaves C untouched");
    assert_no_validation_messages(ctx);
}

/// Checks a grouped GEMM's C exactly, group by group: its rows of A and C against its weight.
fn assert_groups(
    (a, w, c_in): (&HostBatch<f16>, &HostBatch<f16>, &HostBatch<f32>),
    c: &[f32],
    rows: &[usize],
    (alpha, beta): (f64, f64),
    what: &str,
) {
    let (n, k) = (w.cols, a.cols);
    let mut first = 0;
    for (gi, &m) in rows.iter().enumerate() {
        for r in first..first + m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|p| a.at(0, r, p) * w.at(gi, p, j)).sum();
                let want = alpha * dot + if beta == 0.0 { 0.0 } else { beta * c_in.at(0, r, j) };
                assert_eq!(f64::from(c[r * n + j]), want, "{what}: group {gi} row {r} col {j}");
            }
        }
        first += m;
    }
}

/// Host batches and grouped GEMMs whose operands exceed the allocation limit run in pieces:
/// runs of entries, then rows and columns of one entry; groups one by one, each cut as a GEMM.
#[test]
fn host_batches_and_groups_over_the_allocation_limit_run_in_pieces() {
    let ctx = capped_context(4096);
    let mut rng = Rng::new(Rng::fresh_seed());
    let options = GemmOptions {
        alpha: 2.0,
        beta: 0.5,
        ..Default::default()
    };
    // Nine 40x16 f16 A entries take 11.5 KB; a 100x70 entry alone takes 14 KB.
    for (count, shape, share_b) in [(9, (40, 24, 16), true), (2, (100, 30, 70), false)] {
        for layouts in [
            [Layout::RowMajor; 3],
            [Layout::ColMajor, Layout::ColMajor, Layout::RowMajor],
        ] {
            run_host::<f16, f16, f32>(&ctx, &mut rng, count, shape, layouts, share_b, &options, true, 0.0);
        }
    }
    let rows = [70usize, 0, 50, 1];
    let (total, n, k) = (rows.iter().sum::<usize>(), 23, 37);
    let a = HostBatch::<f16>::new(&mut rng, 1, (total, k), Layout::RowMajor, 0, false, true);
    let w = HostBatch::<f16>::new(&mut rng, rows.len(), (k, n), Layout::ColMajor, 1, false, true);
    let c_in = HostBatch::<f32>::new(&mut rng, 1, (total, n), Layout::RowMajor, 0, false, true);
    let mut c = c_in.data.clone();
    ctx.run(
        &Matmul::with_options(&options).grouped(&rows),
        a.mat(),
        w.batch(),
        MatMut::new(&mut c, total, n),
    )
    .unwrap();
    assert_groups((&a, &w, &c_in), &c, &rows, (2.0, 0.5), "grouped in pieces");
    assert_no_validation_messages(&ctx);
}

/// Grouped GEMM: ragged groups (one empty, one of a single row) sharing N and K, each with its
/// own weight, on host and device matrices; every row compared exactly.
#[test]
fn grouped_gemms_match_the_reference() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let rows = [7usize, 0, 13, 1, 29];
    let (total, n, k) = (rows.iter().sum::<usize>(), 23, 37);
    let g = rows.len();
    for lb in LAYOUTS {
        let a = HostBatch::<f16>::new(&mut rng, 1, (total, k), Layout::RowMajor, 0, false, true);
        let w = HostBatch::<f16>::new(&mut rng, g, (k, n), lb, 1, false, true);
        let c_in = HostBatch::<f32>::new(&mut rng, 1, (total, n), Layout::RowMajor, 0, false, true);
        let options = GemmOptions {
            alpha: 2.0,
            beta: 0.5,
            ..Default::default()
        };
        let mut c = c_in.data.clone();
        ctx.run(
            &Matmul::with_options(&options).grouped(&rows),
            a.mat(),
            w.batch(),
            MatMut::new(&mut c, total, n),
        )
        .unwrap();
        assert_groups((&a, &w, &c_in), &c, &rows, (2.0, 0.5), &format!("host {lb:?}"));
        // The same on a stream, into a poisoned C, B uploaded once.
        let mut s = ctx.stream().unwrap();
        let (da, dw) = (s.upload(a.mat()).unwrap(), ctx.upload_batch(w.batch()).unwrap());
        let mut dc = ctx.zeros::<f32>(total, n).unwrap();
        s.run(
            &Matmul::with_options(&GemmOptions::default()).grouped(&rows),
            &da,
            &dw,
            &mut dc,
        )
        .unwrap();
        let got = s.download(&dc).unwrap();
        s.submit().unwrap();
        let got = got.wait().unwrap();
        assert_groups((&a, &w, &c_in), &got, &rows, (1.0, 0.0), "stream");
        // Misuse: sizes that do not add up to A's rows, one size too few, column-major A.
        let mut c2 = vec![0.0f32; total * n];
        let opts = GemmOptions::default();
        let mut short = rows;
        short[0] -= 1;
        let e = ctx
            .run(
                &Matmul::with_options(&opts).grouped(&short),
                a.mat(),
                w.batch(),
                MatMut::new(&mut c2, total, n),
            )
            .unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
        let e = ctx
            .run(
                &Matmul::with_options(&opts).grouped(&rows[1..]),
                a.mat(),
                w.batch(),
                MatMut::new(&mut c2, total, n),
            )
            .unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
        let at = MatRef::col_major(&a.data, total, k);
        let e = ctx
            .run(
                &Matmul::with_options(&opts).grouped(&rows),
                at,
                w.batch(),
                MatMut::new(&mut c2, total, n),
            )
            .unwrap_err();
        assert!(matches!(e, Error::InvalidOperand(_)), "{e}");
    }
    assert_no_validation_messages(ctx);
}
