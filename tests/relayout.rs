//! Operands copied into the other storage order first ([`GemmOptions::relayout`]): the copy is
//! exact, so the GEMM gives bit for bit what the same scheme gives reading them in place, and it
//! passes the f64 reference in every layout of A, B and C; 16-bit operands toward A
//! column-major, B row-major, 8-bit ones toward A row-major, B column-major; the plan it makes;
//! its typed errors.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{random_matrix, run_random_gemm_c, Rng};
use common::{assert_no_validation_messages, context, LAYOUTS};
use half::f16;
use vk_sgmat::plan::Kernel;
use vk_sgmat::Matmul;
use vk_sgmat::{ComponentType, ComputeMode, Element, Error, GemmOptions, Layout, MatMut, MatRef};

/// 1, primes, sizes across the copy's tiles (64 source columns by 256 rows), rows that end
/// inside a vector.
const SHAPES: [(usize, usize, usize); 6] = [
    (1, 1, 1),
    (7, 5, 3),
    (65, 131, 67),
    (131, 67, 45),
    (20, 33, 300),
    (263, 9, 71),
];

/// The two runs of one case: `relayout` off and on, the same scheme, split and inputs.
fn both<TA: Element, TB: Element, TC: Element>(
    rng: &mut Rng,
    (m, n, k): (usize, usize, usize),
    (la, lb, lc): (Layout, Layout, Layout),
    base: &GemmOptions,
) -> [Vec<TC>; 2] {
    let ctx = context();
    let (a, lda) = random_matrix::<TA>(rng, m, k, la, 3);
    let (b, ldb) = random_matrix::<TB>(rng, k, n, lb, 0);
    let (c0, ldc) = random_matrix::<TC>(rng, m, n, lc, 1);
    let scheme = ctx
        .plan::<TA, TB, TC>(&Matmul::with_options(base), (m, n, k), (la, lb))
        .unwrap_or_else(|e| panic!("{:?} {la:?} {lb:?}: {e}", (m, n, k)))
        .scheme;
    [false, true].map(|relayout| {
        let options = GemmOptions {
            relayout: Some(relayout),
            scheme: Some(scheme),
            ..base.clone()
        };
        let mut c = c0.clone();
        let cm = MatMut {
            data: &mut c,
            rows: m,
            cols: n,
            layout: lc,
            ld: ldc,
        };
        ctx.run(
            &Matmul::with_options(&options),
            MatRef::stored(&a, m, k, la, lda),
            MatRef::stored(&b, k, n, lb, ldb),
            cm,
        )
        .unwrap_or_else(|e| panic!("{:?} {la:?} {lb:?} {lc:?} relayout={relayout}: {e}", (m, n, k)));
        c
    })
}

/// 16-bit operands and f32 operands rounded first: copied transposed (A column-major, B
/// row-major) or read in place, the same scheme gives the same bits, beta and split-K included.
#[test]
fn relaid_operands_give_the_results_of_reading_them_in_place_bit_for_bit_on_matrix_units() {
    common::require_matrix_units(context(), "operands copied into the order their kernels read fastest");
    let mut rng = Rng::new(Rng::fresh_seed());
    for (i, &shape) in SHAPES.iter().enumerate() {
        for (j, l) in [(0, 0, 0), (0, 1, 0), (1, 1, 1), (0, 1, 1), (1, 0, 0)]
            .into_iter()
            .enumerate()
        {
            let l = (LAYOUTS[l.0], LAYOUTS[l.1], LAYOUTS[l.2]);
            let base = GemmOptions {
                beta: if j % 2 == 1 { 0.5 } else { 0.0 },
                alpha: if j == 2 { -2.0 } else { 1.0 },
                split_k: Some(if i == 4 { 3 } else { 1 }),
                ..Default::default()
            };
            let f32_first = GemmOptions {
                compute: ComputeMode::FastF16,
                convert_first: Some(true),
                ..base.clone()
            };
            let runs = [
                ("f16 x f16", both::<f16, f16, f32>(&mut rng, shape, l, &base)),
                (
                    "f32 x f32 rounded first",
                    both::<f32, f32, f32>(&mut rng, shape, l, &f32_first),
                ),
                (
                    "f16 x f32 rounded first",
                    both::<f16, f32, f32>(&mut rng, shape, l, &f32_first),
                ),
            ];
            for (what, [in_place, relaid]) in runs {
                let same = in_place.iter().zip(&relaid).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "{shape:?} {l:?} {what}: the copy changed the result");
                assert!(
                    relaid.iter().all(|x| x.is_finite()),
                    "{shape:?} {l:?} {what}: NaN or Inf"
                );
            }
        }
    }
    assert_no_validation_messages(context());
}

/// 8-bit operands copied toward A row-major, B column-major: the same scheme gives the same
/// integers either way, and both match the f64 reference exactly, in every layout of A, B and C
/// with beta and split-K.
#[test]
fn relaid_int8_operands_give_the_exact_results_of_reading_them_in_place_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "operands copied into the order their kernels read fastest");
    let mut rng = Rng::new(Rng::fresh_seed());
    for (i, &shape) in SHAPES.iter().chain(&[(300, 17, 529), (5, 531, 33)]).enumerate() {
        for l in 0..8 {
            let l = (LAYOUTS[l & 1], LAYOUTS[(l >> 1) & 1], LAYOUTS[l >> 2]);
            let base = GemmOptions {
                beta: if i % 2 == 1 { 2.0 } else { 0.0 },
                split_k: Some(if i == 4 { 3 } else { 1 }),
                ..Default::default()
            };
            let [in_place, relaid] = both::<i8, i8, i32>(&mut rng, shape, l, &base);
            assert_eq!(in_place, relaid, "i8 {shape:?} {l:?}: the copy changed the result");
            let [in_place, relaid] = both::<u8, u8, u32>(&mut rng, shape, l, &base);
            assert_eq!(in_place, relaid, "u8 {shape:?} {l:?}: the copy changed the result");
            let on = GemmOptions {
                relayout: Some(true),
                ..base
            };
            let check = run_random_gemm_c::<i8, i8, i32>(ctx, &mut rng, shape, l, 2, &on, usize::MAX).unwrap();
            assert!(check.passed, "i8 {shape:?} {l:?}: {check:?}");
            let check = run_random_gemm_c::<u8, u8, u32>(ctx, &mut rng, shape, l, 1, &on, usize::MAX).unwrap();
            assert!(check.passed, "u8 {shape:?} {l:?}: {check:?}");
        }
    }
    assert_no_validation_messages(ctx);
}

/// Against the f64 reference, fresh inputs, C poisoned where it is not read: every layout of A,
/// B and C with the schemes vk-sgmat picks for the relaid problem.
#[test]
fn relaid_gemms_pass_the_reference_in_every_layout_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "operands copied into the order their kernels read fastest");
    let mut rng = Rng::new(Rng::fresh_seed());
    for (i, &shape) in SHAPES.iter().enumerate() {
        for l in 0..8 {
            let l = (LAYOUTS[l & 1], LAYOUTS[(l >> 1) & 1], LAYOUTS[l >> 2]);
            let options = GemmOptions {
                relayout: Some(true),
                alpha: 0.75,
                beta: if i % 2 == 0 { 0.0 } else { -1.0 },
                ..Default::default()
            };
            let check = run_random_gemm_c::<f16, f16, f32>(ctx, &mut rng, shape, l, 2, &options, usize::MAX).unwrap();
            assert!(check.passed, "{shape:?} {l:?}: {check:?}");
            let fast = GemmOptions {
                compute: ComputeMode::FastF16,
                convert_first: Some(true),
                ..options
            };
            let check = run_random_gemm_c::<f32, f32, f32>(ctx, &mut rng, shape, l, 1, &fast, usize::MAX).unwrap();
            assert!(check.passed, "f32 fast {shape:?} {l:?}: {check:?}");
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn relayout_is_planned_as_transposing_passes_and_refused_where_it_cannot_run_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "operands copied into the order their kernels read fastest");
    let on = GemmOptions {
        relayout: Some(true),
        ..Default::default()
    };
    let (rm, cm) = (Layout::RowMajor, Layout::ColMajor);
    // nn: A is copied column-major; tt: B row-major; nt: both; tn: neither.
    for ((la, lb), flips) in [
        ((rm, rm), [true, false]),
        ((cm, cm), [false, true]),
        ((rm, cm), [true, true]),
        ((cm, rm), [false, false]),
    ] {
        let plan = ctx
            .plan::<f16, f16, f32>(&Matmul::with_options(&on), (64, 48, 40), (la, lb))
            .unwrap();
        let copies = plan
            .dispatches
            .iter()
            .filter(|d| {
                d.kernel
                    == Kernel::Transpose {
                        rounds_to: None,
                        bytes: 2,
                    }
            })
            .count();
        assert_eq!(copies, flips.iter().filter(|&&f| f).count(), "{la:?} {lb:?}");
        let key = plan.main_kernel();
        assert_eq!((key.a_layout, key.b_layout), (cm, rm), "{la:?} {lb:?}");
        // CPU drivers read operands in place by default.
        let plan = ctx
            .plan::<f16, f16, f32>(&Matmul::with_options(&GemmOptions::default()), (64, 48, 40), (la, lb))
            .unwrap();
        let copies = plan
            .kernels()
            .into_iter()
            .filter(|k| matches!(k, Kernel::Transpose { .. }))
            .count();
        assert_eq!(copies, 0, "{la:?} {lb:?}");
    }
    // An f32 operand converted first is transposed as it is rounded: one pass, not two.
    let fast_first = GemmOptions {
        compute: ComputeMode::FastF16,
        convert_first: Some(true),
        ..on.clone()
    };
    let plan = ctx
        .plan::<f32, f16, f32>(&Matmul::with_options(&fast_first), (64, 48, 40), (rm, rm))
        .unwrap();
    let kinds: Vec<Kernel> = plan.dispatches.iter().map(|d| d.kernel).collect();
    assert_eq!(
        kinds[0],
        Kernel::Transpose {
            rounds_to: Some(ComponentType::F16),
            bytes: 2,
        },
        "{kinds:?}"
    );
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    // 8-bit operands go the other way, toward A row-major, B column-major (both contiguous
    // along K): nn copies B, tt A, tn both, nt neither.
    for ((la, lb), flips) in [
        ((rm, rm), [false, true]),
        ((cm, cm), [true, false]),
        ((cm, rm), [true, true]),
        ((rm, cm), [false, false]),
    ] {
        let plans = [
            ctx.plan::<i8, i8, i32>(&Matmul::with_options(&on), (64, 48, 40), (la, lb))
                .unwrap(),
            ctx.plan::<u8, u8, u32>(&Matmul::with_options(&on), (64, 48, 40), (la, lb))
                .unwrap(),
        ];
        for plan in plans {
            let copies: Vec<Kernel> = plan
                .dispatches
                .iter()
                .map(|d| d.kernel)
                .filter(|k| matches!(k, Kernel::Transpose { .. }))
                .collect();
            let want = flips.iter().filter(|&&f| f).count();
            assert_eq!(
                copies,
                vec![
                    Kernel::Transpose {
                        rounds_to: None,
                        bytes: 1
                    };
                    want
                ],
                "{la:?} {lb:?}"
            );
            let key = plan.main_kernel();
            assert_eq!((key.a_layout, key.b_layout), (rm, cm), "{la:?} {lb:?}");
        }
    }
    // f32 operands converted as they load have no transposing pass.
    let loaded = GemmOptions {
        compute: ComputeMode::FastF16,
        convert_first: Some(false),
        ..on.clone()
    };
    let e = ctx
        .plan::<f32, f32, f32>(&Matmul::with_options(&loaded), (64, 48, 40), (rm, rm))
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported(ref m) if m.contains("16-bit")), "{e}");
    // A batch reads its operands in place.
    let (m, n, k, count) = (9, 10, 11, 3);
    let a = vec![f16::ONE; count * m * k];
    let b = vec![f16::ONE; count * k * n];
    let mut c = vec![0.0f32; count * m * n];
    let e = ctx
        .run(
            &Matmul::with_options(&on),
            vk_sgmat::BatchRef::new(&a, count, m, k),
            vk_sgmat::BatchRef::new(&b, count, k, n),
            vk_sgmat::BatchMut::new(&mut c, count, m, n),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported(ref msg) if msg.contains("batch")), "{e}");
    assert!(c.iter().all(|&x| x == 0.0), "C untouched after a refused GEMM");
}
