//! Grouped GEMMs (mixture of experts) with fused epilogues: each group's own column bias or
//! channel scales (N values per group), row vectors over every group's rows, activations, the
//! f16 output cast, dequantised i8 groups; one dispatch where the groups run as one, and the
//! per-group fallbacks (the accurate f32 split, host operands over the allocation limit) with
//! the same vectors; host, device and stream forms; misuse as typed errors. Every element is
//! checked against the f64 reference of `verify::fused`, with C poisoned before each run.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::fused::{compare_fused, FusedRef};
use crate::verify::{input_roundoff, random_vec, reference, Rng};
use common::{assert_no_validation_messages, capped_context, context};
use half::f16;
use vk_sgmat::plan::{GemmPlan, Kernel};
use vk_sgmat::Matmul;
use vk_sgmat::{
    Activation, Axis, BatchRef, ComponentType, ComputeMode, Context, Element, Error, Fused, GemmOptions, Layout,
    MatMut, MatRef,
};

fn floats(rng: &mut Rng, len: usize, lo: f64, hi: f64) -> Vec<f32> {
    (0..len).map(|_| (lo + (hi - lo) * rng.unit()) as f32).collect()
}

/// One grouped fused GEMM: the groups' rows, N and K, the weights' layout and the terms.
#[derive(Clone, Copy)]
struct Case<'r> {
    rows: &'r [usize],
    nk: (usize, usize),
    b_layout: Layout,
    bias: Option<Axis>,
    activation: Activation,
    alpha: f64,
    beta: f64,
}

/// Random inputs: A (every group's rows), the weights, C's old values, the bias (sum(rows)
/// values per row, or N per group) and, for 8-bit inputs, row scales (per row) and column
/// scales (N per group).
struct Inputs<TA, TC> {
    a: Vec<TA>,
    w: Vec<TA>,
    c: Vec<TC>,
    bias: Vec<f32>,
    scales: Option<(Vec<f32>, Vec<f32>)>,
}

impl<TA: Element, TC: Element> Inputs<TA, TC> {
    fn new(case: &Case<'_>, rng: &mut Rng) -> Self {
        let (n, k) = case.nk;
        let (total, g) = (case.rows.iter().sum::<usize>(), case.rows.len());
        let a = random_vec(rng, total * k);
        let w = random_vec(rng, g * k * n);
        let c = floats(rng, total * n, -1.0, 1.0)
            .iter()
            .map(|&x| TC::from_f64(x.into()))
            .collect();
        let bias = match case.bias {
            Some(Axis::Row) => floats(rng, total, -2.0, 2.0),
            Some(Axis::Col) => floats(rng, g * n, -2.0, 2.0),
            None => Vec::new(),
        };
        let int = matches!(TA::TYPE, ComponentType::I8 | ComponentType::U8);
        let scales = int.then(|| (floats(rng, total, 0.001, 0.03), floats(rng, g * n, 0.001, 0.03)));
        Self { a, w, c, bias, scales }
    }

    fn fused(&self, case: &Case<'_>) -> Fused<'_> {
        let mut f = Fused::new().activation(case.activation);
        if let Some(axis) = case.bias {
            f = f.bias(axis, &self.bias);
        }
        if let Some((r, c)) = &self.scales {
            f = f.scales(r, c);
        }
        f
    }

    fn weights(&self, case: &Case<'_>) -> BatchRef<'_, TA> {
        let (n, k) = case.nk;
        let ld = case.b_layout.outer_inner(k, n).1;
        BatchRef::strided(MatRef::stored(&self.w, k, n, case.b_layout, ld), case.rows.len(), k * n)
    }

    /// Checks every element of `got` (row-major, `sum(rows) x N`) against the f64 reference,
    /// group by group: its rows of the row vectors, its own N values of the column vectors.
    fn check(&self, case: &Case<'_>, got: &[TC], options: &GemmOptions, what: &str) {
        let (n, k) = case.nk;
        let int = matches!(TA::TYPE, ComponentType::I8 | ComponentType::U8);
        let acc = if int { ComponentType::I32 } else { ComponentType::F32 };
        let input_u = input_roundoff(TA::TYPE, TA::TYPE, options.compute).unwrap();
        let f64s = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<_>>();
        let ld = case.b_layout.outer_inner(k, n).1;
        let mut first = 0;
        for (g, &m) in case.rows.iter().enumerate() {
            let (rows_of, cols_of) = (first..first + m, g * n..(g + 1) * n);
            let r = FusedRef {
                alpha: case.alpha,
                beta: case.beta,
                bias: case.bias.map(|axis| {
                    let part = if axis == Axis::Row {
                        rows_of.clone()
                    } else {
                        cols_of.clone()
                    };
                    (axis, f64s(&self.bias[part]))
                }),
                activation: case.activation,
                scales: self
                    .scales
                    .as_ref()
                    .map(|(r, c)| (f64s(&r[rows_of.clone()]), f64s(&c[cols_of.clone()]))),
            };
            let am = MatRef::new(&self.a[first * k..], m, k);
            let local: Vec<usize> = (0..m).collect();
            let wg = MatRef::stored(&self.w[g * k * n..], k, n, case.b_layout, ld);
            let (dot, mag) = reference::<TA, TA, TC>(&am, &wg, None, 1.0, 0.0, &local);
            let (mut want, mut magnitude) = (vec![0.0; m * n], vec![0.0; m * n]);
            for x in 0..m * n {
                let (i, j) = (x / n, x % n);
                let old = self.c[(first + i) * n + j].to_f64();
                (want[x], magnitude[x]) = r.apply((i, j), (dot[x], mag[x]), old);
            }
            let c = compare_fused(
                &got[first * n..],
                (n, n),
                &local,
                (&want, &magnitude),
                (acc, k),
                input_u,
            );
            assert!(
                c.passed,
                "{what}: {} -> {} group {g} of {:?} N {n} K {k} B {:?} bias {:?} {:?}: {c:?}",
                TA::TYPE,
                TC::TYPE,
                case.rows,
                case.b_layout,
                case.bias,
                case.activation
            );
            first += m;
        }
    }
}

fn options_of(case: &Case<'_>, options: &GemmOptions) -> GemmOptions {
    GemmOptions {
        alpha: case.alpha,
        beta: case.beta,
        ..options.clone()
    }
}

/// Whether the plans are one dispatch of a grouped kernel.
fn one_grouped_dispatch(plans: &[GemmPlan]) -> bool {
    plans.len() == 1
        && plans[0].dispatches.len() == 1
        && matches!(plans[0].dispatches[0].kernel, Kernel::Gemm(key) if key.grouped)
}

/// Runs `case` on the host path, on device matrices and on a stream, and checks each; returns
/// whether the device path planned one grouped dispatch.
fn run<TA: Element, TC: Element>(ctx: &Context, case: &Case<'_>, options: &GemmOptions, rng: &mut Rng) -> bool {
    let (n, k) = case.nk;
    let total = case.rows.iter().sum::<usize>();
    let inp = Inputs::<TA, TC>::new(case, rng);
    let (options, fused) = (&options_of(case, options), inp.fused(case));
    let mut out = inp.c.clone();
    ctx.run(
        &Matmul::with_options(options).grouped(case.rows).fused(&fused),
        MatRef::new(&inp.a, total, k),
        inp.weights(case),
        MatMut::new(&mut out, total, n),
    )
    .unwrap_or_else(|e| panic!("host {:?}: {e}", case.rows));
    inp.check(case, &out, options, "host");
    let da = ctx.upload(MatRef::new(&inp.a, total, k)).unwrap();
    let dw = ctx.upload_batch(inp.weights(case)).unwrap();
    let mut dc = ctx.upload(MatRef::new(&inp.c, total, n)).unwrap();
    let plans = ctx
        .prepare(
            &Matmul::with_options(options).grouped(case.rows).fused(&fused),
            &da,
            &dw,
            &mut dc,
        )
        .map(|p| p.plans().cloned().collect::<Vec<_>>())
        .unwrap();
    ctx.run(
        &Matmul::with_options(options).grouped(case.rows).fused(&fused),
        &da,
        &dw,
        &mut dc,
    )
    .unwrap();
    let mut got = vec![TC::from_f64(0.0); total * n];
    ctx.download(&dc, MatMut::new(&mut got, total, n)).unwrap();
    inp.check(case, &got, options, "device");
    let mut dc = ctx.upload(MatRef::new(&inp.c, total, n)).unwrap();
    let mut s = ctx.stream().unwrap();
    s.run(
        &Matmul::with_options(options).grouped(case.rows).fused(&fused),
        &da,
        &dw,
        &mut dc,
    )
    .unwrap();
    let download = s.download(&dc).unwrap();
    s.submit().unwrap();
    inp.check(case, &download.wait().unwrap(), options, "stream");
    one_grouped_dispatch(&plans)
}

const RAGGED: &[usize] = &[70, 0, 9, 1, 130, 3];

fn case(rows: &[usize], nk: (usize, usize)) -> Case<'_> {
    Case {
        rows,
        nk,
        b_layout: Layout::RowMajor,
        bias: None,
        activation: Activation::None,
        alpha: 1.0,
        beta: 0.0,
    }
}

/// Each group's own column bias (and row biases over all groups' rows), every activation,
/// both weight layouts, alpha and beta, stored as f16 from f32 accumulators: one dispatch.
#[test]
fn each_group_reads_its_own_bias_in_one_dispatch() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let mut i = 0;
    for b_layout in [Layout::RowMajor, Layout::ColMajor] {
        for activation in Activation::ALL {
            let c = Case {
                b_layout,
                bias: Some(if i % 2 == 0 { Axis::Col } else { Axis::Row }),
                activation,
                alpha: 0.75,
                beta: if i % 3 == 0 { 0.0 } else { 0.5 },
                ..case(RAGGED, (45, 37))
            };
            let plain = GemmOptions::default();
            assert!(
                run::<f16, f16>(ctx, &c, &plain, &mut rng),
                "one dispatch, {b_layout:?} {activation:?}"
            );
            i += 1;
        }
    }
    let c = Case {
        bias: Some(Axis::Col),
        activation: Activation::Gelu,
        ..case(&[1, 64, 0, 65], (1, 3))
    };
    assert!(run::<f16, f32>(ctx, &c, &GemmOptions::default(), &mut rng));
    assert_no_validation_messages(ctx);
}

/// w8a8 experts: i8 groups dequantised by per-token row scales and each expert's channel
/// scales, stored as f16 and f32, with a bias; one dispatch.
#[test]
fn dequantised_i8_groups_read_their_own_channel_scales() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    for (b_layout, bias) in [(Layout::ColMajor, Some(Axis::Col)), (Layout::RowMajor, None)] {
        let c = Case {
            b_layout,
            bias,
            activation: Activation::Relu,
            ..case(&[33, 0, 2, 17], (29, 64))
        };
        assert!(run::<i8, f16>(ctx, &c, &GemmOptions::default(), &mut rng));
        assert!(run::<i8, f32>(ctx, &c, &GemmOptions::default(), &mut rng));
    }
    assert_no_validation_messages(ctx);
}

/// Where the groups cannot run as one dispatch (the accurate f32 split, whose kernels read
/// scale words where a grouped kernel reads its table; host operands over the allocation
/// limit), each group's GEMM reads the same vectors at its rows and its group's columns.
#[test]
fn per_group_fallbacks_read_the_same_vectors() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let accurate = GemmOptions {
        compute: ComputeMode::Accurate,
        ..Default::default()
    };
    // Without an f16 -> f32 config the accurate mode is the exact kernel, which runs grouped.
    let split = ctx
        .choose_config(vk_sgmat::ComponentType::F16, vk_sgmat::ComponentType::F32, None)
        .is_ok();
    for bias in [Axis::Col, Axis::Row] {
        let c = Case {
            bias: Some(bias),
            activation: Activation::Silu,
            beta: 0.25,
            ..case(&[20, 0, 7, 33], (19, 23))
        };
        assert_eq!(
            run::<f32, f32>(ctx, &c, &accurate, &mut rng),
            !split,
            "the accurate split runs group by group"
        );
    }
    // Groups of a few rows on the matrix-vector kernel, asked for (weights stored N x K): one
    // dispatch per group, each reading its rows' and its group's bias.
    let gemv = GemmOptions {
        matrix_vector: Some(true),
        ..Default::default()
    };
    for bias in [Axis::Col, Axis::Row] {
        let c = Case {
            bias: Some(bias),
            activation: Activation::Gelu,
            beta: 0.5,
            b_layout: Layout::ColMajor,
            ..case(&[2, 0, 1, 5], (37, 29))
        };
        assert!(
            !run::<f16, f16>(ctx, &c, &gemv, &mut rng),
            "groups of the matrix-vector kernel"
        );
    }
    // Weights of 4 x 40 x 24 f16 (7.5 KiB) over a 4 KiB allocation limit: one GEMM per group.
    let capped = capped_context(4096);
    let c = Case {
        bias: Some(Axis::Col),
        activation: Activation::Relu,
        alpha: 2.0,
        ..case(&[5, 0, 3, 11], (24, 40))
    };
    let inp = Inputs::<f16, f16>::new(&c, &mut rng);
    let total = c.rows.iter().sum::<usize>();
    let mut out = inp.c.clone();
    let options = options_of(&c, &GemmOptions::default());
    capped
        .run(
            &Matmul::with_options(&options).grouped(c.rows).fused(&inp.fused(&c)),
            MatRef::new(&inp.a, total, 40),
            inp.weights(&c),
            MatMut::new(&mut out, total, 24),
        )
        .unwrap();
    inp.check(&c, &out, &options, "capped host");
    assert_no_validation_messages(ctx);
    assert_no_validation_messages(&capped);
}

/// Vectors of the wrong length name what a grouped GEMM takes; nothing runs.
#[test]
fn misfit_vectors_are_typed_errors() {
    let ctx = context();
    let (a, w) = (vec![f16::ONE; 10 * 8], vec![f16::ONE; 3 * 8 * 4]);
    let mut out = vec![f16::ZERO; 10 * 4];
    let weights = BatchRef::strided(MatRef::new(&w, 8, 4), 3, 32);
    let rows = [4usize, 0, 6];
    let options = GemmOptions::default();
    let shared_bias = vec![0.5f32; 4]; // N values, where each of the 3 groups needs its own
    let per_group_rows = vec![0.5f32; 3 * 4]; // columns' length given for rows
    for (axis, v, want) in [
        (Axis::Col, &shared_bias, "12 columns"),
        (Axis::Row, &per_group_rows, "10 rows"),
    ] {
        let e = ctx
            .run(
                &Matmul::with_options(&options)
                    .grouped(&rows)
                    .fused(&Fused::new().bias(axis, v)),
                MatRef::new(&a, 10, 8),
                weights,
                MatMut::new(&mut out, 10, 4),
            )
            .unwrap_err();
        assert!(
            matches!(&e, Error::ShapeMismatch(s) if s.contains(want)),
            "{axis:?}: {e}"
        );
    }
    assert!(out.iter().all(|x| *x == f16::ZERO), "nothing ran");
    let scales = vec![1.0f32; 12];
    let e = ctx
        .run(
            &Matmul::with_options(&options)
                .grouped(&rows)
                .fused(&Fused::new().scales(&scales[..10], &scales)),
            MatRef::new(&a, 10, 8),
            weights,
            MatMut::new(&mut out, 10, 4),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "scales on f16 inputs: {e}");
    assert_no_validation_messages(ctx);
}
