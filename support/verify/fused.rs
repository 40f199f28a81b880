//! The reference of a fused epilogue (see [`vk_sgmat::Fused`]), in f64, and its element-wise check.
//!
//! Each element `d = act(v)`, `v = alpha * s * dot + beta * c + bias` with `s` the product of the
//! dequantisation scales, is checked against
//! `1.2 * (tol_acc + 8 u_f32) * m + (4e-6 + 2 u_out) * |d|`: `m = |alpha s| sum|a||b| + |beta c| +
//! |bias|` bounds `v`'s error as in [`super::tolerance`] (plus the f32 epilogue arithmetic), 1.2
//! is the activations' largest slope (GELU's is 1.13), 4e-6 covers the f32 evaluation of
//! `exp` and the erfc fit, `2 u_out` the final rounding (either rounding mode). Non-finite references must match exactly
//! (NaN for NaN).

use super::{tolerance, unit_roundoff, Check};
use vk_sgmat::config::ComponentType;
use vk_sgmat::{Activation, Axis, Element};

/// A fused epilogue's terms and vectors, in f64.
#[derive(Clone, Debug, Default)]
pub struct FusedRef {
    /// alpha.
    pub alpha: f64,
    /// beta (0: C is not read).
    pub beta: f64,
    /// The bias and its axis.
    pub bias: Option<(Axis, Vec<f64>)>,
    /// The activation.
    pub activation: Activation,
    /// Row and column dequantisation scales.
    pub scales: Option<(Vec<f64>, Vec<f64>)>,
}

impl FusedRef {
    /// Element (i, j)'s (value, magnitude) from the plain product's `dot` and `mag` (alpha 1,
    /// beta 0) and C's old value.
    pub fn apply(&self, (i, j): (usize, usize), (dot, mag): (f64, f64), c0: f64) -> (f64, f64) {
        let s = self.scales.as_ref().map_or(1.0, |(r, c)| r[i] * c[j]);
        let mut v = self.alpha * s * dot;
        let mut m = (self.alpha * s).abs() * mag;
        if self.beta != 0.0 {
            v += self.beta * c0;
            m += (self.beta * c0).abs();
        }
        if let Some((axis, b)) = &self.bias {
            let x = b[if *axis == Axis::Row { i } else { j }];
            v += x;
            m += x.abs();
        }
        (self.activation.reference(v), m)
    }
}

/// Checks the listed rows of `c` (row-major, `ldc`) against fused reference values and
/// magnitudes (from [`FusedRef::apply`]), with an accumulator of type `acc` over `k`, for
/// operands rounded on their way to the matrix units to a type of unit roundoff `input_u` (0
/// when they are not; see [`super::input_roundoff`]): each product's error is then at most
/// `(2 input_u + input_u^2) |a||b|`, so the bound on `m` grows by that much.
pub fn compare_fused<TC: Element>(
    c: &[TC],
    (ldc, n): (usize, usize),
    rows: &[usize],
    (expected, magnitude): (&[f64], &[f64]),
    (acc, k): (ComponentType, usize),
    input_u: f64,
) -> Check {
    let inputs = 2.0 * input_u + input_u * input_u;
    let scale = 1.2 * (tolerance(acc, k) + 8.0 * unit_roundoff(ComponentType::F32) + inputs);
    let rel = 4e-6 + 2.0 * unit_roundoff(TC::TYPE);
    let (mut worst, mut mismatches, mut first_bad) = (0.0f64, 0, None);
    for (ri, &r) in rows.iter().enumerate() {
        for j in 0..n {
            let got = c[r * ldc + j].to_f64();
            let (want, m) = (expected[ri * n + j], magnitude[ri * n + j]);
            let bad = if !want.is_finite() {
                !(got == want || (got.is_nan() && want.is_nan()))
            } else if !got.is_finite() {
                true
            } else {
                let bound = scale * m + rel * want.abs() + f64::MIN_POSITIVE;
                let err = (got - want).abs();
                worst = worst.max(err / bound);
                err > bound
            };
            if bad {
                mismatches += 1;
                first_bad.get_or_insert((r, j, got, want));
            }
        }
    }
    Check {
        rel_error: worst,
        tolerance: 1.0,
        mismatches,
        compared: rows.len() * n,
        first_bad,
        passed: mismatches == 0,
    }
}
