//! The matrix-vector path (decode's shapes) on the present driver: which problems the planner
//! sends to it, and its results against the f64 reference for every element type it takes,
//! every row count on either side, odd K (inside one vector, past many), alpha/beta, a
//! column-major C, device-resident operands on a stream, and the GEMM path it replaces.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{run_random_gemm_c, Rng};
use common::{assert_no_validation_messages, context};
use half::{bf16, f16};
use vk_sgmat::Matmul;
use vk_sgmat::{Element, GemmOptions, Layout, MatRef};

const ROW: Layout = Layout::RowMajor;
const COL: Layout = Layout::ColMajor;

/// Runs a random GEMM of `shape` with C stored `lc`, checks it against the reference and
/// that the planner sends it (as planned with a row-major C; a column-major C is the
/// transposed problem, also short) to the matrix-vector kernel as `gemv` says.
fn case<T: Element>(shape: (usize, usize, usize), lc: Layout, options: &GemmOptions, gemv: bool, rng: &mut Rng) {
    let ctx = context();
    let (m, n, k) = shape;
    let plan = ctx
        .plan::<T, T, f32>(&Matmul::with_options(options), (m, n, k), (ROW, COL))
        .unwrap();
    assert_eq!(
        plan.gemv_kernel().is_some(),
        gemv,
        "{} {shape:?}: planned {}",
        T::TYPE,
        plan.kernel_name()
    );
    let check = run_random_gemm_c::<T, T, f32>(ctx, rng, shape, (ROW, COL, lc), 3, options, usize::MAX)
        .unwrap_or_else(|e| panic!("{} {shape:?} {lc:?}: {e}", T::TYPE));
    assert!(check.passed, "{} {shape:?} {lc:?} {options:?}: {check:?}", T::TYPE);
}

#[test]
fn every_type_and_row_count_matches_the_reference() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let scaled = GemmOptions {
        alpha: -1.25,
        beta: 0.5,
        ..Default::default()
    };
    for (i, &(m, n, k)) in [
        (1, 4099, 67),
        (2, 17, 1),
        (3, 129, 4099),
        (4, 1, 9),
        (5, 300, 31),
        (6, 33, 256),
        (7, 3, 15),
        (8, 517, 130),
        (4099, 1, 67),
        (17, 3, 33),
        (300, 8, 7),
        (1, 1, 1),
    ]
    .iter()
    .enumerate()
    {
        let options = if i % 2 == 0 {
            GemmOptions::default()
        } else {
            scaled.clone()
        };
        case::<f16>((m, n, k), ROW, &options, true, &mut rng);
        case::<bf16>((m, n, k), ROW, &options, true, &mut rng);
        case::<f32>((m, n, k), ROW, &options, true, &mut rng);
    }
    assert_no_validation_messages(context());
}

#[test]
fn a_column_major_c_and_the_gemm_it_replaces_agree_with_the_reference() {
    let mut rng = Rng::new(Rng::fresh_seed());
    let off = GemmOptions {
        matrix_vector: Some(false),
        beta: 1.0,
        ..Default::default()
    };
    for &(m, n, k) in &[(1, 77, 45), (3, 200, 129), (61, 2, 40)] {
        case::<f16>((m, n, k), COL, &GemmOptions::default(), true, &mut rng);
        case::<f16>((m, n, k), ROW, &off, false, &mut rng);
        case::<f32>((m, n, k), ROW, &off, false, &mut rng);
    }
    assert_no_validation_messages(context());
}

#[test]
fn the_planner_keeps_the_gemm_where_the_kernel_does_not_fit() {
    let ctx = context();
    let plan = |m, n, layouts, options: &GemmOptions| {
        ctx.plan::<f16, f16, f32>(&Matmul::with_options(options), (m, n, 64), layouts)
            .unwrap()
            .gemv_kernel()
    };
    let plain = GemmOptions::default();
    assert!(plan(9, 9, (ROW, COL), &plain).is_none(), "9 rows on both sides");
    assert!(
        plan(1, 4096, (ROW, ROW), &plain).is_none(),
        "B row-major: not contiguous along K"
    );
    assert!(plan(1, 4096, (COL, COL), &plain).is_none(), "A column-major");
    let split = GemmOptions {
        split_k: Some(2),
        ..Default::default()
    };
    assert!(plan(1, 4096, (ROW, COL), &split).is_none(), "an explicit split_k");
    let key = plan(1, 4096, (ROW, COL), &plain).expect("decode's shape");
    assert_eq!((key.rows, key.c_transposed), (1, false));
    let key = plan(4096, 2, (ROW, COL), &plain).expect("the other orientation");
    assert_eq!((key.rows, key.c_transposed), (2, true));
    let f16_c = ctx
        .plan::<f16, f16, f16>(&Matmul::with_options(&plain), (1, 4096, 64), (ROW, COL))
        .unwrap();
    let key = f16_c.gemv_kernel().expect("an f16 C: f32 sums stored as f16");
    assert_eq!(key.epilogue.output, Some(vk_sgmat::ComponentType::F16));
    let i8 = ctx
        .plan::<i8, i8, i32>(&Matmul::with_options(&plain), (1, 4096, 64), (ROW, COL))
        .unwrap();
    assert!(i8.gemv_kernel().is_none(), "8-bit integers stay on the GEMM kernels");
}

#[test]
fn device_operands_on_a_stream() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (2, 1031, 515);
    // Small integers: every product and sum is exact in f32.
    let x: Vec<f16> = common::ints(&mut rng, m * k);
    let w: Vec<f16> = common::ints(&mut rng, n * k); // N x K row-major: B column-major
    let mut s = ctx.stream().unwrap();
    let dx = s.upload(MatRef::new(&x, m, k)).unwrap();
    let dw = s.upload(MatRef::col_major(&w, k, n)).unwrap();
    let mut dy = ctx.zeros::<f32>(m, n).unwrap();
    s.run(&Matmul::with_options(&GemmOptions::default()), &dx, &dw, &mut dy)
        .unwrap();
    let y = s.download(&dy).unwrap();
    s.submit().unwrap();
    let y = y.wait().unwrap();
    for r in 0..m {
        for c in 0..n {
            let want: f32 = (0..k).map(|p| x[r * k + p].to_f32() * w[c * k + p].to_f32()).sum();
            assert_eq!(y[r * n + c], want, "({r}, {c})");
        }
    }
    assert_no_validation_messages(ctx);
}

/// Every matrix-vector kernel the planner can ask for passes spirv-val (the driver runs only
/// those the tests above reach).
#[test]
fn every_kernel_variant_validates() {
    use vk_sgmat::kernel::{generate_gemv, Epilogue, GemvKey, GEMV_MAX_ROWS};
    use vk_sgmat::ComponentType::{Bf16, F16, F32};
    use vk_sgmat::{Activation, Axis};
    for elem in [F16, Bf16, F32] {
        for rows in 1..=GEMV_MAX_ROWS {
            let plain = Epilogue::default();
            let scaled = Epilogue {
                alpha: true,
                beta: true,
                ..plain
            };
            let fused = Epilogue {
                bias: Some((Axis::Col, Bf16)),
                activation: Activation::Gelu,
                output: Some(F16),
                ..scaled
            };
            for (cols, unroll, c_transposed, epilogue) in
                [(4, 1, false, plain), (2, 2, true, scaled), (4, 2, true, fused)]
            {
                let key = GemvKey {
                    unroll,
                    c_transposed,
                    epilogue,
                    ..GemvKey::dense(elem, rows, cols)
                };
                let words = generate_gemv(&key).unwrap();
                common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            }
        }
    }
    let bad = GemvKey::dense(vk_sgmat::ComponentType::I8, 1, 4);
    assert!(matches!(generate_gemv(&bad), Err(vk_sgmat::Error::Unsupported(_))));
    // Interleaved blocks without a block format, or in one that is never interleaved.
    for quant in [None, Some(vk_sgmat::quant::QuantType::Q4K)] {
        let bad = GemvKey {
            elem: vk_sgmat::ComponentType::F16,
            quant,
            interleaved: true,
            ..bad
        };
        assert!(
            matches!(generate_gemv(&bad), Err(vk_sgmat::Error::Unsupported(_))),
            "{quant:?}"
        );
    }
}

/// Every rows-per-workgroup and unroll choice (tuning fields) against the reference, with K
/// ending inside a vector and past several steps, and out-of-range choices as typed errors.
#[test]
fn tuning_choices_agree_with_the_reference() {
    let mut rng = Rng::new(Rng::fresh_seed());
    for cols in [1, 3, 8] {
        for unroll in [1, 2] {
            let options = GemmOptions {
                gemv_cols: Some(cols),
                gemv_unroll: Some(unroll),
                beta: 0.5,
                ..Default::default()
            };
            case::<f16>((3, 257, 1025), ROW, &options, true, &mut rng);
            case::<bf16>((1, 100, 2049), ROW, &options, true, &mut rng);
            case::<f32>((1031, 2, 777), ROW, &options, true, &mut rng);
        }
    }
    let ctx = context();
    for (cols, unroll) in [(Some(0), None), (Some(9), None), (None, Some(3))] {
        let options = GemmOptions {
            gemv_cols: cols,
            gemv_unroll: unroll,
            ..Default::default()
        };
        let e = ctx
            .plan::<f16, f16, f32>(&Matmul::with_options(&options), (1, 64, 64), (ROW, COL))
            .unwrap_err();
        assert!(
            matches!(e, vk_sgmat::Error::InvalidOption(_)),
            "{cols:?} {unroll:?}: {e}"
        );
    }
    assert_no_validation_messages(ctx);
}
