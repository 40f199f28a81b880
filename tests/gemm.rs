//! GEMMs on the present driver (lavapipe in CI), every config, checked against an f64 reference,
//! with the validation layer on (any message fails) and C poisoned before each run.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, context, run_case, LAYOUT_PAIRS};
use half::f16;
use vk_sgmat::{ComponentType, Context, DeviceMatrix, Element, GemmOptions, Layout, MatMut, MatRef};
use vk_sgmat::{Matmul, Timing, Timings};

/// Square sizes around the 8x8x8 fragments and 32x32 tiles lavapipe uses, 1 and primes.
const SQUARE: [usize; 12] = [1, 7, 8, 9, 15, 16, 17, 63, 65, 127, 129, 257];
/// Rectangles, including ones far from any tile multiple.
const RECT: [(usize, usize, usize); 6] = [
    (1, 1000, 3),
    (300, 5, 700),
    (1000, 1, 17),
    (31, 257, 2),
    (2, 3, 1031),
    (97, 61, 131),
];

fn seeded() -> Rng {
    let seed = Rng::fresh_seed();
    eprintln!("seed {seed} (set VK_SGMAT_SEED to reproduce)");
    Rng::new(seed)
}

/// Whether the device has the config for these types, or no matrix units at all (every type on
/// the kernels without them): lavapipe with its four configs runs them on the matrix units, at
/// `LP_NATIVE_VECTOR_WIDTH=128` without.
fn has<TA: Element, TC: Element>() -> bool {
    let ctx = context();
    let present = ctx.configs().is_empty()
        || ctx
            .configs()
            .iter()
            .any(|c| c.component_type == TA::TYPE && c.result_type == TC::TYPE);
    assert!(
        present,
        "the device lacks {} -> {}; these tests expect lavapipe's four configs (f16->f16, f16->f32, u8->u32, i8->i32) or more, or none. Device configs: {:?}",
        TA::TYPE,
        TC::TYPE,
        ctx.configs()
    );
    present
}

/// Every square size and rectangle, every layout, plain epilogue.
fn sweep<TA: Element, TC: Element>() {
    assert!(has::<TA, TC>());
    let ctx = context();
    let mut rng = seeded();
    let mut failures = Vec::new();
    let mut shapes: Vec<(usize, usize, usize)> = SQUARE.iter().map(|&s| (s, s, s)).collect();
    shapes.extend(RECT);
    for &shape in &shapes {
        for layouts in LAYOUT_PAIRS {
            let check = run_case::<TA, TA, TC>(ctx, &mut rng, shape, layouts, 0, &GemmOptions::default());
            if !check.passed {
                failures.push(format!("{shape:?} {layouts:?}: {check:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} -> {}: {} failures:\n{}",
        TA::TYPE,
        TC::TYPE,
        failures.len(),
        failures.join("\n")
    );
    assert_no_validation_messages(ctx);
}

/// alpha/beta combinations, padded leading dimensions, odd shapes.
fn epilogues<TA: Element, TC: Element>() {
    assert!(has::<TA, TC>());
    let ctx = context();
    let mut rng = seeded();
    let scalars: &[(f64, f64)] = if TC::TYPE.is_float() {
        &[(1.0, 0.0), (0.5, 0.0), (1.0, 1.0), (-1.5, 0.25), (0.0, 2.0)]
    } else {
        &[(1.0, 0.0), (3.0, 0.0), (1.0, 1.0), (-2.0, 5.0), (0.0, 1.0)]
    };
    let mut failures = Vec::new();
    for &(alpha, beta) in scalars {
        // Unsigned results need non-negative scalars.
        if TC::TYPE == ComponentType::U32 && (alpha < 0.0 || beta < 0.0) {
            continue;
        }
        for (i, layouts) in LAYOUT_PAIRS.into_iter().enumerate() {
            let shape = [(33, 17, 9), (64, 64, 64), (5, 70, 129), (129, 31, 8)][i];
            let options = GemmOptions {
                alpha,
                beta,
                ..Default::default()
            };
            let check = run_case::<TA, TA, TC>(ctx, &mut rng, shape, layouts, 3, &options);
            if !check.passed {
                failures.push(format!("alpha={alpha} beta={beta} {shape:?} {layouts:?}: {check:?}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_no_validation_messages(ctx);
}

#[test]
fn f16_f32_all_shapes_and_layouts() {
    sweep::<f16, f32>();
}

#[test]
fn f16_f16_all_shapes_and_layouts() {
    sweep::<f16, f16>();
}

#[test]
fn i8_i32_all_shapes_and_layouts_exact() {
    sweep::<i8, i32>();
}

#[test]
fn u8_u32_all_shapes_and_layouts_exact() {
    sweep::<u8, u32>();
}

#[test]
fn f16_f32_alpha_beta() {
    epilogues::<f16, f32>();
}

#[test]
fn f16_f16_alpha_beta() {
    epilogues::<f16, f16>();
}

#[test]
fn i8_i32_alpha_beta() {
    epilogues::<i8, i32>();
}

#[test]
fn u8_u32_alpha_beta() {
    epilogues::<u8, u32>();
}

/// C = A*B with every element of A and B equal to `v`.
fn constant_gemm<TA: Element, TC: Element>(
    ctx: &vk_sgmat::Context,
    v: TA,
    (m, n, k): (usize, usize, usize),
) -> Vec<TC> {
    let (a, b) = (vec![v; m * k], vec![v; k * n]);
    let mut c = vec![TC::from_f64(0.0); m * n];
    ctx.run(
        &Matmul::new(),
        vk_sgmat::MatRef::new(&a, m, k),
        vk_sgmat::MatRef::new(&b, k, n),
        vk_sgmat::MatMut::new(&mut c, m, n),
    )
    .unwrap();
    c
}

/// All-extreme 8-bit inputs: the largest products, exact.
#[test]
fn int8_extremes_exact() {
    let ctx = context();
    for k in [1usize, 64, 255] {
        let (m, n) = (17, 9);
        let c: Vec<i32> = constant_gemm(ctx, -128i8, (m, n, k));
        assert!(c.iter().all(|&v| v == 16384 * k as i32), "i8 k={k}: {:?}", &c[..4]);
        let c: Vec<u32> = constant_gemm(ctx, 255u8, (m, n, k));
        assert!(c.iter().all(|&v| v == 65025 * k as u32), "u8 k={k}: {:?}", &c[..4]);
    }
    assert_no_validation_messages(ctx);
}

/// The double-buffered variant (two shared stages, one barrier per K step) on odd shapes.
#[test]
fn double_buffered_scheme_is_correct_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "a double-buffered scheme");
    let mut rng = seeded();
    for (pair, shapes) in [(0, [(65, 33, 77), (7, 129, 300)]), (1, [(40, 72, 130), (129, 17, 64)])] {
        for shape in shapes {
            for layouts in LAYOUT_PAIRS {
                let check = if pair == 0 {
                    let config = ctx.choose_config(ComponentType::F16, ComponentType::F32, None).unwrap();
                    let scheme = ctx.schemes(&config)[0]
                        .with_stages(2, &config, &ctx.device_info().limits)
                        .unwrap();
                    let opts = GemmOptions {
                        scheme: Some(scheme),
                        beta: 0.5,
                        ..Default::default()
                    };
                    run_case::<f16, f16, f32>(ctx, &mut rng, shape, layouts, 1, &opts)
                } else {
                    let config = ctx.choose_config(ComponentType::I8, ComponentType::I32, None).unwrap();
                    let scheme = ctx.schemes(&config)[0]
                        .with_stages(2, &config, &ctx.device_info().limits)
                        .unwrap();
                    let opts = GemmOptions {
                        scheme: Some(scheme),
                        ..Default::default()
                    };
                    run_case::<i8, i8, i32>(ctx, &mut rng, shape, layouts, 0, &opts)
                };
                assert!(check.passed, "{shape:?} {layouts:?}: {check:?}");
            }
        }
    }
    assert_no_validation_messages(ctx);
}

/// The peak kernel runs on every config and reports a positive rate.
#[test]
fn peak_runs_on_every_config() {
    let ctx = context();
    for config in ctx.configs() {
        let r = ctx.peak(&config, 2, 16, 1).unwrap_or_else(|e| panic!("{config}: {e}"));
        assert!(r.flops.is_finite() && r.flops > 0.0, "{config}: {r:?}");
    }
    assert_no_validation_messages(ctx);
}

/// The memory-write ceiling `peak` prints: whole words, a finite positive rate.
#[test]
fn fill_bandwidth_runs() {
    let ctx = context();
    let r = ctx.fill_bandwidth(1 << 20 | 2, 3).unwrap();
    assert_eq!((r.bytes, r.reps), ((1 << 20) + 4, 3));
    assert!(r.bytes_per_s.is_finite() && r.bytes_per_s > 0.0, "{r:?}");
    assert_no_validation_messages(ctx);
}

/// The grouped workgroup raster (groups of 3 tile rows, a partial last group) covers every tile.
#[test]
fn grouped_raster_is_correct_on_matrix_units() {
    let ctx = context();
    common::require_matrix_units(ctx, "a grouped raster of their schemes");
    let mut rng = seeded();
    let config = ctx.choose_config(ComponentType::F16, ComponentType::F32, None).unwrap();
    let scheme = ctx.schemes(&config)[0].with_raster_group(3).unwrap();
    for shape in [(300, 170, 40), (33, 257, 16), (257, 31, 9)] {
        for layouts in LAYOUT_PAIRS {
            let opts = GemmOptions {
                scheme: Some(scheme),
                ..Default::default()
            };
            let check = run_case::<f16, f16, f32>(ctx, &mut rng, shape, layouts, 0, &opts);
            assert!(check.passed, "{shape:?} {layouts:?}: {check:?}");
        }
    }
    assert_no_validation_messages(ctx);
}

/// Split-K: K slices into scratch, then the reduction applying alpha and beta.
#[test]
fn split_k_is_correct() {
    let ctx = context();
    let mut rng = seeded();
    let shapes = [(16, 70, 300), (33, 9, 129), (5, 130, 1000), (64, 64, 40)];
    for (i, &shape) in shapes.iter().enumerate() {
        let layouts = LAYOUT_PAIRS[i];
        for split_k in [2, 3, 5] {
            let opts = GemmOptions {
                split_k: Some(split_k),
                alpha: 0.5,
                beta: -1.0,
                ..Default::default()
            };
            let plan = ctx
                .plan::<f16, f16, f32>(&Matmul::with_options(&opts), (shape.0, shape.1, shape.2), layouts)
                .unwrap();
            assert!(
                plan.is_split_k() && plan.gemm_dispatches().count() >= 2,
                "{shape:?}: split-K {split_k} should give several slices"
            );
            let check = run_case::<f16, f16, f32>(ctx, &mut rng, shape, layouts, 2, &opts);
            assert!(check.passed, "f16->f32 {shape:?} split {split_k}: {check:?}");
            let check = run_case::<f16, f16, f16>(ctx, &mut rng, shape, layouts, 0, &opts);
            assert!(check.passed, "f16->f16 {shape:?} split {split_k}: {check:?}");
            let iopts = GemmOptions {
                split_k: Some(split_k),
                alpha: 3.0,
                beta: 2.0,
                ..Default::default()
            };
            let check = run_case::<i8, i8, i32>(ctx, &mut rng, shape, layouts, 1, &iopts);
            assert!(check.passed, "i8->i32 {shape:?} split {split_k}: {check:?}");
            let uopts = GemmOptions {
                split_k: Some(split_k),
                ..Default::default()
            };
            let check = run_case::<u8, u8, u32>(ctx, &mut rng, shape, layouts, 0, &uopts);
            assert!(check.passed, "u8->u32 {shape:?} split {split_k}: {check:?}");
        }
    }
    assert_no_validation_messages(ctx);
}

/// Device-resident f16 operands of small integers for an `m x n x k` GEMM (fresh from a seeded
/// generator) and their exact product, row-major: the timing tests' C must equal it exactly.
fn exact_operands(ctx: &Context, (m, n, k): (usize, usize, usize)) -> (DeviceMatrix<f16>, DeviceMatrix<f16>, Vec<f64>) {
    let mut rng = seeded();
    let a: Vec<f16> = common::ints(&mut rng, m * k);
    let b: Vec<f16> = common::ints(&mut rng, k * n);
    let da = ctx.upload(MatRef::new(&a, m, k)).unwrap();
    let db = ctx.upload(MatRef::new(&b, k, n)).unwrap();
    let mut want = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                want[i * n + j] += a[i * k + p].to_f64() * b[p * n + j].to_f64();
            }
        }
    }
    (da, db, want)
}

/// Asserts that `c` (row-major) holds exactly `want`, element by element.
fn assert_exact(ctx: &Context, c: &DeviceMatrix<f32>, want: &[f64], what: &str) {
    let (m, n) = (c.rows(), c.cols());
    let mut got = vec![f32::NAN; m * n];
    ctx.download(c, MatMut::new(&mut got, m, n)).unwrap();
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert_eq!(f64::from(g), w, "{what}: element {i}");
    }
}

/// A GEMM timed step by step (`Context::time_gemm_steps`): one entry per dispatch of its plan, in
/// order and named, one time per run, and C left as the GEMM computes it.
#[test]
fn gemm_steps_are_timed_one_per_dispatch() {
    let ctx = context();
    let (m, n, k) = (33, 70, 300);
    let (da, db, want) = exact_operands(ctx, (m, n, k));
    let rows = (Layout::RowMajor, Layout::RowMajor);
    for split_k in [None, Some(3)] {
        let opts = GemmOptions {
            split_k,
            ..Default::default()
        };
        let plan = ctx
            .plan::<f16, f16, f32>(&Matmul::with_options(&opts), (m, n, k), rows)
            .unwrap();
        let mut dc = ctx.zeros::<f32>(m, n).unwrap();
        let gemm = ctx.prepare(&Matmul::with_options(&opts), &da, &db, &mut dc).unwrap();
        let Timings::Steps(steps) = gemm.time(Timing::Steps(4)).unwrap() else {
            panic!("step timing returned no steps");
        };
        assert_eq!(steps.len(), plan.dispatches.len(), "{split_k:?}");
        let scheme = plan.main_kernel().scheme.name();
        let gemms = steps.iter().filter(|s| s.kernel == scheme).count();
        assert_eq!(gemms, plan.gemm_dispatches().count(), "{split_k:?}: {steps:?}");
        if split_k.is_some() {
            assert!(gemms >= 2, "{steps:?}");
            assert_eq!(steps.last().unwrap().kernel, "split-K reduce");
        }
        for s in &steps {
            assert_eq!(s.seconds.len(), 4, "{s:?}");
            assert!(s.seconds.iter().all(|&t| (0.0..10.0).contains(&t)), "{s:?}");
        }
        assert!(steps.iter().map(|s| s.seconds[0]).sum::<f64>() > 0.0);
        assert_exact(ctx, &dc, &want, &format!("{split_k:?}"));
    }
    assert_no_validation_messages(ctx);
}

/// A GEMM timed as a stream (`Timing::Stream`): the span of `reps` back-to-back runs divided by
/// `reps`, so about one run's own time whatever `reps` is, and C left as the GEMM computes it.
#[test]
fn gemm_stream_time_is_per_gemm() {
    let ctx = context();
    let (m, n, k) = (65, 40, 129);
    let (da, db, want) = exact_operands(ctx, (m, n, k));
    for split_k in [None, Some(2)] {
        let opts = GemmOptions {
            split_k,
            ..Default::default()
        };
        let mut dc = ctx.zeros::<f32>(m, n).unwrap();
        // A CPU driver's times are noisy: tests run side by side on a 2-core CI machine, where
        // one run of 2 took 5x its own time and, once, 12 runs' figure came out 4.7x 2 runs'
        // (medians of 3). Load only ever adds time, so each figure is the least of several tries;
        // a span not divided by `reps` would make 12 runs' figure 6 times 2 runs'.
        let mut least = |timing: Timing| {
            (0..5)
                .map(|_| {
                    ctx.prepare(&Matmul::with_options(&opts), &da, &db, &mut dc)
                        .and_then(|p| p.time(timing))
                        .map(Timings::into_seconds)
                        .unwrap()
                        .into_iter()
                        .fold(f64::INFINITY, f64::min)
                })
                .fold(f64::INFINITY, f64::min)
        };
        let (own, two, twelve) = (
            least(Timing::Runs(2)),
            least(Timing::Stream(2)),
            least(Timing::Stream(12)),
        );
        assert!(
            [own, two, twelve].iter().all(|t| t.is_finite() && *t > 0.0)
                && twelve < 3.0 * two
                && two > 0.1 * own
                && twelve > 0.1 * own,
            "{split_k:?}: {two} s per GEMM over 2 runs, {twelve} over 12, {own} each alone"
        );
        assert_exact(ctx, &dc, &want, &format!("{split_k:?}"));
    }
    assert_no_validation_messages(ctx);
}

/// Integer products accumulate in 32 bits and wrap modulo 2^32 past its range, as in cuBLAS's
/// int8 GEMM (documented on `Context::gemm_with`): 255 * 255 * 66100 = 4_298_152_500 does not
/// fit u32, and (-128) * (-128) * 131_100 = 2_148_007_936 does not fit i32.
#[test]
fn integer_accumulation_wraps_modulo_2_pow_32() {
    let ctx = context();
    let (m, n) = (3, 5);
    let k = 66_100;
    let c: Vec<u32> = constant_gemm(ctx, 255u8, (m, n, k));
    let exact: u64 = 65025 * k as u64;
    assert!(exact > u64::from(u32::MAX));
    assert!(
        c.iter().all(|&v| v == (exact % (1 << 32)) as u32),
        "u8: {c:?}, want {exact} mod 2^32"
    );
    let k = 131_100;
    let c: Vec<i32> = constant_gemm(ctx, -128i8, (m, n, k));
    let exact: i64 = 16384 * k as i64;
    assert!(exact > i64::from(i32::MAX));
    assert!(c.iter().all(|&v| v == exact as i32), "i8: {c:?}, want {exact} wrapped");
    assert_no_validation_messages(ctx);
}

/// A column-major C (host, with a padded leading dimension, and device-resident) in every layout
/// of A and B, with beta and split-K: computed as C^T = B^T A^T over the same memory, exact.
#[test]
fn column_major_c_in_every_layout_exact() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let (m, n, k) = (37, 29, 300);
    let ints = |rng: &mut Rng, len: usize| -> Vec<i8> { (0..len).map(|_| rng.int(-5, 5) as i8).collect() };
    for (al, bl) in LAYOUT_PAIRS {
        let a = ints(&mut rng, m * k); // stored in `al`, dense
        let b = ints(&mut rng, k * n);
        let am = if al == Layout::RowMajor {
            vk_sgmat::MatRef::new(&a, m, k)
        } else {
            vk_sgmat::MatRef::col_major(&a, m, k)
        };
        let bm = if bl == Layout::RowMajor {
            vk_sgmat::MatRef::new(&b, k, n)
        } else {
            vk_sgmat::MatRef::col_major(&b, k, n)
        };
        let want = |i: usize, j: usize| -> i32 {
            (0..k)
                .map(|p| i32::from(a[am.index(i, p)]) * i32::from(b[bm.index(p, j)]))
                .sum()
        };
        for split_k in [None, Some(3)] {
            // Host C, column-major with ld = m + 3, beta = 2 on a known old C.
            let ldc = m + 3;
            let mut c = vec![1i32; ldc * n];
            let options = GemmOptions {
                beta: 2.0,
                split_k,
                ..Default::default()
            };
            ctx.run(
                &Matmul::with_options(&options),
                am,
                bm,
                vk_sgmat::MatMut::col_major(&mut c, m, n).with_ld(ldc),
            )
            .unwrap();
            for i in 0..m {
                for j in 0..n {
                    assert_eq!(
                        c[j * ldc + i],
                        want(i, j) + 2,
                        "host C[{i}][{j}] {al:?}{bl:?} split {split_k:?}"
                    );
                }
            }
            assert!(
                c.chunks(ldc).all(|col| col[m..].iter().all(|&x| x == 1)),
                "padding untouched"
            );
            // Device-resident: a column-major C uploaded from the host, on a stream.
            let old: Vec<i32> = (0..m * n).map(|i| (i % 7) as i32).collect();
            let mut dc = ctx.upload(vk_sgmat::MatRef::col_major(&old, m, n)).unwrap();
            let da = ctx.upload(am).unwrap();
            let db = ctx.upload(bm).unwrap();
            let mut s = ctx.stream().unwrap();
            s.run(
                &Matmul::with_options(&GemmOptions {
                    alpha: -1.0,
                    beta: 1.0,
                    split_k,
                    ..Default::default()
                }),
                &da,
                &db,
                &mut dc,
            )
            .unwrap();
            let d = s.download(&dc).unwrap();
            s.submit().unwrap();
            let got = d.wait().unwrap(); // column-major storage: n rows of m
            for i in 0..m {
                for j in 0..n {
                    assert_eq!(
                        got[j * m + i],
                        old[j * m + i] - want(i, j),
                        "device C[{i}][{j}] {al:?}{bl:?}"
                    );
                }
            }
        }
    }
    assert_no_validation_messages(ctx);
}
