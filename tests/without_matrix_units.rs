//! Every element type on the kernels without matrix units, on any device: a context with
//! `ContextOptions::matrix_units` off plans every GEMM there (checked in each plan, so nothing
//! passes through the matrix units by accident), and each type pair passes the f64 reference in
//! every layout, at sizes off every tile, with alpha and beta, a fused epilogue, and a grouped
//! batch. (The CI tiers at `LP_NATIVE_VECTOR_WIDTH=128` and `512` run the whole suite there.)

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, run_case, LAYOUT_PAIRS};
use half::{bf16, f16};
use std::sync::OnceLock;
use vk_sgmat::kernel::Load;
use vk_sgmat::plan::Kernel;
use vk_sgmat::{
    Activation, Axis, Context, ContextOptions, Element, Fused, GemmOptions, Layout, MatMut, MatRef, Matmul,
};

/// 1, primes, sizes just off the 64x64x16 and 128x128x16 tiles, a long K.
const SHAPES: [(usize, usize, usize); 5] = [(1, 1, 1), (67, 45, 33), (17, 129, 16), (130, 3, 257), (5, 70, 1100)];

fn context() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| {
        Context::with_options(ContextOptions {
            validation: true,
            poison_outputs: true,
            matrix_units: false,
            ..Default::default()
        })
        .expect("a Vulkan device and the validation layer (the cargo runner provides lavapipe)")
    })
}

/// Asserts that every GEMM dispatch of this problem's plan runs without matrix units (or that
/// it runs on the matrix-vector kernel, which has none either).
fn assert_planned_without<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    shape: (usize, usize, usize),
    layouts: (Layout, Layout),
    options: &GemmOptions,
) {
    let plan = ctx
        .plan::<TA, TB, TC>(&Matmul::with_options(options), shape, layouts)
        .unwrap_or_else(|e| panic!("{shape:?} {layouts:?}: {e}"));
    for d in &plan.dispatches {
        match d.kernel {
            Kernel::Gemm(key) => assert!(Load::without_matrix_units(key.loads), "{}", key.name()),
            Kernel::Gemv(_) | Kernel::Reduce { .. } => {}
            other => panic!("{shape:?}: unexpected pass {other:?}"),
        }
    }
}

fn sweep<TA: Element, TB: Element, TC: Element>(options: &GemmOptions) {
    let ctx = context();
    assert!(ctx.configs().is_empty(), "matrix_units: false hides every config");
    let mut rng = Rng::new(Rng::fresh_seed());
    let mut failures = Vec::new();
    for shape in SHAPES {
        for layouts in LAYOUT_PAIRS {
            assert_planned_without::<TA, TB, TC>(ctx, shape, layouts, options);
            let check = run_case::<TA, TB, TC>(ctx, &mut rng, shape, layouts, 3, options);
            if !check.passed {
                failures.push(format!("{shape:?} {layouts:?}: {check:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} x {} -> {}: {}",
        TA::TYPE,
        TB::TYPE,
        TC::TYPE,
        failures.join("\n")
    );
    assert_no_validation_messages(ctx);
}

fn scaled() -> GemmOptions {
    GemmOptions {
        alpha: -1.5,
        beta: 0.5,
        ..Default::default()
    }
}

fn scaled_int() -> GemmOptions {
    GemmOptions {
        alpha: 3.0,
        beta: 2.0,
        ..Default::default()
    }
}

#[test]
fn f16_into_f32_and_f16() {
    sweep::<f16, f16, f32>(&scaled());
    sweep::<f16, f16, f16>(&GemmOptions::default());
}

#[test]
fn bf16_into_f32_and_bf16() {
    sweep::<bf16, bf16, f32>(&scaled());
    sweep::<bf16, bf16, bf16>(&scaled());
}

#[test]
fn a_16_bit_operand_beside_an_f32_one() {
    sweep::<f16, f32, f32>(&scaled());
    sweep::<f32, bf16, f32>(&GemmOptions::default());
}

#[test]
fn f32_in_every_mode() {
    for compute in [
        vk_sgmat::ComputeMode::Accurate,
        vk_sgmat::ComputeMode::Exact,
        vk_sgmat::ComputeMode::FastF16,
        vk_sgmat::ComputeMode::FastBf16,
    ] {
        sweep::<f32, f32, f32>(&GemmOptions { compute, ..scaled() });
    }
}

#[test]
fn i8_and_u8_exact() {
    sweep::<i8, i8, i32>(&scaled_int());
    sweep::<u8, u8, u32>(&scaled_int());
    // Packed dot products where the device has them, else widened to 32 bits.
    let plan = context()
        .plan::<i8, i8, i32>(&Matmul::new(), (64, 64, 64), (Layout::RowMajor, Layout::RowMajor))
        .unwrap();
    let want = if context().device_info().features.shader_integer_dot_product {
        Load::Packed
    } else {
        Load::Widen
    };
    assert_eq!(plan.main_kernel().loads, [want; 2]);
}

/// The extremes of i8 and u8 over a K long enough to sum past 2^24 (where an f32 accumulator
/// would round): exact, element by element.
#[test]
fn eight_bit_extremes_sum_exactly() {
    let ctx = context();
    let (m, n, k) = (3, 5, 2000);
    let a = vec![-128i8; m * k];
    let b = vec![-128i8; k * n];
    let mut c = vec![0i32; m * n];
    ctx.run(
        &Matmul::new(),
        MatRef::new(&a, m, k),
        MatRef::col_major(&b, k, n),
        MatMut::new(&mut c, m, n),
    )
    .unwrap();
    assert!(c.iter().all(|&x| x == 128 * 128 * k as i32), "{c:?}");
    let (a, b) = (vec![255u8; m * k], vec![255u8; k * n]);
    let mut c = vec![0u32; m * n];
    ctx.run(
        &Matmul::new(),
        MatRef::new(&a, m, k),
        MatRef::new(&b, k, n),
        MatMut::new(&mut c, m, n),
    )
    .unwrap();
    assert!(c.iter().all(|&x| x == 255 * 255 * k as u32), "{c:?}");
    assert_no_validation_messages(ctx);
}

/// A fused bias and activation into an f16 C, and a grouped batch, planned and run without
/// matrix units against a CPU computation of the same terms.
#[test]
fn fused_and_grouped_gemms() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (37, 29, 41);
    let small = |rng: &mut Rng| f16::from_f32(((rng.next_u64() % 9) as f32 - 4.0) / 4.0);
    let a: Vec<f16> = (0..m * k).map(|_| small(&mut rng)).collect();
    let b: Vec<f16> = (0..k * n).map(|_| small(&mut rng)).collect();
    let bias: Vec<f32> = (0..n).map(|j| j as f32 / 8.0 - 1.0).collect();
    let mut c = vec![f16::NAN; m * n];
    let fused = Fused::new().bias(Axis::Col, &bias[..]).activation(Activation::Relu);
    ctx.run(
        &Matmul::new().fused(&fused),
        MatRef::new(&a, m, k),
        MatRef::new(&b, k, n),
        MatMut::new(&mut c, m, n),
    )
    .unwrap();
    for i in 0..m {
        for j in 0..n {
            let dot: f32 = (0..k).map(|p| a[i * k + p].to_f32() * b[p * n + j].to_f32()).sum();
            // Products of quarters sum exactly in f32; the f16 store rounds once.
            let want = f16::from_f32((dot + bias[j]).max(0.0));
            assert_eq!(c[i * n + j], want, "({i}, {j})");
        }
    }
    // Groups of rows 5, 0 and 11 of A, each with its own B.
    let rows = [5usize, 0, 11];
    let total: usize = rows.iter().sum();
    let a: Vec<f16> = (0..total * k).map(|_| small(&mut rng)).collect();
    let b: Vec<f16> = (0..rows.len() * k * n).map(|_| small(&mut rng)).collect();
    let mut c = vec![f32::NAN; total * n];
    ctx.run(
        &Matmul::new().grouped(&rows),
        MatRef::new(&a, total, k),
        vk_sgmat::BatchRef::new(&b, rows.len(), k, n),
        MatMut::new(&mut c, total, n),
    )
    .unwrap();
    let mut first = 0;
    for (g, &count) in rows.iter().enumerate() {
        for i in first..first + count {
            for j in 0..n {
                let dot: f32 = (0..k)
                    .map(|p| a[i * k + p].to_f32() * b[(g * k + p) * n + j].to_f32())
                    .sum();
                assert_eq!(c[i * n + j], dot, "group {g} row {i} column {j}");
            }
        }
        first += count;
    }
    assert_no_validation_messages(ctx);
}
