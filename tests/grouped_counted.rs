//! Grouped GEMMs whose group sizes the device holds (`gemm_grouped_counted`): counts that fill A,
//! counts that leave rows past their sum (which C keeps), empty groups and groups of one row,
//! counts stored in a row or strided down a column, both layouts of the weights, a fused
//! epilogue, the stream form, and counts that overrun A (an error, C untouched). Small-integer
//! inputs make every result exact, so C is compared element by element with an f64 reference.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, context, ints};
use half::f16;
use vk_sgmat::plan::Kernel;
use vk_sgmat::Matmul;
use vk_sgmat::{
    Activation, Axis, BatchRef, Context, DeviceMatrix, Element, Error, Fused, GemmOptions, Layout, MatMut, MatRef,
};

/// How the counts are stored on the device.
#[derive(Copy, Clone, Debug)]
enum Stored {
    /// One row: `1 x G`, contiguous.
    Row,
    /// One column of a row-major `G x 1` matrix: a count every leading dimension (4 words).
    Column,
}

fn upload_counts(ctx: &Context, counts: &[u32], stored: Stored) -> DeviceMatrix<u32> {
    let g = counts.len();
    match stored {
        Stored::Row => ctx.upload(MatRef::new(counts, 1, g)),
        Stored::Column => ctx.upload(MatRef::new(counts, g, 1)),
    }
    .unwrap()
}

/// How a case runs: the blocking call, a stream, or a prepared operation's own run (which binds
/// the epilogue's vectors it holds).
#[derive(Copy, Clone, Debug, PartialEq)]
enum Via {
    Blocking,
    Stream,
    Prepared,
}

/// One case: A and C of `m` rows, groups of `counts` rows (their sum at most `m` unless the
/// case expects an error), `K x N` weights stored `b_layout`, an optional column bias per group
/// with ReLU. Runs it `via` and checks every element: each group's rows against the reference,
/// the rows past the counts' sum as they were.
struct Case<'a> {
    m: usize,
    counts: &'a [u32],
    nk: (usize, usize),
    b_layout: Layout,
    stored: Stored,
    fused: bool,
    via: Via,
}

fn run<TA: Element, TC: Element>(ctx: &Context, rng: &mut Rng, case: &Case<'_>, options: &GemmOptions) {
    let (m, (n, k), g) = (case.m, case.nk, case.counts.len());
    let a: Vec<TA> = ints(rng, m * k);
    let w: Vec<TA> = ints(rng, g * k * n);
    let c_in: Vec<TC> = ints(rng, m * n);
    let bias: Vec<f32> = ints(rng, g * n);
    let ld_w = case.b_layout.outer_inner(k, n).1;
    let weights = BatchRef::strided(MatRef::stored(&w, k, n, case.b_layout, ld_w), g, k * n);
    let da = ctx.upload(MatRef::new(&a, m, k)).unwrap();
    let dw = ctx.upload_batch(weights).unwrap();
    let mut dc = ctx.upload(MatRef::new(&c_in, m, n)).unwrap();
    let dcounts = upload_counts(ctx, case.counts, case.stored);
    let dbias = ctx.upload(MatRef::new(&bias, 1, g * n)).unwrap();
    let f = Fused::new().bias(Axis::Col, &dbias).activation(Activation::Relu);
    let counted = Matmul::with_options(options).grouped_by_device_counts(&dcounts);
    let op = if case.fused { counted.fused(&f) } else { counted };

    let prepared = ctx.prepare(&op, &da, &dw, &mut dc).unwrap();
    let plan = prepared.plans().next().expect("a plan").clone();
    let kinds: Vec<_> = plan.dispatches.iter().map(|d| d.kernel).collect();
    // Decode (A's rows few, the weights contiguous along K, a type the matrix-vector kernel
    // takes) runs a table row per tile of a group's rows on that kernel (at most one per row
    // of A); the rest a grouped GEMM's tile rows.
    let decode = m <= 8 && case.b_layout == Layout::ColMajor && TA::TYPE.is_float();
    let tile = (options
        .gemv_group_rows
        .unwrap_or(vk_sgmat::plan::counted_decode_rows(false)) as usize)
        .min(m);
    let table_rows = match kinds[..] {
        [Kernel::GroupTable, Kernel::Gemv(key)] if decode && key.grouped && key.rows as usize == tile => {
            (m.div_ceil(tile) + g - 1).min(m)
        }
        [Kernel::GroupTable, Kernel::Gemm(key)] if !decode && key.grouped => {
            m.div_ceil(plan.scheme.geometry(&plan.config).bm as usize) + g - 1
        }
        _ => panic!("a table pass, then one grouped dispatch (decode {decode}): {kinds:?}"),
    };
    assert_eq!(plan.dispatches[1].groups[1] as usize, table_rows);

    match case.via {
        Via::Prepared => prepared.run().unwrap(),
        Via::Stream => {
            let mut s = ctx.stream().unwrap();
            s.run(&op, &da, &dw, &mut dc).unwrap();
            s.submit().unwrap().wait().unwrap();
        }
        Via::Blocking => ctx.run(&op, &da, &dw, &mut dc).unwrap(),
    }
    let mut got = vec![TC::from_f64(0.0); m * n];
    ctx.download(&dc, MatMut::new(&mut got, m, n)).unwrap();

    let weight = |gi: usize, p: usize, j: usize| match case.b_layout {
        Layout::RowMajor => w[gi * k * n + p * n + j].to_f64(),
        Layout::ColMajor => w[gi * k * n + j * k + p].to_f64(),
    };
    let what = format!(
        "{} -> {}, counts {:?} of {m} rows stored as a {:?}, B {:?}, fused {}, via {:?}",
        TA::TYPE,
        TC::TYPE,
        case.counts,
        case.stored,
        case.b_layout,
        case.fused,
        case.via
    );
    let mut first = 0;
    for (gi, &rows) in case.counts.iter().enumerate() {
        for r in first..first + rows as usize {
            for j in 0..n {
                let dot: f64 = (0..k).map(|p| a[r * k + p].to_f64() * weight(gi, p, j)).sum();
                let mut want = options.alpha * dot + options.beta * c_in[r * n + j].to_f64();
                if case.fused {
                    want = (want + f64::from(bias[gi * n + j])).max(0.0);
                }
                assert_eq!(got[r * n + j].to_f64(), want, "{what}: group {gi}, row {r}, column {j}");
            }
        }
        first += rows as usize;
    }
    for r in first..m {
        for j in 0..n {
            assert_eq!(
                got[r * n + j],
                c_in[r * n + j],
                "{what}: row {r} past the counts, column {j}"
            );
        }
    }
}

/// Every group's rows right and nothing else touched, for counts that fill A and counts that
/// do not, in both storage forms of the counts and both layouts of the weights.
#[test]
fn counts_on_the_device_run_every_group() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let options = GemmOptions {
        alpha: 2.0,
        beta: -1.0,
        ..Default::default()
    };
    let cases: [(usize, &[u32]); 4] = [
        (213, &[70, 0, 9, 1, 130, 3]),
        (150, &[33, 0, 64, 1]),
        (7, &[0, 0, 0]),
        (1, &[1]),
    ];
    for (i, (m, counts)) in cases.into_iter().enumerate() {
        for (j, b_layout) in [Layout::RowMajor, Layout::ColMajor].into_iter().enumerate() {
            let case = Case {
                m,
                counts,
                nk: (45, 37),
                b_layout,
                stored: if (i + j) % 2 == 0 { Stored::Row } else { Stored::Column },
                fused: false,
                via: Via::Blocking,
            };
            run::<f16, f32>(ctx, &mut rng, &case, &options);
        }
    }
    assert_no_validation_messages(ctx);
}

/// Integer and 16-bit results, beta 0 (C is then only written, and its rows past the counts
/// must survive the poisoning the tests' context does), a fused column bias per group with
/// ReLU, the stream form, and a prepared operation's own run (with the epilogue's bias).
#[test]
fn counted_groups_in_other_types_fused_and_on_streams() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let plain = GemmOptions::default();
    let case = |counts, fused, via| Case {
        m: 100,
        counts,
        nk: (24, 40),
        b_layout: Layout::ColMajor,
        stored: Stored::Row,
        fused,
        via,
    };
    run::<i8, i32>(ctx, &mut rng, &case(&[40, 0, 17, 30], false, Via::Blocking), &plain);
    run::<f16, f16>(ctx, &mut rng, &case(&[9, 51, 1], false, Via::Stream), &plain);
    run::<f16, f32>(ctx, &mut rng, &case(&[60, 0, 39], true, Via::Blocking), &plain);
    run::<f16, f16>(ctx, &mut rng, &case(&[12, 88], true, Via::Stream), &plain);
    run::<f16, f32>(ctx, &mut rng, &case(&[30, 0, 55], true, Via::Prepared), &plain);
    run::<i8, i32>(ctx, &mut rng, &case(&[1, 70, 9, 0], false, Via::Prepared), &plain);
    // f32 in the default accurate mode (whose largest-magnitude passes would come before the
    // one dispatch the counts need: the exact kernel runs it), plain and fused.
    run::<f32, f32>(ctx, &mut rng, &case(&[7, 0, 13, 1, 29], false, Via::Blocking), &plain);
    run::<f32, f32>(ctx, &mut rng, &case(&[50, 2], true, Via::Stream), &plain);
    assert_no_validation_messages(ctx);
}

/// Decode's shapes (at most 8 rows of A, weights `N x K`) on the matrix-vector kernel, each
/// workgroup row taking its group from the table: groups of one row, empty ones, counts short
/// of A, f32 and f16 results, a fused bias per group, a stream; and the weights `K x N` (not
/// contiguous along K) on the grouped GEMM.
#[test]
fn counted_decode_runs_each_group_on_the_matrix_vector_kernel() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let scaled = GemmOptions {
        alpha: 2.0,
        beta: -1.0,
        ..Default::default()
    };
    let case = |m, counts, b_layout, fused, via| Case {
        m,
        counts,
        nk: (45, 37),
        b_layout,
        stored: Stored::Column,
        fused,
        via,
    };
    let col = Layout::ColMajor;
    run::<f16, f32>(
        ctx,
        &mut rng,
        &case(2, &[1, 0, 0, 1], col, false, Via::Blocking),
        &scaled,
    );
    run::<f16, f32>(ctx, &mut rng, &case(8, &[3, 0, 2, 1], col, false, Via::Stream), &scaled);
    run::<f32, f32>(
        ctx,
        &mut rng,
        &case(5, &[0, 5], col, true, Via::Prepared),
        &GemmOptions::default(),
    );
    run::<f16, f16>(
        ctx,
        &mut rng,
        &case(3, &[1, 1, 1], col, true, Via::Blocking),
        &GemmOptions::default(),
    );
    run::<f16, f32>(
        ctx,
        &mut rng,
        &case(4, &[2, 0, 1], Layout::RowMajor, false, Via::Blocking),
        &scaled,
    );
    // Tiles of two, three and eight rows: groups of five and three rows take one or several.
    for rows in [2, 3, 8] {
        let tiles = GemmOptions {
            gemv_group_rows: Some(rows),
            ..scaled.clone()
        };
        run::<f16, f32>(ctx, &mut rng, &case(8, &[5, 0, 3], col, true, Via::Blocking), &tiles);
    }
    assert_no_validation_messages(ctx);
}

/// Counts past A's rows run no group: the blocking call says so and C is as it was, whatever
/// the counts hold (u32::MAX included: nothing wraps).
#[test]
fn counts_past_a_are_an_error_and_leave_c_as_it_was() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (50, 20, 16);
    let a: Vec<f16> = ints(&mut rng, m * k);
    let w: Vec<f16> = ints(&mut rng, 3 * k * n);
    let c_in: Vec<f32> = ints(&mut rng, m * n);
    let da = ctx.upload(MatRef::new(&a, m, k)).unwrap();
    let dw = ctx
        .upload_batch(BatchRef::strided(MatRef::new(&w, k, n), 3, k * n))
        .unwrap();
    for counts in [[20u32, 20, 11], [u32::MAX, 1, 0], [0, 50, u32::MAX]] {
        let mut dc = ctx.upload(MatRef::new(&c_in, m, n)).unwrap();
        let dcounts = upload_counts(ctx, &counts, Stored::Row);
        let e = ctx.run(
            &Matmul::with_options(&GemmOptions::default()).grouped_by_device_counts(&dcounts),
            &da,
            &dw,
            &mut dc,
        );
        assert!(
            matches!(&e, Err(Error::ShapeMismatch(msg)) if msg.contains("no group ran")),
            "{counts:?}: {e:?}"
        );
        let mut got = vec![0f32; m * n];
        ctx.download(&dc, MatMut::new(&mut got, m, n)).unwrap();
        assert_eq!(got, c_in, "{counts:?}: C as it was");
    }
    assert_no_validation_messages(ctx);
}

/// What cannot be is refused before anything runs: counts of the wrong length or shape, a
/// column-major C, and what would make more than one dispatch (split-K).
#[test]
fn counted_groups_refuse_what_cannot_run() {
    let ctx = context();
    // K long enough for split-K to cut.
    let (m, n, k) = (30, 8, 512);
    let da = ctx.upload(MatRef::new(&vec![f16::ZERO; m * k], m, k)).unwrap();
    let dw = ctx
        .upload_batch(BatchRef::strided(
            MatRef::new(&vec![f16::ZERO; 2 * k * n], k, n),
            2,
            k * n,
        ))
        .unwrap();
    let mut dc = ctx.upload(MatRef::new(&vec![0f32; m * n], m, n)).unwrap();
    let plain = GemmOptions::default();
    let plan = |counts: &DeviceMatrix<u32>, c: &mut DeviceMatrix<f32>, options: &GemmOptions| {
        ctx.prepare(
            &Matmul::with_options(options).grouped_by_device_counts(counts),
            &da,
            &dw,
            c,
        )
        .map(|p| p.plans().next().expect("a plan").clone())
    };
    let three = upload_counts(ctx, &[1, 2, 3], Stored::Row);
    assert!(matches!(plan(&three, &mut dc, &plain), Err(Error::ShapeMismatch(_))));
    let square = ctx.upload(MatRef::new(&[1u32, 2, 3, 4], 2, 2)).unwrap();
    assert!(matches!(plan(&square, &mut dc, &plain), Err(Error::ShapeMismatch(_))));
    let two = upload_counts(ctx, &[10, 20], Stored::Column);
    let mut dc_t = ctx
        .upload(MatRef::stored(&vec![0f32; m * n], m, n, Layout::ColMajor, m))
        .unwrap();
    assert!(matches!(plan(&two, &mut dc_t, &plain), Err(Error::InvalidOperand(_))));
    let split = GemmOptions {
        split_k: Some(2),
        ..Default::default()
    };
    let e = plan(&two, &mut dc, &split);
    assert!(
        matches!(&e, Err(Error::Unsupported(msg)) if msg.contains("one dispatch")),
        "{e:?}"
    );
    assert!(plan(&two, &mut dc, &plain).is_ok());
    for rows in [0, 9] {
        let tiles = GemmOptions {
            gemv_group_rows: Some(rows),
            ..Default::default()
        };
        let e = plan(&two, &mut dc, &tiles);
        assert!(
            matches!(&e, Err(Error::InvalidOption(msg)) if msg.contains("gemv_group_rows")),
            "{e:?}"
        );
    }
    assert_no_validation_messages(ctx);
}
