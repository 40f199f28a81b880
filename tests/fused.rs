//! Fused epilogues on the present driver: bias per row and per column (f32, f16, bf16), every
//! activation, output casts (f32 accumulation stored as f16/bf16), dequantised i8 products,
//! beta, every layout of A, B and C, odd sizes, passes cut by the limits override, device and
//! stream forms, IEEE specials through the activations, and misuse as typed errors. Every element
//! is checked against the f64 reference of `verify::fused` with its stated bound.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::fused::{compare_fused, FusedRef};
use crate::verify::{random_vec, reference, Rng};
use common::{assert_no_validation_messages, capped_context, context, LAYOUTS};
use half::{bf16, f16};
use vk_sgmat::plan::DispatchLimits;
use vk_sgmat::Matmul;
use vk_sgmat::{
    Activation, Axis, ComponentType, Context, ContextOptions, Element, EpilogueVector, Error, Fused, GemmOptions,
    Layout, MatMut, MatRef,
};

fn floats(rng: &mut Rng, len: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..len).map(|_| lo + (hi - lo) * rng.unit()).collect()
}

fn conv<T: Element>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// One fused GEMM's inputs: which epilogue terms, and the vectors' element type.
#[derive(Clone, Copy)]
struct Case {
    mnk: (usize, usize, usize),
    layouts: [Layout; 3],
    bias: Option<(Axis, ComponentType)>,
    activation: Activation,
    beta: f64,
    alpha: f64,
}

/// Runs `case` on `ctx` with random inputs (C poisoned by the context), checks every element.
fn run<TA: Element, TB: Element, TC: Element>(ctx: &Context, case: Case, options: &GemmOptions, seed: u64) {
    let mut rng = Rng::new(seed);
    let (m, n, k) = case.mnk;
    let [la, lb, lc] = case.layouts;
    let a: Vec<TA> = random_vec(&mut rng, m * k);
    let b: Vec<TB> = random_vec(&mut rng, k * n);
    let c_in: Vec<TC> = conv(&floats(&mut rng, m * n, -1.0, 1.0));
    let am = MatRef::stored(&a, m, k, la, if la == Layout::RowMajor { k } else { m });
    let bm = MatRef::stored(&b, k, n, lb, if lb == Layout::RowMajor { n } else { k });
    let int = matches!(TA::TYPE, ComponentType::I8 | ComponentType::U8);
    // Scales near 1/64 keep dequantised i8 sums of K <= 64 terms in f16's range.
    let scales = int.then(|| (floats(&mut rng, m, 0.001, 0.03), floats(&mut rng, n, 0.001, 0.03)));
    let bias_vals = case
        .bias
        .map(|(axis, _)| floats(&mut rng, if axis == Axis::Row { m } else { n }, -2.0, 2.0));
    // The bias as stored: the reference takes the rounded values.
    let (b32, b16, bb16): (Vec<f32>, Vec<f16>, Vec<bf16>) = match &bias_vals {
        Some(v) => (conv(v), conv(v), conv(v)),
        None => Default::default(),
    };
    let (s_rows, s_cols): (Vec<f32>, Vec<f32>) = match &scales {
        Some((r, c)) => (conv(r), conv(c)),
        None => Default::default(),
    };
    let mut fused = Fused::new().activation(case.activation);
    let mut bias_ref = None;
    if let Some((axis, t)) = case.bias {
        let (v, stored): (EpilogueVector<'_>, Vec<f64>) = match t {
            ComponentType::F16 => ((&b16).into(), b16.iter().map(|x| x.to_f64()).collect()),
            ComponentType::Bf16 => ((&bb16).into(), bb16.iter().map(|x| x.to_f64()).collect()),
            _ => ((&b32).into(), b32.iter().map(|&x| f64::from(x)).collect()),
        };
        fused = fused.bias(axis, v);
        bias_ref = Some((axis, stored));
    }
    if scales.is_some() {
        fused = fused.scales(&s_rows, &s_cols);
    }
    let r = FusedRef {
        alpha: case.alpha,
        beta: case.beta,
        bias: bias_ref,
        activation: case.activation,
        scales: scales.map(|_| {
            let f = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect();
            (f(&s_rows), f(&s_cols))
        }),
    };
    let mut c = c_in.clone();
    let cm = match lc {
        Layout::RowMajor => MatMut::new(&mut c, m, n),
        Layout::ColMajor => MatMut::col_major(&mut c, m, n),
    };
    let opts = GemmOptions {
        alpha: case.alpha,
        beta: case.beta,
        ..options.clone()
    };
    ctx.run(&Matmul::with_options(&opts).fused(&fused), am, bm, cm)
        .unwrap_or_else(|e| panic!("{}x{}x{} {:?}: {e}", m, n, k, case.layouts));
    // Row-major views of C's old and new values for the reference and the comparison.
    let at = |v: &[TC], i: usize, j: usize| {
        if lc == Layout::RowMajor {
            v[i * n + j]
        } else {
            v[j * m + i]
        }
    };
    let got: Vec<TC> = (0..m * n).map(|e| at(&c, e / n, e % n)).collect();
    let rows: Vec<usize> = (0..m).collect();
    let (dot, mag) = reference::<TA, TB, TC>(&am, &bm, None, 1.0, 0.0, &rows);
    let (mut want, mut magnitude) = (vec![0.0; m * n], vec![0.0; m * n]);
    for e in 0..m * n {
        let (i, j) = (e / n, e % n);
        let c0 = at(&c_in, i, j).to_f64();
        (want[e], magnitude[e]) = r.apply((i, j), (dot[e], mag[e]), c0);
    }
    let acc = if int { ComponentType::I32 } else { ComponentType::F32 };
    let input_u = crate::verify::input_roundoff(TA::TYPE, TB::TYPE, options.compute).unwrap();
    let check = compare_fused(&got, (n, n), &rows, (&want, &magnitude), (acc, k), input_u);
    assert!(
        check.passed,
        "{} x {} -> {} {m}x{n}x{k} {:?} bias {:?} {:?} beta {}: {check:?}",
        TA::TYPE,
        TB::TYPE,
        TC::TYPE,
        case.layouts,
        case.bias,
        case.activation,
        case.beta
    );
}

fn case(mnk: (usize, usize, usize)) -> Case {
    Case {
        mnk,
        layouts: [Layout::RowMajor; 3],
        bias: None,
        activation: Activation::None,
        beta: 0.0,
        alpha: 1.0,
    }
}

#[test]
fn every_activation_and_bias_on_f16_inputs() {
    let ctx = context();
    let opts = GemmOptions::default();
    let mut seed = 1;
    for act in Activation::ALL {
        for (axis, t) in [
            (Axis::Col, ComponentType::F32),
            (Axis::Row, ComponentType::F16),
            (Axis::Col, ComponentType::Bf16),
        ] {
            let c = Case {
                bias: Some((axis, t)),
                activation: act,
                ..case((37, 29, 19))
            };
            run::<f16, f16, f16>(ctx, c, &opts, seed);
            run::<f16, f16, f32>(ctx, c, &opts, seed + 1);
            run::<f16, f16, bf16>(ctx, c, &opts, seed + 2);
            seed += 3;
        }
    }
    // No terms at all: an f16 C still accumulates in f32 (a long K would show f16 sums).
    run::<f16, f16, f16>(ctx, case((21, 19, 700)), &opts, seed);
    run::<f16, f16, bf16>(ctx, case((21, 19, 700)), &opts, seed + 1);
    assert_no_validation_messages(ctx);
}

#[test]
fn every_layout_with_alpha_beta_and_odd_sizes() {
    let ctx = context();
    let opts = GemmOptions::default();
    let mut seed = 100;
    for la in LAYOUTS {
        for lb in LAYOUTS {
            for lc in LAYOUTS {
                for mnk in [(1, 1, 1), (13, 31, 7), (33, 17, 41)] {
                    let c = Case {
                        layouts: [la, lb, lc],
                        bias: Some((Axis::Row, ComponentType::F32)),
                        activation: Activation::Silu,
                        alpha: 0.75,
                        beta: 0.5,
                        ..case(mnk)
                    };
                    run::<f16, f16, f16>(ctx, c, &opts, seed);
                    seed += 1;
                }
            }
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn f32_inputs_in_every_mode_and_dequantised_i8() {
    let ctx = context();
    let mut seed = 200;
    use vk_sgmat::ComputeMode::*;
    // Rounded inputs (the fast mode, mixed pairs) widen the bound (compare_fused's input_u):
    // without that term their results fail it at this K. bf16 has no config on lavapipe.
    for compute in [Accurate, FastF16, Exact] {
        let opts = GemmOptions {
            compute,
            ..Default::default()
        };
        for lc in LAYOUTS {
            let c = Case {
                layouts: [Layout::RowMajor, Layout::ColMajor, lc],
                bias: Some((Axis::Col, ComponentType::F32)),
                activation: Activation::GeluErf,
                beta: 0.25,
                ..case((23, 35, 29))
            };
            run::<f32, f32, f32>(ctx, c, &opts, seed);
            run::<f32, f32, f16>(ctx, c, &opts, seed + 1);
            if compute == Accurate {
                // Mixed pairs: the f32 side is rounded to the 16-bit side's type as it loads.
                run::<f16, f32, f32>(ctx, c, &opts, seed + 2);
                run::<f32, f16, f16>(ctx, c, &opts, seed + 3);
            }
            seed += 4;
        }
    }
    let opts = GemmOptions::default();
    for (bias, act) in [
        (None, Activation::None),
        (Some((Axis::Row, ComponentType::F32)), Activation::Relu),
    ] {
        for lc in LAYOUTS {
            let c = Case {
                layouts: [Layout::RowMajor, Layout::ColMajor, lc],
                bias,
                activation: act,
                ..case((45, 27, 64))
            };
            run::<i8, i8, f16>(ctx, c, &opts, seed);
            run::<i8, i8, f32>(ctx, c, &opts, seed + 1);
            run::<u8, u8, f32>(ctx, c, &opts, seed + 2);
            seed += 3;
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn passes_cut_by_the_limits_read_their_own_rows_and_columns_of_the_vectors() {
    // Two workgroups per dimension and a small window force several passes along M and N: each
    // must index the bias and scales from its first row and column.
    let limits = DispatchLimits {
        max_groups: [2, 2, 65535],
        max_range: 1 << 16,
        offset_alignment: context()
            .device_info()
            .limits
            .min_storage_buffer_offset_alignment
            .max(1),
        // Vulkan's guaranteed minimum maxMemoryAllocationSize.
        max_allocation: 1 << 30,
        // Vulkan's guaranteed minimum maxComputeSharedMemorySize.
        max_shared: 16 << 10,
    };
    let ctx = Context::with_options(ContextOptions {
        validation: true,
        poison_outputs: true,
        limits_override: Some(limits),
        ..Default::default()
    })
    .expect("context with a limits override");
    let plan = ctx
        .plan::<f16, f16, f16>(
            &Matmul::with_options(&GemmOptions::default()),
            (150, 170, 24),
            (Layout::RowMajor, Layout::RowMajor),
        )
        .expect("plan");
    // At least two passes along each of M and N, whichever tile the device takes.
    assert!(
        plan.gemm_dispatches().count() >= 4,
        "the override cuts the problem into passes"
    );
    for (axis, seed) in [(Axis::Row, 300), (Axis::Col, 301)] {
        let c = Case {
            bias: Some((axis, ComponentType::F32)),
            activation: Activation::Gelu,
            ..case((150, 170, 24))
        };
        run::<f16, f16, f16>(&ctx, c, &GemmOptions::default(), seed);
        run::<i8, i8, f32>(&ctx, c, &GemmOptions::default(), seed + 10);
    }
    assert_no_validation_messages(&ctx);
}

/// Host operands over the allocation limit run in blocks of C, each with its rows and columns
/// of the bias (never in K pieces: the activation does not distribute over a sum). Device
/// vectors, bound whole, cannot follow the blocks: a typed error.
#[test]
fn host_operands_over_the_allocation_limit_run_in_blocks_with_their_vectors() {
    let ctx = capped_context(4096);
    let opts = GemmOptions::default();
    // A 150x30 f16 takes 9.6 KB; C 150x40 f32 24 KB.
    for (axis, lc, act) in [
        (Axis::Col, Layout::RowMajor, Activation::Gelu),
        (Axis::Row, Layout::ColMajor, Activation::Relu),
    ] {
        let c = Case {
            bias: Some((axis, ComponentType::F32)),
            activation: act,
            layouts: [Layout::RowMajor, Layout::ColMajor, lc],
            beta: 0.5,
            ..case((150, 40, 30))
        };
        run::<f16, f16, f32>(&ctx, c, &opts, 77);
    }
    // One row of A over the limit would need K pieces.
    let (m, n, k) = (4, 8, 3000);
    let (a, b) = (vec![f16::ONE; m * k], vec![f16::ONE; k * n]);
    let mut c = vec![0.0f32; m * n];
    let relu = Fused::new().activation(Activation::Relu);
    let e = ctx
        .run(
            &Matmul::with_options(&opts).fused(&relu),
            MatRef::new(&a, m, k),
            MatRef::new(&b, k, n),
            MatMut::new(&mut c, m, n),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::TooLarge(_)) && e.to_string().contains("fused"),
        "{e}"
    );
    let (m, k) = (150, 30);
    let a = vec![f16::ONE; m * k];
    let bias = ctx.upload(MatRef::new(&[1.0f32; 8], 1, n)).unwrap();
    let mut c = vec![0.0f32; m * n];
    let e = ctx
        .run(
            &Matmul::with_options(&opts).fused(&Fused::new().bias(Axis::Col, &bias)),
            MatRef::new(&a, m, k),
            MatRef::new(&b[..k * n], k, n),
            MatMut::new(&mut c, m, n),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::Unsupported(_)) && e.to_string().contains("host slices"),
        "{e}"
    );
    assert!(c.iter().all(|&x| x == 0.0), "a refused GEMM leaves C untouched");
    assert_no_validation_messages(&ctx);
}

#[test]
fn device_and_stream_forms_take_device_vectors() {
    let ctx = context();
    let mut rng = Rng::new(400);
    let (m, n, k) = (40, 24, 16);
    let a: Vec<f16> = random_vec(&mut rng, m * k);
    let b: Vec<f16> = random_vec(&mut rng, k * n);
    let bias: Vec<f32> = conv(&floats(&mut rng, n, -1.0, 1.0));
    let da = ctx.upload(MatRef::new(&a, m, k)).unwrap();
    let db = ctx.upload(MatRef::new(&b, k, n)).unwrap();
    let dbias = ctx.upload(MatRef::new(&bias, 1, n)).unwrap();
    let fused = Fused::new().bias(Axis::Col, &dbias).activation(Activation::Relu);
    let mut host = vec![f16::ZERO; m * n];
    ctx.run(
        &Matmul::with_options(&GemmOptions::default()).fused(&fused),
        MatRef::new(&a, m, k),
        MatRef::new(&b, k, n),
        MatMut::new(&mut host, m, n),
    )
    .unwrap();
    let mut dc = ctx.zeros::<f16>(m, n).unwrap();
    ctx.run(
        &Matmul::with_options(&GemmOptions::default()).fused(&fused),
        &da,
        &db,
        &mut dc,
    )
    .unwrap();
    let mut out = vec![f16::ZERO; m * n];
    ctx.download(&dc, MatMut::new(&mut out, m, n)).unwrap();
    assert_eq!(out, host, "device form equals the host form");
    let mut dc2 = ctx.zeros::<f16>(m, n).unwrap();
    let mut stream = ctx.stream().unwrap();
    stream
        .run(
            &Matmul::with_options(&GemmOptions::default()).fused(&fused),
            &da,
            &db,
            &mut dc2,
        )
        .unwrap();
    stream.synchronize().unwrap();
    ctx.download(&dc2, MatMut::new(&mut out, m, n)).unwrap();
    assert_eq!(out, host, "stream form equals the host form");
    // The same values as the reference (the host form's check).
    assert!(host.iter().all(|x| x.to_f64() >= 0.0), "ReLU output is never negative");
    assert_no_validation_messages(ctx);
}

#[test]
fn infinities_and_nan_through_every_activation() {
    let ctx = context();
    let (m, n, k) = (8, 8, 8);
    let a = vec![f16::ZERO; m * k];
    let b = vec![f16::ZERO; k * n];
    // A*B = 0, so each column's value is its bias: the specials and a large negative number.
    let specials = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -200.0, 0.0, 3.0, -3.0, 1e30];
    for act in Activation::ALL {
        let mut c = vec![0.0f32; m * n];
        let fused = Fused::new().bias(Axis::Col, &specials[..]).activation(act);
        ctx.run(
            &Matmul::with_options(&GemmOptions::default()).fused(&fused),
            MatRef::new(&a, m, k),
            MatRef::new(&b, k, n),
            MatMut::new(&mut c, m, n),
        )
        .unwrap();
        for (j, &x) in specials.iter().enumerate() {
            let want = act.reference(f64::from(x));
            let got = f64::from(c[j]);
            let same = (want.is_nan() && got.is_nan())
                || got == want
                || (want.is_finite() && (got - want).abs() <= 1e-5 * want.abs().max(1e-30));
            assert!(same, "{act:?}({x}) = {got}, expected {want}");
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn misuse_is_a_typed_error() {
    let ctx = context();
    let (a, b) = (vec![f16::ONE; 4 * 8], vec![f16::ONE; 8 * 8]);
    let mut c = vec![f16::ZERO; 4 * 8];
    let short = vec![0.0f32; 7];
    let scales = vec![1.0f32; 8];
    let go = |c: &mut Vec<f16>, f: &Fused<'_>| {
        ctx.run(
            &Matmul::with_options(&GemmOptions::default()).fused(f),
            MatRef::new(&a, 4, 8),
            MatRef::new(&b, 8, 8),
            MatMut::new(c, 4, 8),
        )
    };
    let e = go(&mut c, &Fused::new().bias(Axis::Col, &short)).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch(_)), "{e}");
    let e = go(&mut c, &Fused::new().bias(Axis::Row, &scales)).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch(_)), "row bias of N values: {e}");
    let e = go(&mut c, &Fused::new().scales(&scales[..4], &scales)).unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "scales on f16 inputs: {e}");
    // i8 products stored as f16 need the scales; i8 -> i32 takes no float terms.
    let (ai, bi) = (vec![1i8; 4 * 8], vec![1i8; 8 * 8]);
    let e = ctx
        .run(
            &Matmul::with_options(&GemmOptions::default()).fused(&Fused::new()),
            MatRef::new(&ai, 4, 8),
            MatRef::new(&bi, 8, 8),
            MatMut::new(&mut c, 4, 8),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    let mut ci = vec![0i32; 4 * 8];
    let e = ctx
        .run(
            &Matmul::with_options(&GemmOptions::default()).fused(&Fused::new().activation(Activation::Relu)),
            MatRef::new(&ai, 4, 8),
            MatRef::new(&bi, 8, 8),
            MatMut::new(&mut ci, 4, 8),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    // A device vector must be contiguous: a column of a row-major matrix is not.
    let m = ctx.upload(MatRef::new(&[0.0f32; 8 * 2], 8, 2)).unwrap();
    let e = go(&mut c, &Fused::new().bias(Axis::Col, &m)).unwrap_err();
    assert!(matches!(e, Error::InvalidOperand(_)), "{e}");
    // C untouched by every refused call.
    assert!(c.iter().all(|&x| x == f16::ZERO));
}

/// Decode's shapes run on the matrix-vector kernel (A row-major, B column-major, at most 8 rows
/// or columns): every term on it, in both orientations (the short side A's rows or B's
/// columns), with C row- or column-major, f16/bf16/f32 inputs into f32, f16 and bf16 C.
#[test]
fn matrix_vector_shapes_take_every_term() {
    let ctx = context();
    let opts = GemmOptions::default();
    let nt = (Layout::RowMajor, Layout::ColMajor);
    for (m, n) in [(1, 300), (5, 77), (301, 3)] {
        let plan = ctx
            .plan::<f16, f16, f16>(&Matmul::with_options(&opts), (m, n, 129), nt)
            .unwrap();
        assert!(plan.gemv_kernel().is_some(), "{m}x{n}: {}", plan.kernel_name());
    }
    let mut seed = 500;
    for (i, mnk) in [(1, 300, 129), (5, 77, 64), (301, 3, 40), (2, 1, 7)]
        .into_iter()
        .enumerate()
    {
        for (j, (axis, t)) in [
            (Axis::Col, ComponentType::F32),
            (Axis::Row, ComponentType::F16),
            (Axis::Col, ComponentType::Bf16),
        ]
        .into_iter()
        .enumerate()
        {
            let c = Case {
                layouts: [Layout::RowMajor, Layout::ColMajor, LAYOUTS[(i + j) % 2]],
                bias: Some((axis, t)),
                activation: Activation::ALL[(i * 3 + j) % Activation::ALL.len()],
                alpha: 1.25,
                beta: if j == 1 { 0.5 } else { 0.0 },
                ..case(mnk)
            };
            run::<f16, f16, f16>(ctx, c, &opts, seed);
            run::<f16, f16, f32>(ctx, c, &opts, seed + 1);
            run::<bf16, bf16, bf16>(ctx, c, &opts, seed + 2);
            run::<f32, f32, f16>(ctx, c, &opts, seed + 3);
            seed += 4;
        }
    }
    assert_no_validation_messages(ctx);
}
