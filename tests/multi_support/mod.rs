//! Contexts and checks shared by the several-device tests (`multi`, `multi_pinned`).
#![allow(dead_code)]

use crate::common::assert_no_validation_messages;
use crate::verify::{reference, Rng};
use std::sync::{Arc, OnceLock};
use vk_sgmat::{Context, ContextOptions, Element, Layout, MatRef, MultiContext, PinnedMatrix};

/// Four contexts on the device, validation on and outputs poisoned; shared by the tests
/// (lavapipe compiles pipelines slowly).
pub fn contexts() -> &'static [Arc<Context>] {
    static CTXS: OnceLock<Vec<Arc<Context>>> = OnceLock::new();
    CTXS.get_or_init(|| {
        (0..4)
            .map(|_| {
                let options = ContextOptions {
                    validation: true,
                    poison_outputs: true,
                    ..Default::default()
                };
                Arc::new(Context::with_options(options).unwrap_or_else(|e| {
                    panic!("these tests need a usable Vulkan device (run them through cargo: the runner provisions lavapipe): {e}")
                }))
            })
            .collect()
    })
}

pub fn multi(n: usize, weights: &[f64]) -> MultiContext {
    MultiContext::with_weights(contexts()[..n].to_vec(), weights.to_vec()).unwrap()
}

pub fn no_messages() {
    for c in contexts() {
        assert_no_validation_messages(c);
    }
}

/// Integers in -3..=3 stored `layout` (dense): exact in f16, and every sum below is exact in f32.
pub fn small_ints<T: Element>(rng: &mut Rng, rows: usize, cols: usize) -> Vec<T> {
    (0..rows * cols)
        .map(|_| T::from_f64((rng.next_u64() % 7) as f64 - 3.0))
        .collect()
}

pub fn view<T>(data: &[T], rows: usize, cols: usize, layout: Layout) -> MatRef<'_, T> {
    match layout {
        Layout::RowMajor => MatRef::new(data, rows, cols),
        Layout::ColMajor => MatRef::col_major(data, rows, cols),
    }
}

/// Checks row-major `got` (m x n) against alpha*A*B + beta*C_in exactly.
pub fn assert_exact<TA: Element, TB: Element>(
    (a, b): (MatRef<'_, TA>, MatRef<'_, TB>),
    c_in: Option<&[f32]>,
    (alpha, beta): (f64, f64),
    got: &[f32],
    what: &str,
) {
    let (m, n) = (a.rows, b.cols);
    let rows: Vec<usize> = (0..m).collect();
    let (want, _) = reference(&a, &b, c_in.map(|c| (c, n)), alpha, beta, &rows);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(f64::from(g), w, "{what}: C[{}][{}]", i / n, i % n);
    }
}

/// A pinned `rows x cols` matrix of `mc` stored `layout`, filled with small integers; and its
/// elements as a plain vector, for the reference.
pub fn pinned_ints<T: Element>(
    mc: &MultiContext,
    rng: &mut Rng,
    (rows, cols): (usize, usize),
    layout: Layout,
) -> (PinnedMatrix<T>, Vec<T>) {
    let mut p = mc.pinned_matrix::<T>(rows, cols, layout).unwrap();
    assert!(
        p.data().iter().all(|x| x.to_f64() == 0.0),
        "a pinned matrix starts zeroed"
    );
    let values = small_ints::<T>(rng, rows, cols);
    p.data_mut().copy_from_slice(&values);
    (p, values)
}
