//! Batched GEMMs with fused epilogues on the present driver: every entry of the batch through
//! one bias (per row or per column, shared by the entries), an activation and an output cast
//! (f32 accumulation stored as f16), dequantised i8 batches, shared weights, every layout of A,
//! B and C, alpha and beta, odd sizes; host, device and stream forms; host batches over the
//! allocation limit in pieces; misuse as typed errors. Every element of every entry is checked
//! against the f64 reference of `verify::fused`, with C poisoned before each run.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::fused::{compare_fused, FusedRef};
use crate::verify::{input_roundoff, random_vec, reference, Rng};
use common::{assert_no_validation_messages, capped_context, context, LAYOUTS};
use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{
    Activation, Axis, BatchMut, BatchRef, ComponentType, Context, Element, Error, Fused, GemmOptions, Layout, MatMut,
    MatRef,
};

fn floats(rng: &mut Rng, len: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..len).map(|_| (lo + (hi - lo) * rng.unit()) as f32).collect()
}

/// A dense `rows x cols` matrix stored `layout`.
fn stored<T>(data: &[T], rows: usize, cols: usize, layout: Layout) -> MatRef<'_, T> {
    let ld = if layout == Layout::RowMajor { cols } else { rows };
    MatRef::stored(data, rows, cols, layout, ld)
}

/// One batched fused GEMM.
#[derive(Clone, Copy)]
struct Case {
    count: usize,
    mnk: (usize, usize, usize),
    layouts: [Layout; 3],
    shared_b: bool,
    bias: Option<Axis>,
    activation: Activation,
    alpha: f64,
    beta: f64,
}

fn case(count: usize, mnk: (usize, usize, usize)) -> Case {
    Case {
        count,
        mnk,
        layouts: [Layout::RowMajor; 3],
        shared_b: false,
        bias: None,
        activation: Activation::None,
        alpha: 1.0,
        beta: 0.0,
    }
}

/// Random inputs for `case`: A, B (one matrix if shared), C's old values, the bias and (8-bit
/// inputs) the row and column scales.
struct Inputs<TA, TB, TC> {
    a: Vec<TA>,
    b: Vec<TB>,
    c: Vec<TC>,
    bias: Vec<f32>,
    scales: Option<(Vec<f32>, Vec<f32>)>,
}

fn inputs<TA: Element, TB: Element, TC: Element>(case: &Case, seed: u64) -> Inputs<TA, TB, TC> {
    let mut rng = Rng::new(seed);
    let (m, n, k) = case.mnk;
    let a = random_vec(&mut rng, case.count * m * k);
    let b = random_vec(&mut rng, if case.shared_b { 1 } else { case.count } * k * n);
    let c = floats(&mut rng, case.count * m * n, -1.0, 1.0)
        .iter()
        .map(|&x| TC::from_f64(x.into()))
        .collect();
    let bias = match case.bias {
        Some(Axis::Row) => floats(&mut rng, m, -2.0, 2.0),
        Some(Axis::Col) => floats(&mut rng, n, -2.0, 2.0),
        None => Vec::new(),
    };
    // Scales near 1/64 keep dequantised i8 sums of K <= 64 terms in f16's range.
    let int = matches!(TA::TYPE, ComponentType::I8 | ComponentType::U8);
    let scales = int.then(|| (floats(&mut rng, m, 0.001, 0.03), floats(&mut rng, n, 0.001, 0.03)));
    Inputs { a, b, c, bias, scales }
}

impl<TA, TB, TC> Inputs<TA, TB, TC> {
    fn fused(&self, case: &Case) -> Fused<'_> {
        let mut f = Fused::new().activation(case.activation);
        if let Some(axis) = case.bias {
            f = f.bias(axis, &self.bias);
        }
        if let Some((r, c)) = &self.scales {
            f = f.scales(r, c);
        }
        f
    }
}

/// Checks every element of every entry of `got` (row-major or column-major as `case` says)
/// against the f64 reference of `case` on `inp`.
fn check<TA: Element, TB: Element, TC: Element>(
    case: &Case,
    inp: &Inputs<TA, TB, TC>,
    got: &[TC],
    options: &GemmOptions,
) {
    let (m, n, k) = case.mnk;
    let [la, lb, lc] = case.layouts;
    let f64s = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
    let r = FusedRef {
        alpha: case.alpha,
        beta: case.beta,
        bias: case.bias.map(|axis| (axis, f64s(&inp.bias))),
        activation: case.activation,
        scales: inp.scales.as_ref().map(|(r, c)| (f64s(r), f64s(c))),
    };
    let at = |v: &[TC], e: usize, i: usize, j: usize| match lc {
        Layout::RowMajor => v[e * m * n + i * n + j],
        Layout::ColMajor => v[e * m * n + j * m + i],
    };
    let rows: Vec<usize> = (0..m).collect();
    let int = matches!(TA::TYPE, ComponentType::I8 | ComponentType::U8);
    let acc = if int { ComponentType::I32 } else { ComponentType::F32 };
    let input_u = input_roundoff(TA::TYPE, TB::TYPE, options.compute).unwrap();
    for e in 0..case.count {
        let am = stored(&inp.a[e * m * k..], m, k, la);
        let b_at = if case.shared_b { 0 } else { e * k * n };
        let bm = stored(&inp.b[b_at..], k, n, lb);
        let (dot, mag) = reference::<TA, TB, TC>(&am, &bm, None, 1.0, 0.0, &rows);
        let (mut want, mut magnitude) = (vec![0.0; m * n], vec![0.0; m * n]);
        for x in 0..m * n {
            let (i, j) = (x / n, x % n);
            (want[x], magnitude[x]) = r.apply((i, j), (dot[x], mag[x]), at(&inp.c, e, i, j).to_f64());
        }
        let entry: Vec<TC> = (0..m * n).map(|x| at(got, e, x / n, x % n)).collect();
        let c = compare_fused(&entry, (n, n), &rows, (&want, &magnitude), (acc, k), input_u);
        assert!(
            c.passed,
            "{} x {} -> {} entry {e} of {} {m}x{n}x{k} {:?} shared B {} bias {:?} {:?}: {c:?}",
            TA::TYPE,
            TB::TYPE,
            TC::TYPE,
            case.count,
            case.layouts,
            case.shared_b,
            case.bias,
            case.activation
        );
    }
}

/// Runs `case` through the host form on `ctx` and checks it.
fn run_host<TA: Element, TB: Element, TC: Element>(ctx: &Context, case: Case, options: &GemmOptions, seed: u64) {
    let (m, n, k) = case.mnk;
    let [la, lb, lc] = case.layouts;
    let inp = inputs::<TA, TB, TC>(&case, seed);
    let a = BatchRef::strided(stored(&inp.a, m, k, la), case.count, m * k);
    let b_stride = if case.shared_b { 0 } else { k * n };
    let b = BatchRef::strided(stored(&inp.b, k, n, lb), case.count, b_stride);
    let mut out = inp.c.clone();
    let cm = match lc {
        Layout::RowMajor => MatMut::new(&mut out, m, n),
        Layout::ColMajor => MatMut::col_major(&mut out, m, n),
    };
    let opts = GemmOptions {
        alpha: case.alpha,
        beta: case.beta,
        ..options.clone()
    };
    ctx.run(
        &Matmul::with_options(&opts).fused(&inp.fused(&case)),
        a,
        b,
        BatchMut::strided(cm, case.count, m * n),
    )
    .unwrap_or_else(|e| panic!("batch of {} {m}x{n}x{k} {:?}: {e}", case.count, case.layouts));
    check(&case, &inp, &out, &opts);
}

#[test]
fn every_layout_with_bias_activation_and_an_f16_cast() {
    let ctx = context();
    let opts = GemmOptions::default();
    let mut seed = 1;
    for la in LAYOUTS {
        for lb in LAYOUTS {
            for lc in LAYOUTS {
                for (count, mnk, shared_b) in [(3, (13, 31, 7), false), (2, (33, 17, 41), true), (1, (1, 1, 1), false)]
                {
                    let c = Case {
                        layouts: [la, lb, lc],
                        shared_b,
                        bias: Some(if seed % 2 == 0 { Axis::Row } else { Axis::Col }),
                        activation: Activation::ALL[seed as usize % Activation::ALL.len()],
                        alpha: 0.75,
                        beta: 0.5,
                        ..case(count, mnk)
                    };
                    run_host::<f16, f16, f16>(ctx, c, &opts, seed);
                    seed += 1;
                }
            }
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn f32_results_mixed_inputs_and_dequantised_i8_batches() {
    let ctx = context();
    let opts = GemmOptions::default();
    let c = Case {
        bias: Some(Axis::Col),
        activation: Activation::Gelu,
        beta: 0.25,
        ..case(4, (37, 29, 64))
    };
    run_host::<f16, f16, f32>(ctx, c, &opts, 300);
    run_host::<f16, f32, f16>(ctx, c, &opts, 301);
    // A batch of f32 operands in the accurate mode runs the exact kernel, fused as well.
    run_host::<f32, f32, f32>(ctx, c, &opts, 302);
    let fast = GemmOptions {
        compute: vk_sgmat::ComputeMode::FastF16,
        ..Default::default()
    };
    run_host::<f32, f32, f16>(ctx, c, &fast, 303);
    for lc in LAYOUTS {
        let c = Case {
            layouts: [Layout::RowMajor, Layout::ColMajor, lc],
            bias: Some(Axis::Row),
            activation: Activation::Relu,
            ..case(3, (45, 27, 64))
        };
        run_host::<i8, i8, f16>(ctx, c, &opts, 310);
        run_host::<i8, i8, f32>(ctx, c, &opts, 311);
        run_host::<u8, u8, f32>(ctx, Case { bias: None, ..c }, &opts, 312);
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn device_and_stream_forms_with_a_shared_weight_and_a_device_bias() {
    let ctx = context();
    let c = Case {
        shared_b: true,
        bias: Some(Axis::Col),
        activation: Activation::Silu,
        ..case(5, (40, 24, 19))
    };
    let (m, n, k) = c.mnk;
    let inp = inputs::<f16, f16, f16>(&c, 400);
    let da = ctx.upload_batch(BatchRef::new(&inp.a, c.count, m, k)).unwrap();
    let w = ctx.upload(MatRef::new(&inp.b, k, n)).unwrap();
    let bias = ctx.upload(MatRef::new(&inp.bias, 1, n)).unwrap();
    let fused = Fused::new().bias(Axis::Col, &bias).activation(c.activation);
    let opts = GemmOptions::default();

    let mut dc = ctx.zeros_batch::<f16>(c.count, m, n).unwrap();
    ctx.run(&Matmul::with_options(&opts).fused(&fused), &da, &w, &mut dc)
        .unwrap();
    let mut got = vec![f16::ZERO; c.count * m * n];
    ctx.download(dc.matrix(), MatMut::new(&mut got, c.count * m, n))
        .unwrap();
    check(&c, &inp, &got, &opts);
    let plan = ctx
        .prepare(&Matmul::with_options(&opts).fused(&fused), &da, &w, &mut dc)
        .map(|p| p.plans().next().expect("a plan").clone())
        .unwrap();
    assert_eq!(plan.problem.batch.count, c.count, "one plan runs the whole batch");

    // The same on a stream, into a fresh C: the same plan, so the same bits.
    let mut dc2 = ctx.zeros_batch::<f16>(c.count, m, n).unwrap();
    let mut s = ctx.stream().unwrap();
    s.run(&Matmul::with_options(&opts).fused(&fused), &da, &w, &mut dc2)
        .unwrap();
    let result = s.download(dc2.matrix()).unwrap();
    s.submit().unwrap();
    let got2 = result.wait().unwrap();
    assert!(
        got.iter().zip(&got2).all(|(x, y)| x.to_bits() == y.to_bits()),
        "the stream's batch differs from the blocking call's"
    );
    assert_no_validation_messages(ctx);
}

#[test]
fn host_batches_over_the_allocation_limit_run_in_pieces_of_c() {
    // 6 entries of 40x48 f32 C take 46 KB; A and B are far smaller: pieces of entries, then of
    // rows and columns, each with its rows and columns of the bias.
    let ctx = capped_context(8192);
    let opts = GemmOptions::default();
    for (bias, lc) in [(Axis::Col, Layout::RowMajor), (Axis::Row, Layout::ColMajor)] {
        let c = Case {
            layouts: [Layout::RowMajor, Layout::ColMajor, lc],
            bias: Some(bias),
            activation: Activation::Gelu,
            beta: 0.5,
            ..case(6, (40, 48, 20))
        };
        run_host::<f16, f16, f32>(&ctx, c, &opts, 500);
    }
    // K is not cut for an activation: a row of A alone over the limit is a typed error.
    let (m, n, k) = (4, 4, 4100);
    let (a, b) = (vec![f16::ONE; 2 * m * k], vec![f16::ONE; 2 * k * n]);
    let mut out = vec![0f32; 2 * m * n];
    let e = ctx
        .run(
            &Matmul::with_options(&opts).fused(&Fused::new().activation(Activation::Relu)),
            BatchRef::new(&a, 2, m, k),
            BatchRef::new(&b, 2, k, n),
            BatchMut::new(&mut out, 2, m, n),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::TooLarge(ref s) if s.contains("fused epilogue")),
        "{e}"
    );
    assert_no_validation_messages(&ctx);
}

#[test]
fn bad_batched_epilogues_are_typed_errors() {
    let ctx = context();
    let (m, n, k) = (8, 6, 5);
    let (a, b) = (vec![f16::ONE; 3 * m * k], vec![f16::ONE; 3 * k * n]);
    let (ai, bi) = (vec![1i8; 3 * m * k], vec![1i8; 3 * k * n]);
    let mut out = vec![0f32; 3 * m * n];
    let opts = GemmOptions::default();
    let short = vec![0f32; n - 1];
    let rows = vec![1f32; m];
    let cols = vec![1f32; n];
    let mut refused = |a: BatchRef<'_, _>, b: BatchRef<'_, _>, fused: &Fused<'_>| {
        ctx.run(
            &Matmul::with_options(&opts).fused(fused),
            a,
            b,
            BatchMut::new(&mut out, 3, m, n),
        )
        .unwrap_err()
    };
    let (a3, b3) = (BatchRef::new(&a, 3, m, k), BatchRef::new(&b, 3, k, n));
    let e = refused(a3, b3, &Fused::new().bias(Axis::Col, &short));
    assert!(matches!(e, Error::ShapeMismatch(ref s) if s.contains("bias")), "{e}");
    let e = refused(a3, b3, &Fused::new().scales(&rows, &cols));
    assert!(matches!(e, Error::Unsupported(ref s) if s.contains("i8 or u8")), "{e}");
    let e = refused(a3, BatchRef::new(&b, 2, k, n), &Fused::new());
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
    let e = ctx
        .run(
            &Matmul::with_options(&opts).fused(&Fused::new()),
            BatchRef::new(&ai, 3, m, k),
            BatchRef::new(&bi, 3, k, n),
            BatchMut::new(&mut out, 3, m, n),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::Unsupported(ref s) if s.contains("dequantisation")),
        "{e}"
    );
    assert!(out.iter().all(|&x| x == 0.0), "a refused call wrote C");
}
