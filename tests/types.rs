//! f32 and mixed-type operands, and C in either storage order, against the f64 reference.
//! Bounds: the result type's accumulation bound plus `2u` for operands rounded to a type of unit
//! roundoff `u` on their way to the matrix units (see `verify::compare_rounded`).

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::{compare_rounded, reference, run_random_gemm_c, Rng};
use common::{assert_no_validation_messages, context, LAYOUTS};
use half::f16;
use vk_sgmat::Matmul;
use vk_sgmat::{ComponentType, ComputeMode, Error, GemmOptions, Layout, MatMut, MatRef};

/// 1, primes and sizes that are no multiple of any tile.
const SHAPES: [(usize, usize, usize); 5] = [(1, 1, 1), (7, 5, 3), (37, 41, 29), (131, 67, 45), (64, 96, 200)];

/// `len` values uniform in [-1, 1] times 2^e, e uniform in `center - spread ..= center + spread`.
fn varied(rng: &mut Rng, len: usize, center: i32, spread: i64) -> Vec<f32> {
    (0..len)
        .map(|_| ((rng.unit() * 2.0 - 1.0) * 2f64.powi(center + rng.int(-spread, spread) as i32)) as f32)
        .collect()
}

fn fast() -> GemmOptions {
    GemmOptions {
        compute: ComputeMode::FastF16,
        ..Default::default()
    }
}

#[test]
fn f32_times_f32_rounded_to_f16_every_layout_of_a_b_and_c() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    for (i, &shape) in SHAPES.iter().enumerate() {
        for (j, layouts) in [(0, 0, 0), (0, 1, 1), (1, 0, 0), (1, 1, 1), (0, 0, 1)]
            .into_iter()
            .enumerate()
        {
            let l = (LAYOUTS[layouts.0], LAYOUTS[layouts.1], LAYOUTS[layouts.2]);
            let options = GemmOptions {
                alpha: if j % 2 == 0 { 1.0 } else { -0.5 },
                beta: if j % 2 == 0 { 0.0 } else { 2.0 },
                ..fast()
            };
            let check = run_random_gemm_c::<f32, f32, f32>(ctx, &mut rng, shape, l, i % 2 * 3, &options, usize::MAX)
                .unwrap_or_else(|e| panic!("{shape:?} {l:?}: {e}"));
            assert!(check.passed, "{shape:?} {l:?}: {check:?}");
        }
    }
    assert_no_validation_messages(ctx);
}

#[test]
fn mixed_f16_and_f32_operands_either_way_round_and_split_k() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    for &shape in &SHAPES {
        for l in [(0, 1, 0), (1, 0, 1)] {
            let l = (LAYOUTS[l.0], LAYOUTS[l.1], LAYOUTS[l.2]);
            let o = GemmOptions::default();
            let c1 = run_random_gemm_c::<f16, f32, f32>(ctx, &mut rng, shape, l, 1, &o, usize::MAX).unwrap();
            let c2 = run_random_gemm_c::<f32, f16, f16>(ctx, &mut rng, shape, l, 0, &o, usize::MAX).unwrap();
            assert!(c1.passed && c2.passed, "{shape:?} {l:?}: {c1:?} {c2:?}");
        }
    }
    // Forced split-K: the slices and the reduction see the converted operands like one pass.
    let split = GemmOptions {
        split_k: Some(3),
        beta: 1.0,
        ..fast()
    };
    let l = (Layout::ColMajor, Layout::RowMajor, Layout::ColMajor);
    let check = run_random_gemm_c::<f32, f32, f32>(ctx, &mut rng, (33, 70, 900), l, 2, &split, usize::MAX).unwrap();
    assert!(check.passed, "{check:?}");
    assert_no_validation_messages(ctx);
}

/// f32 operands rounded in a pass of their own before the GEMM give, bit for bit, what the same
/// kernel gives rounding them as it loads (the same rounding to nearest even, the same sums),
/// and pass the rounded bound: every layout of A, B and C, sizes whose rows end inside a vector,
/// f32 with f32 and with f16, beta, and forced split-K (its slices' scratch after the copies).
#[test]
fn f32_operands_rounded_first_match_rounding_as_loaded_bit_for_bit() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let shapes = [(1, 1, 1), (7, 5, 3), (37, 41, 29), (131, 67, 45), (20, 33, 900)];
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        for (j, l) in [(0, 0, 0), (0, 1, 1), (1, 0, 0), (1, 1, 1)].into_iter().enumerate() {
            let l = (LAYOUTS[l.0], LAYOUTS[l.1], LAYOUTS[l.2]);
            let a: Vec<f32> = varied(&mut rng, m * k, 0, 3);
            let b: Vec<f32> = varied(&mut rng, k * n, 0, 3);
            let bh: Vec<f16> = b.iter().map(|&x| f16::from_f32(x)).collect();
            let c0: Vec<f32> = varied(&mut rng, m * n, 0, 1);
            fn mat<T>(d: &[T], r: usize, c: usize, layout: Layout) -> MatRef<'_, T> {
                MatRef::stored(d, r, c, layout, if layout == Layout::RowMajor { c } else { r })
            }
            let (am, bm, bhm) = (mat(&a, m, k, l.0), mat(&b, k, n, l.1), mat(&bh, k, n, l.1));
            let base = GemmOptions {
                beta: if j % 2 == 1 { 0.5 } else { 0.0 },
                split_k: Some(if i == 4 { 3 } else { 1 }),
                ..fast()
            };
            let scheme = ctx
                .plan::<f32, f32, f32>(&Matmul::with_options(&base), (m, n, k), (l.0, l.1))
                .unwrap()
                .scheme;
            let run = |first: bool, half_b: bool| {
                let options = GemmOptions {
                    convert_first: Some(first),
                    scheme: Some(scheme),
                    ..base.clone()
                };
                let mut c = c0.clone();
                let cm = MatMut {
                    data: &mut c,
                    rows: m,
                    cols: n,
                    layout: l.2,
                    ld: if l.2 == Layout::RowMajor { n } else { m },
                };
                let done = if half_b {
                    ctx.run(&Matmul::with_options(&options), am, bhm, cm)
                } else {
                    ctx.run(&Matmul::with_options(&options), am, bm, cm)
                };
                done.unwrap_or_else(|e| panic!("{:?} {l:?} first={first}: {e}", (m, n, k)));
                c
            };
            for half_b in [false, true] {
                let (loaded, first) = (run(false, half_b), run(true, half_b));
                let same = loaded.iter().zip(&first).all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(
                    same,
                    "{:?} {l:?} f16 B: {half_b}: rounding first changed the result",
                    (m, n, k)
                );
                assert!(
                    first.iter().all(|x| x.is_finite()),
                    "{:?} {l:?}: unwritten elements",
                    (m, n, k)
                );
            }
            // Against the f64 reference (row-major views of C; the bound of rounded operands).
            let c = run(true, false);
            let rows: Vec<usize> = (0..m).collect();
            let dense = |c: &[f32]| -> Vec<f32> {
                (0..m * n)
                    .map(|e| (e / n, e % n))
                    .map(|(r, cc)| {
                        if l.2 == Layout::RowMajor {
                            c[r * n + cc]
                        } else {
                            c[cc * m + r]
                        }
                    })
                    .collect()
            };
            let old = dense(&c0);
            let (want, mag) = reference::<f32, f32, f32>(&am, &bm, Some((&old, n)), 1.0, base.beta, &rows);
            let dense = dense(&c);
            let u = crate::verify::unit_roundoff(ComponentType::F16);
            let check = compare_rounded(&dense, n, n, &rows, (&want, &mag), k, u);
            assert!(check.passed, "{:?} {l:?}: {check:?}", (m, n, k));
        }
    }
    assert_no_validation_messages(ctx);
}

/// Rounding first is a pass of its own in the plan; a batch refuses it with a typed error.
#[test]
fn rounding_first_is_planned_as_narrowing_passes_and_refused_for_a_batch_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "f32 operands rounded to f16 first");
    let first = GemmOptions {
        convert_first: Some(true),
        ..fast()
    };
    let plan = ctx
        .plan::<f32, f32, f32>(
            &Matmul::with_options(&first),
            (64, 48, 40),
            (Layout::RowMajor, Layout::ColMajor),
        )
        .unwrap();
    let kinds: Vec<_> = plan.dispatches.iter().map(|d| d.kernel).collect();
    let narrow = vk_sgmat::plan::Kernel::Narrow { to: ComponentType::F16 };
    assert_eq!(&kinds[..2], &[narrow, narrow], "{kinds:?}");
    assert_eq!(plan.main_kernel().loads, [vk_sgmat::kernel::Load::Native; 2]);
    let plan = ctx
        .plan::<f32, f32, f32>(
            &Matmul::with_options(&fast()),
            (64, 48, 40),
            (Layout::RowMajor, Layout::ColMajor),
        )
        .unwrap();
    assert!(
        !plan.kernels().contains(&narrow),
        "CPU drivers convert as they load by default"
    );
    let (m, n, k, count) = (9, 10, 11, 3);
    let a = vec![1.0f32; count * m * k];
    let b = vec![1.0f32; count * k * n];
    let mut c = vec![0.0f32; count * m * n];
    let e = ctx
        .run(
            &Matmul::with_options(&first),
            vk_sgmat::BatchRef::new(&a, count, m, k),
            vk_sgmat::BatchRef::new(&b, count, k, n),
            vk_sgmat::BatchMut::new(&mut c, count, m, n),
        )
        .unwrap_err();
    assert!(matches!(e, Error::Unsupported(ref msg) if msg.contains("batch")), "{e}");
}

/// Inputs spread over ten binary orders of magnitude (within f16's range) stay inside the
/// rounded bound, which is relative to `sum |a||b|`.
#[test]
fn fast_mode_holds_its_bound_on_inputs_of_varied_magnitude_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "f32 operands rounded to f16");
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (45, 77, 301);
    let (a, b) = (varied(&mut rng, m * k, 0, 5), varied(&mut rng, k * n, 0, 5));
    let mut c = vec![f32::NAN; m * n];
    let (am, bm) = (MatRef::new(&a, m, k), MatRef::col_major(&b, k, n));
    ctx.run(&Matmul::with_options(&fast()), am, bm, MatMut::new(&mut c, m, n))
        .unwrap();
    let rows: Vec<usize> = (0..m).collect();
    let (want, mag) = reference::<f32, f32, f32>(&am, &bm, None, 1.0, 0.0, &rows);
    let u = crate::verify::unit_roundoff(ComponentType::F16);
    let check = compare_rounded(&c, n, n, &rows, (&want, &mag), k, u);
    assert!(check.passed, "{check:?}");
    // The rounding is real: f32 inputs are not multiplied exactly (a sanity check of the test).
    assert!(check.rel_error > 1e-7, "{check:?}");
}

/// The accurate split (the default mode) over every layout of A, B and C, alpha/beta, and a
/// requested split-K (ignored: the split runs in one pass), within f32's bound plus 2 * 2^-22.
#[test]
fn f32_accurate_split_every_layout() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    for (i, &shape) in SHAPES.iter().enumerate() {
        for (j, l) in [(0, 0, 0), (0, 1, 1), (1, 0, 0), (1, 1, 1), (1, 0, 1)]
            .into_iter()
            .enumerate()
        {
            let l = (LAYOUTS[l.0], LAYOUTS[l.1], LAYOUTS[l.2]);
            let options = GemmOptions {
                alpha: if j % 2 == 0 { 1.0 } else { -3.0 },
                beta: if j % 2 == 0 { 0.0 } else { 0.25 },
                split_k: (j == 3).then_some(4),
                ..Default::default()
            };
            let check = run_random_gemm_c::<f32, f32, f32>(ctx, &mut rng, shape, l, i % 2 * 3, &options, usize::MAX)
                .unwrap_or_else(|e| panic!("{shape:?} {l:?}: {e}"));
            assert!(check.passed, "{shape:?} {l:?} {options:?}: {check:?}");
        }
    }
    assert_no_validation_messages(ctx);
}

/// Magnitudes from 2^-40 to 2^40 (far outside f16's range, both ways): the split's scale keeps
/// the f32 bound where rounding to f16 overflows or underflows.
#[test]
fn accurate_split_scales_magnitudes_far_outside_f16() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (29, 45, 300);
    for center in [-30, 0, 30] {
        let (a, b) = (varied(&mut rng, m * k, center, 10), varied(&mut rng, k * n, center, 10));
        let mut c = vec![f32::NAN; m * n];
        let (am, bm) = (MatRef::new(&a, m, k), MatRef::col_major(&b, k, n));
        ctx.run(&Matmul::new(), am, bm, MatMut::new(&mut c, m, n)).unwrap();
        let rows: Vec<usize> = (0..m).collect();
        let (want, mag) = reference::<f32, f32, f32>(&am, &bm, None, 1.0, 0.0, &rows);
        let split_u =
            crate::verify::input_roundoff(ComponentType::F32, ComponentType::F32, ComputeMode::Accurate).unwrap();
        assert_eq!(split_u, 2f64.powi(-22));
        let check = compare_rounded(&c, n, n, &rows, (&want, &mag), k, split_u);
        assert!(check.passed, "magnitudes around 2^{center}: {check:?}");
    }
}

/// f32 x f32 without the matrix units (`Exact`): every layout of A, B and C, alpha/beta,
/// split-K, against the f32 bound.
#[test]
fn f32_exact_kernel_every_layout_and_split_k() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    for (i, &shape) in SHAPES.iter().enumerate() {
        for (j, l) in [(0, 0, 0), (0, 1, 0), (1, 0, 1), (1, 1, 0), (0, 1, 1)]
            .into_iter()
            .enumerate()
        {
            let l = (LAYOUTS[l.0], LAYOUTS[l.1], LAYOUTS[l.2]);
            let options = GemmOptions {
                alpha: if j % 2 == 0 { 1.0 } else { 1.5 },
                beta: if j % 2 == 0 { 0.0 } else { -1.0 },
                compute: ComputeMode::Exact,
                split_k: (j == 4).then_some(2),
                ..Default::default()
            };
            let check = run_random_gemm_c::<f32, f32, f32>(ctx, &mut rng, shape, l, i % 2 * 3, &options, usize::MAX)
                .unwrap_or_else(|e| panic!("{shape:?} {l:?}: {e}"));
            assert!(check.passed, "{shape:?} {l:?} {options:?}: {check:?}");
            assert_eq!(check.tolerance, crate::verify::tolerance(ComponentType::F32, shape.2));
        }
    }
    assert_no_validation_messages(ctx);
}

/// Inputs over twenty binary orders of magnitude: the exact kernel stays within f32's bound
/// (relative to `sum |a||b|`), where rounding to f16 would not.
#[test]
fn exact_mode_holds_the_f32_bound_on_inputs_of_varied_magnitude() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (33, 70, 517);
    let (a, b) = (varied(&mut rng, m * k, 0, 10), varied(&mut rng, k * n, 0, 10));
    let mut c = vec![f32::NAN; m * n];
    let (am, bm) = (MatRef::col_major(&a, m, k), MatRef::new(&b, k, n));
    let exact = GemmOptions {
        compute: ComputeMode::Exact,
        ..Default::default()
    };
    ctx.run(&Matmul::with_options(&exact), am, bm, MatMut::new(&mut c, m, n))
        .unwrap();
    let rows: Vec<usize> = (0..m).collect();
    let (want, mag) = reference::<f32, f32, f32>(&am, &bm, None, 1.0, 0.0, &rows);
    let check = compare_rounded(&c, n, n, &rows, (&want, &mag), k, 0.0);
    assert!(check.passed, "{check:?}");
}

/// The inputs of [`exact_mode_holds_the_f32_bound_on_inputs_of_varied_magnitude`] through f16
/// break f32's bound: the test data can tell the two apart.
#[test]
fn varied_magnitudes_break_the_f32_bound_when_rounded_to_f16_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "f32 operands rounded to f16");
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (33, 70, 517);
    let (a, b) = (varied(&mut rng, m * k, 0, 10), varied(&mut rng, k * n, 0, 10));
    let mut c = vec![f32::NAN; m * n];
    let (am, bm) = (MatRef::col_major(&a, m, k), MatRef::new(&b, k, n));
    ctx.run(&Matmul::with_options(&fast()), am, bm, MatMut::new(&mut c, m, n))
        .unwrap();
    let rows: Vec<usize> = (0..m).collect();
    let (want, mag) = reference::<f32, f32, f32>(&am, &bm, None, 1.0, 0.0, &rows);
    let rounded = compare_rounded(&c, n, n, &rows, (&want, &mag), k, 0.0);
    assert!(!rounded.passed, "{rounded:?}");
}

#[test]
fn unsupported_type_pairs_and_modes_are_typed_errors() {
    let ctx = context();
    let a = vec![1.0f32; 64];
    let mut c = vec![0.0f32; 64];
    let e = ctx
        .run(
            &Matmul::new(),
            MatRef::new(&a, 8, 8),
            MatRef::new(&[1i8; 64], 8, 8),
            MatMut::new(&mut c, 8, 8),
        )
        .unwrap_err();
    assert!(
        matches!(e, Error::Unsupported(ref m) if m.contains("f32") && m.contains("i8")),
        "{e}"
    );
    // The fast bf16 mode rounds to bf16 on a bf16 config; where the device has none, it runs on
    // the f32 kernel without matrix units instead (exact here either way).
    let bf16 = GemmOptions {
        compute: ComputeMode::FastBf16,
        ..Default::default()
    };
    c.fill(f32::NAN);
    ctx.run(
        &Matmul::with_options(&bf16),
        MatRef::new(&a, 8, 8),
        MatRef::new(&a, 8, 8),
        MatMut::new(&mut c, 8, 8),
    )
    .expect("the fast bf16 mode runs with or without a bf16 config");
    assert!(c.iter().all(|&x| x == 8.0), "{c:?}");
}

/// The accurate split converted first runs on workgroup scope alone: where the device has it,
/// the GEMM passes the split's bound; where it does not (a CPU driver, a GPU without
/// `VK_NV_cooperative_matrix2`), the call is a typed error that names the reason and the
/// options that do run, and C is untouched.
#[test]
fn accurate_planes_first_run_on_workgroup_scope_or_say_why_not_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "the accurate split on workgroup scope");
    let info = ctx.device_info();
    let workgroup =
        info.kind != vk_sgmat::device::DeviceKind::Cpu && info.cooperative_matrix2.as_ref().is_some_and(|c| c.usable());
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (37, 29, 61);
    let first = GemmOptions {
        compute: ComputeMode::Accurate,
        convert_first: Some(true),
        ..Default::default()
    };
    let l = (Layout::RowMajor, Layout::ColMajor, Layout::RowMajor);
    match run_random_gemm_c::<f32, f32, f32>(ctx, &mut rng, (m, n, k), l, 0, &first, usize::MAX) {
        Ok(check) => {
            assert!(workgroup, "ran without workgroup scope: {check:?}");
            assert!(check.passed, "{check:?}");
        }
        Err(e) => {
            assert!(!workgroup, "refused with workgroup scope: {e}");
            let text = e.to_string();
            assert!(
                matches!(e, Error::Unsupported(_)) && text.contains("workgroup-scope") && text.contains("Some(false)"),
                "{e}"
            );
            let a = vec![1.0f32; m * k];
            let b = vec![1.0f32; k * n];
            let mut c = vec![-3.0f32; m * n];
            let e = ctx.run(
                &Matmul::with_options(&first),
                MatRef::new(&a, m, k),
                MatRef::new(&b, k, n),
                MatMut::new(&mut c, m, n),
            );
            assert!(matches!(e, Err(Error::Unsupported(_))), "{e:?}");
            assert!(c.iter().all(|&x| x == -3.0), "C changed by a refused call");
            // The options the error names do run.
            for convert_first in [None, Some(false)] {
                let options = GemmOptions { convert_first, ..first };
                let check =
                    run_random_gemm_c::<f32, f32, f32>(ctx, &mut rng, (m, n, k), l, 0, &options, usize::MAX).unwrap();
                assert!(check.passed, "{convert_first:?}: {check:?}");
            }
        }
    }
    assert_no_validation_messages(ctx);
}
