//! Input checks shared by every plan: shapes that fit, sizes the kernels can index, and alpha
//! and beta as the bits the kernel reads.

use crate::config::ComponentType;
use crate::error::{Error, Result};

/// Largest M, N or K accepted: kernels index with 32-bit integers.
pub const MAX_DIM: usize = (1 << 31) - 1;

/// Checks that `A (ar x ac) * B (br x bc)` fits `C (cr x cc)` and that no size is zero or too
/// large; returns (m, n, k).
pub fn check_shapes(
    (ar, ac): (usize, usize),
    (br, bc): (usize, usize),
    (cr, cc): (usize, usize),
) -> Result<(usize, usize, usize)> {
    let (m, k, n) = (ar, ac, bc);
    if br != k {
        return Err(Error::ShapeMismatch(format!(
            "A is {ar}x{ac} but B is {br}x{bc}: A's columns must equal B's rows"
        )));
    }
    if (cr, cc) != (m, n) {
        return Err(Error::ShapeMismatch(format!("A*B is {m}x{n} but C is {cr}x{cc}")));
    }
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::ZeroSize { m, n, k });
    }
    if m.max(n).max(k) > MAX_DIM {
        return Err(Error::TooLarge(format!(
            "M={m}, N={n}, K={k}: each must be at most {MAX_DIM}"
        )));
    }
    Ok((m, n, k))
}

/// The 32 bits the kernel reads for alpha or beta in result type `t`.
pub fn scalar_bits(name: &'static str, v: f64, t: ComponentType) -> Result<u32> {
    let bad = |reason| Err(Error::InvalidScalar { name, value: v, reason });
    if !v.is_finite() {
        return bad("must be finite");
    }
    match t {
        ComponentType::F32 => Ok((v as f32).to_bits()),
        ComponentType::F16 if v.abs() > 65504.0 => bad("exceeds the f16 range"),
        // f16 results take f32 bits; the kernel converts.
        ComponentType::F16 => Ok((v as f32).to_bits()),
        ComponentType::I32 if v.fract() == 0.0 && v >= f64::from(i32::MIN) && v <= f64::from(i32::MAX) => {
            Ok((v as i32) as u32)
        }
        ComponentType::U32 if v.fract() == 0.0 && v >= 0.0 && v <= f64::from(u32::MAX) => Ok(v as u32),
        ComponentType::I32 | ComponentType::U32 => {
            bad("integer results need an integer scalar that fits the result type")
        }
        _ => Err(Error::Unsupported(format!(
            "result type {t}: the kernels write 16- and 32-bit results"
        ))),
    }
}
