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

/// `erf` in f64 (a Taylor series below 3, Laplace's continued fraction for erfc above): close to
/// f64 precision, far beyond the f32 kernels it checks.
pub fn erf(x: f64) -> f64 {
    let ax = x.abs();
    if ax.is_nan() {
        return x;
    }
    let r = if ax < 3.0 {
        let (mut term, mut sum) = (ax, ax);
        for n in 1..200 {
            term *= -ax * ax / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else {
        // erfc(x) = exp(-x^2) / sqrt(pi) / (x + 1/2 / (x + 1 / (x + 3/2 / (x + ...)))).
        let mut f = ax;
        for n in (1..80).rev() {
            f = ax + (n as f64 / 2.0) / f;
        }
        1.0 - (-ax * ax).exp() / std::f64::consts::PI.sqrt() / f
    };
    r.copysign(x)
}

/// The activation in f64, written as the kernels write it so that infinities and NaN take the
/// same IEEE path (`x * sigmoid(z)` as `x * (1 / (1 + exp(-z)))`).
pub fn activate(a: Activation, x: f64) -> f64 {
    let times_sigmoid = |x: f64, z: f64| x * (1.0 / (1.0 + (-z).exp()));
    match a {
        Activation::None => x,
        Activation::Relu => {
            if x < 0.0 {
                0.0
            } else {
                x
            }
        }
        Activation::Gelu => {
            let k0 = 2.0 * (2.0 / std::f64::consts::PI).sqrt();
            times_sigmoid(x, x * (k0 + k0 * 0.044715 * x * x))
        }
        Activation::GeluErf => {
            // Phi(-|x|) first, as the kernel: +inf gives inf * 1, -inf gives -inf * 0 = NaN.
            let low = 0.5 * (1.0 - erf(x.abs() / std::f64::consts::SQRT_2));
            x * if x < 0.0 { low } else { 1.0 - low }
        }
        Activation::Silu => times_sigmoid(x, x),
    }
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
        (activate(self.activation, v), m)
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
