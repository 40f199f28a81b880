//! Grouped GEMM (mixture of experts) in one dispatch: ragged groups, empty ones and groups of
//! one row, groups that end inside a tile and span several, every layout of the weights, each
//! element type the device multiplies, and the per-group fallback where one dispatch cannot be.
//! Small-integer inputs make every result exact, so C is compared element by element with an
//! f64 reference, after being poisoned.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use crate::verify::Rng;
use common::{assert_no_validation_messages, context, ints};
use half::f16;
use vk_sgmat::plan::{GemmPlan, Kernel};
use vk_sgmat::Matmul;
use vk_sgmat::{BatchRef, ComputeMode, Context, Element, GemmOptions, Layout, MatMut, MatRef};

/// Whether the plans are one dispatch of a grouped kernel.
fn one_grouped_dispatch(plans: &[GemmPlan]) -> bool {
    plans.len() == 1
        && plans[0].dispatches.len() == 1
        && matches!(plans[0].dispatches[0].kernel, Kernel::Gemm(key) if key.grouped)
}

/// Runs `rows` groups of `K x N` weights stored `b_layout` on the host path and on device
/// matrices, C poisoned first, and compares every element with the f64 reference; returns
/// whether the device path planned one grouped dispatch.
fn run<TA: Element, TC: Element>(
    ctx: &Context,
    rng: &mut Rng,
    rows: &[usize],
    (n, k): (usize, usize),
    b_layout: Layout,
    options: &GemmOptions,
) -> bool {
    let (total, g) = (rows.iter().sum::<usize>(), rows.len());
    let a: Vec<TA> = ints(rng, total * k);
    let w: Vec<TA> = ints(rng, g * k * n);
    let c_in: Vec<TC> = ints(rng, total * n);
    let weights = BatchRef::strided(
        MatRef::stored(&w, k, n, b_layout, b_layout.outer_inner(k, n).1),
        g,
        k * n,
    );
    let (alpha, beta) = (options.alpha, options.beta);
    let weight = |gi: usize, p: usize, j: usize| match b_layout {
        Layout::RowMajor => w[gi * k * n + p * n + j].to_f64(),
        Layout::ColMajor => w[gi * k * n + j * k + p].to_f64(),
    };
    let check = |c: &[TC], what: &str| {
        let mut first = 0;
        for (gi, &m) in rows.iter().enumerate() {
            for r in first..first + m {
                for j in 0..n {
                    let dot: f64 = (0..k).map(|p| a[r * k + p].to_f64() * weight(gi, p, j)).sum();
                    let old = if beta == 0.0 {
                        0.0
                    } else {
                        beta * c_in[r * n + j].to_f64()
                    };
                    let want = alpha * dot + old;
                    assert_eq!(
                        c[r * n + j].to_f64(),
                        want,
                        "{what}: group {gi} of {rows:?}, row {r}, column {j}"
                    );
                }
            }
            first += m;
        }
    };
    let what = format!("{} -> {}, B {b_layout:?}, {:?}", TA::TYPE, TC::TYPE, options.compute);
    let mut c = c_in.clone();
    ctx.run(
        &Matmul::with_options(options).grouped(rows),
        MatRef::new(&a, total, k),
        weights,
        MatMut::new(&mut c, total, n),
    )
    .unwrap();
    check(&c, &format!("host, {what}"));
    let da = ctx.upload(MatRef::new(&a, total, k)).unwrap();
    let dw = ctx.upload_batch(weights).unwrap();
    let mut dc = ctx.upload(MatRef::new(&c_in, total, n)).unwrap();
    let plans = ctx
        .prepare(&Matmul::with_options(options).grouped(rows), &da, &dw, &mut dc)
        .map(|p| p.plans().cloned().collect::<Vec<_>>())
        .unwrap();
    ctx.run(&Matmul::with_options(options).grouped(rows), &da, &dw, &mut dc)
        .unwrap();
    let mut got = vec![TC::from_f64(0.0); total * n];
    ctx.download(&dc, MatMut::new(&mut got, total, n)).unwrap();
    check(&got, &format!("device, {what}"));
    one_grouped_dispatch(&plans)
}

/// One dispatch for every group, whatever the groups' sizes against the tile: groups that end
/// inside a tile, span several tiles, hold one row or none.
#[test]
fn groups_run_as_one_dispatch_in_every_layout() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let options = GemmOptions {
        alpha: 2.0,
        beta: -1.0,
        ..Default::default()
    };
    for rows in [&[70usize, 0, 9, 1, 130, 3][..], &[1], &[0, 0, 5], &[64, 64]] {
        for lb in [Layout::RowMajor, Layout::ColMajor] {
            assert!(
                run::<f16, f32>(ctx, &mut rng, rows, (45, 37), lb, &options),
                "{rows:?} {lb:?}: one grouped dispatch"
            );
        }
    }
    assert!(run::<f16, f32>(
        ctx,
        &mut rng,
        &[3, 40],
        (1, 1),
        Layout::RowMajor,
        &GemmOptions::default()
    ));
    assert_no_validation_messages(ctx);
}

/// Every element type runs grouped; the accurate f32 split, whose kernels read scale words
/// where a grouped kernel reads its table, runs group by group instead, with the same results.
#[test]
fn every_type_runs_grouped_and_the_accurate_split_falls_back() {
    let ctx = context();
    let mut rng = Rng::new(Rng::fresh_seed());
    let rows = [33usize, 0, 2, 17];
    let plain = GemmOptions::default();
    let with_beta = GemmOptions {
        beta: 3.0,
        ..Default::default()
    };
    assert!(run::<f16, f16>(
        ctx,
        &mut rng,
        &rows,
        (24, 40),
        Layout::ColMajor,
        &with_beta
    ));
    assert!(run::<i8, i32>(
        ctx,
        &mut rng,
        &rows,
        (24, 40),
        Layout::RowMajor,
        &with_beta
    ));
    assert!(run::<u8, u32>(ctx, &mut rng, &rows, (17, 40), Layout::ColMajor, &plain));
    // The accurate split runs group by group; without an f16 -> f32 config it is the exact
    // kernel, which runs grouped.
    let split = ctx
        .choose_config(vk_sgmat::ComponentType::F16, vk_sgmat::ComponentType::F32, None)
        .is_ok();
    for (compute, grouped) in [
        (ComputeMode::FastF16, true),
        (ComputeMode::Exact, true),
        (ComputeMode::Accurate, !split),
    ] {
        let options = GemmOptions {
            compute,
            beta: 0.5,
            ..Default::default()
        };
        assert_eq!(
            run::<f32, f32>(ctx, &mut rng, &rows, (19, 23), Layout::RowMajor, &options),
            grouped,
            "f32 {compute:?}"
        );
    }
    assert_no_validation_messages(ctx);
}
