//! The fused epilogue: which terms a kernel applies ([`Epilogue`], [`Axis`], [`Activation`]) and
//! their per-element code, shared by the kernels that store element by element:
//! `D = act(alpha * deq(acc) + beta * C + bias)` in f32, stored in C's type.
//!
//! Vectors: the bias at binding 4 as 32-bit words (f32, or two f16/bf16 per word), the row and
//! column scales of dequantisation at 5 and 6 as f32. A pass's vectors start at its first row
//! and column (push constants `row0`, `col0`), so every pass of a problem reads the same vectors.
//! bf16 results are rounded to nearest even here and stored through an f16-typed array as bits
//! (no arithmetic touches them there), so no bf16 type is needed.

use super::builder::{BuildResult, ModuleBuilder};
use super::push::Pc;
use super::BIAS_BINDING;
use crate::config::ComponentType;
use crate::error::{Error, Result};
use rspirv::dr::Operand;
use rspirv::spirv::{StorageClass, Word};
use serde::Serialize;

/// Which epilogue terms a kernel applies:
/// `D = act(alpha * deq(A*B) + beta * C + bias)`, stored in C's type. Terms that are off cost
/// nothing; with `beta` off, C is never read (so it may hold anything, NaN included). The terms
/// past alpha and beta (the fused ones, see [`Epilogue::is_fused`]) run per element in f32.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Epilogue {
    /// Multiply the product by alpha (off means alpha = 1).
    pub alpha: bool,
    /// Add beta * C (off means beta = 0).
    pub beta: bool,
    /// Add a bias vector along this axis, of this element type (binding 4: f32, f16 or bf16).
    pub bias: Option<(Axis, ComponentType)>,
    /// The activation applied last.
    pub activation: Activation,
    /// Dequantise an integer product: `acc * row_scale[i] * col_scale[j]` (f32 scales at
    /// bindings 5 and 6), before alpha.
    pub dequant: bool,
    /// The type C is stored in, where it differs from the config's result type (output cast).
    pub output: Option<ComponentType>,
}

/// Which index a bias vector follows: `bias[i]` per row of C, or `bias[j]` per column.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// One value per row of C (length M).
    Row,
    /// One value per column of C (length N).
    Col,
}

impl Axis {
    /// The other axis: a row bias of C is a column bias of C^T.
    pub fn flip(self) -> Self {
        match self {
            Axis::Row => Axis::Col,
            Axis::Col => Axis::Row,
        }
    }
}

/// An element-wise activation, applied in f32 after bias. IEEE behaviour: NaN stays NaN;
/// `+inf` maps to `+inf` (ReLU, GELU, SiLU); `-inf` maps to 0 under ReLU and to NaN under GELU
/// and SiLU (as `x * sigmoid(x)` and `x * Phi(x)` evaluate in IEEE arithmetic, and as PyTorch
/// computes them); large finite negative inputs give -0.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    /// None.
    #[default]
    None,
    /// `max(x, 0)`; NaN stays NaN.
    Relu,
    /// GELU, tanh approximation: `x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))`.
    Gelu,
    /// GELU, exact: `x * Phi(x)`, with Phi from an erfc approximation of relative error below
    /// 1.2e-7.
    GeluErf,
    /// SiLU (swish): `x * sigmoid(x)`.
    Silu,
}

impl Activation {
    /// Every activation.
    pub const ALL: [Activation; 5] = [
        Activation::None,
        Activation::Relu,
        Activation::Gelu,
        Activation::GeluErf,
        Activation::Silu,
    ];

    /// The CLI name (`none`, `relu`, `gelu`, `gelu-erf`, `silu`).
    pub fn name(self) -> &'static str {
        match self {
            Activation::None => "none",
            Activation::Relu => "relu",
            Activation::Gelu => "gelu",
            Activation::GeluErf => "gelu-erf",
            Activation::Silu => "silu",
        }
    }

    /// The activation in f64, written as the kernels write it so that infinities and NaN take
    /// the same IEEE path (`x * sigmoid(z)` as `x * (1 / (1 + exp(-z)))`): the reference the
    /// tests and the driver self-test check the f32 kernels against.
    pub fn reference(self, x: f64) -> f64 {
        let times_sigmoid = |x: f64, z: f64| x * (1.0 / (1.0 + (-z).exp()));
        match self {
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
}

impl Epilogue {
    /// No terms: `C = A*B`.
    pub const NONE: Epilogue = Epilogue {
        alpha: false,
        beta: false,
        bias: None,
        activation: Activation::None,
        dequant: false,
        output: None,
    };

    /// Whether any per-element term is on (bias, activation, dequantisation, output cast): the
    /// subgroup-scope kernel then stores every fragment through its staging tile, the
    /// workgroup-scope one applies them with a per-element operation.
    pub fn is_fused(&self) -> bool {
        self.bias.is_some() || self.activation != Activation::None || self.dequant || self.output.is_some()
    }

    /// The kernel-name suffix of the fused terms (`_biascf16_gelu_deq_of16`), empty without them.
    pub fn fused_suffix(&self) -> String {
        let mut out = String::new();
        if let Some((axis, t)) = self.bias {
            out += &format!("_bias{}{t}", if axis == Axis::Row { "r" } else { "c" });
        }
        if self.activation != Activation::None {
            out += &format!("_{}", self.activation.name().replace('-', ""));
        }
        if self.dequant {
            out += "_deq";
        }
        if let Some(t) = self.output {
            out += &format!("_o{t}");
        }
        out
    }

    /// The type C is stored in, for a config whose result type is `result`.
    pub fn output_type(&self, result: ComponentType) -> ComponentType {
        self.output.unwrap_or(result)
    }

    /// The same epilogue for `C^T = B^T A^T`: row and column vectors trade places.
    pub fn transposed(mut self) -> Self {
        if let Some((axis, t)) = self.bias {
            self.bias = Some((axis.flip(), t));
        }
        self
    }

    /// Checks that the generator can apply these terms to a `result` accumulator: an output
    /// cast from f32 to f16 or bf16, or from i32/u32 (dequantised) to f32, f16 or bf16;
    /// dequantisation of integer results only; bias and activations on float results or
    /// dequantised ones; bias vectors of f32, f16 or bf16.
    pub fn check(&self, result: ComponentType) -> Result<()> {
        use ComponentType::*;
        if !self.is_fused() {
            return Ok(()); // alpha and beta alone: every result type
        }
        let bad = |why: String| Err(Error::Unsupported(format!("fused epilogue: {why}")));
        let int = matches!(result, I32 | U32);
        if let Some((_, t)) = self.bias {
            if !matches!(t, F32 | F16 | Bf16) {
                return bad(format!("a bias of {t}: bias vectors are f32, f16 or bf16"));
            }
        }
        if self.dequant && !int {
            return bad(format!(
                "dequantisation scales integer products (i32 or u32 accumulators), not {result}"
            ));
        }
        if int && !self.dequant && self.is_fused() {
            return bad(format!(
                "{result} products take bias, activations and output casts only when dequantised (row and column scales)"
            ));
        }
        match (result, self.output) {
            (_, None) if !int => Ok(()),
            (F32, Some(F16 | Bf16 | F32)) => Ok(()),
            (I32 | U32, Some(F32 | F16 | Bf16)) => Ok(()),
            (r, o) => bad(format!(
                "{r} accumulators stored as {}: output casts go from f32 to f16 or bf16, and from dequantised i32/u32 to f32, f16 or bf16",
                o.map_or("themselves".to_string(), |o| o.to_string())
            )),
        }
    }

    /// Checks that the workgroup-scope kernel can apply these terms to a `result` accumulator:
    /// float products (f32) stored as f32 or f16, with bias, activations, alpha and beta.
    /// Dequantised integer products and bf16 results run on subgroup-scope schemes.
    pub fn check_workgroup_scope(&self, result: ComponentType) -> Result<()> {
        if !self.is_fused() {
            return Ok(());
        }
        let output = self.output_type(result);
        if result != ComponentType::F32 || self.dequant || !matches!(output, ComponentType::F32 | ComponentType::F16) {
            return Err(Error::InvalidTileScheme(format!(
                "fused epilogues on workgroup-scope schemes take f32 products stored as f32 or f16, not {result} products{} stored as {output}; pick a subgroup-scope scheme",
                if self.dequant { " dequantised" } else { "" }
            )));
        }
        Ok(())
    }
}

/// `erf` in f64 (a Taylor series below 3, Laplace's continued fraction for erfc above): close to
/// f64 precision, far beyond the f32 kernels it checks.
fn erf(x: f64) -> f64 {
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

/// GLSL.std.450 instruction numbers.
const GLSL_EXP: u32 = 27;
const GLSL_FABS: u32 = 4;

/// The epilogue's module-level declarations and, once [`Fused::prepare`] ran, its scalars.
pub(super) struct Fused {
    ep: Epilogue,
    result: ComponentType,
    output: ComponentType,
    v_bias: Option<Word>,
    v_scales: Option<[Word; 2]>,
    glsl: Word,
    /// (alpha, beta as f32, row0, col0), loaded in the entry block.
    scalars: Option<(Option<Word>, Option<Word>, Word, Word)>,
    /// A grouped kernel's first element of its group's column vectors (`group * N`).
    col_base: Option<Word>,
}

impl Epilogue {
    /// Whether the terms read a vector along C's columns (a column bias or column scales):
    /// a grouped kernel then reads its group's N values of it.
    pub fn reads_columns(&self) -> bool {
        self.dequant || matches!(self.bias, Some((Axis::Col, _)))
    }
}

/// The SPIR-V scalar type C is stored in and its size: f32, or f16 for f16 and bf16 (bits).
pub(super) fn store_type(b: &mut ModuleBuilder, output: ComponentType) -> (Word, u32) {
    match output.size_bytes() {
        2 => (b.t_scalar(ComponentType::F16), 2),
        _ => (b.t_scalar(output), 4),
    }
}

impl Fused {
    /// Declares the vector bindings `ep` reads (before the function begins).
    pub fn declare(b: &mut ModuleBuilder, ep: Epilogue, result: ComponentType) -> Self {
        let t_u32 = b.t_u32();
        let t_f32 = b.t_f32();
        let v_bias = ep.bias.map(|_| b.storage_buffer(t_u32, 4, BIAS_BINDING, true));
        let v_scales = ep.dequant.then(|| {
            [
                b.storage_buffer(t_f32, 4, BIAS_BINDING + 1, true),
                b.storage_buffer(t_f32, 4, BIAS_BINDING + 2, true),
            ]
        });
        let glsl = b.glsl();
        Self {
            ep,
            result,
            output: ep.output_type(result),
            v_bias,
            v_scales,
            glsl,
            scalars: None,
            col_base: None,
        }
    }

    /// Loads alpha, beta (f32 bits: the planner writes f32 for fused epilogues) and the pass's
    /// first row and column from the push constants. In a grouped kernel (`group` given) the
    /// column vectors are the group's: each group (weight) has N values of its own, group `g`'s
    /// from element `g * N`, while row vectors run over all groups' rows.
    pub fn prepare(&mut self, b: &mut ModuleBuilder, v_pc: Word, group: Option<Word>) -> BuildResult<()> {
        let t_f32 = b.t_f32();
        let f32_of = |b: &mut ModuleBuilder, on: bool, which: Pc| -> BuildResult<Option<Word>> {
            if !on {
                return Ok(None);
            }
            let bits = b.push_constant(v_pc, which as u32)?;
            Ok(Some(b.b.bitcast(t_f32, None, bits)?))
        };
        let alpha = f32_of(b, self.ep.alpha, Pc::Alpha)?;
        let beta = f32_of(b, self.ep.beta, Pc::Beta)?;
        let row0 = b.push_constant(v_pc, Pc::Row0 as u32)?;
        let col0 = b.push_constant(v_pc, Pc::Col0 as u32)?;
        self.scalars = Some((alpha, beta, row0, col0));
        if let (Some(g), true) = (group, self.ep.reads_columns()) {
            let n = b.push_constant(v_pc, Pc::N as u32)?;
            let t_u32 = b.t_u32();
            self.col_base = Some(b.b.i_mul(t_u32, None, g, n)?);
        }
        Ok(())
    }

    /// Whether the epilogue reads C (beta).
    pub fn reads_c(&self) -> bool {
        self.ep.beta
    }

    fn f32c(b: &mut ModuleBuilder, v: f32) -> Word {
        let t = b.t_f32();
        b.c_bits(t, v.to_bits())
    }

    fn glsl(&self, b: &mut ModuleBuilder, op: u32, x: Word) -> BuildResult<Word> {
        let t = b.t_f32();
        b.b.ext_inst(t, None, self.glsl, op, [Operand::IdRef(x)])
    }

    /// `x * sigmoid(z)` as `x * (1 / (1 + exp(-z)))`: a large negative `z` gives `x * 0`.
    fn times_sigmoid(&self, b: &mut ModuleBuilder, x: Word, z: Word) -> BuildResult<Word> {
        let t = b.t_f32();
        let one = Self::f32c(b, 1.0);
        let nz = b.b.f_negate(t, None, z)?;
        let e = self.glsl(b, GLSL_EXP, nz)?;
        let d = b.b.f_add(t, None, one, e)?;
        let r = b.b.f_div(t, None, one, d)?;
        b.b.f_mul(t, None, x, r)
    }

    /// `x * Phi(x)`: `Phi(-|x|) = erfc(|x| / sqrt 2) / 2`, erfc from the Chebyshev fit of
    /// Numerical Recipes' `erfcc` (fractional error below 1.2e-7).
    fn gelu_erf(&self, b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
        const C: [f32; 10] = [
            -1.265_512_2,
            1.000_023_7,
            0.374_091_96,
            0.096_784_18,
            -0.186_288_06,
            0.278_868_07,
            -1.135_204,
            1.488_515_9,
            -0.822_152_23,
            0.170_872_77,
        ];
        let (t_f32, t_bool) = (b.t_f32(), b.t_bool());
        let ax = self.glsl(b, GLSL_FABS, x)?;
        let inv_sqrt2 = Self::f32c(b, std::f32::consts::FRAC_1_SQRT_2);
        let z = b.b.f_mul(t_f32, None, ax, inv_sqrt2)?;
        let (one, half) = (Self::f32c(b, 1.0), Self::f32c(b, 0.5));
        let hz = b.b.f_mul(t_f32, None, z, half)?;
        let d = b.b.f_add(t_f32, None, one, hz)?;
        let t = b.b.f_div(t_f32, None, one, d)?;
        // Horner from the highest coefficient down to C[1]; then -z^2 + C[0] + t * (...).
        let mut p = Self::f32c(b, C[9]);
        for &c in C[1..9].iter().rev() {
            let pt = b.b.f_mul(t_f32, None, p, t)?;
            let cc = Self::f32c(b, c);
            p = b.b.f_add(t_f32, None, pt, cc)?;
        }
        let pt = b.b.f_mul(t_f32, None, p, t)?;
        let c0 = Self::f32c(b, C[0]);
        let zz = b.b.f_mul(t_f32, None, z, z)?;
        let e = b.b.f_sub(t_f32, None, c0, zz)?;
        let e = b.b.f_add(t_f32, None, e, pt)?;
        let ex = self.glsl(b, GLSL_EXP, e)?;
        let erfc = b.b.f_mul(t_f32, None, t, ex)?;
        let low = b.b.f_mul(t_f32, None, erfc, half)?; // Phi(-|x|)
        let high = b.b.f_sub(t_f32, None, one, low)?;
        let zero = Self::f32c(b, 0.0);
        let neg = b.b.f_ord_less_than(t_bool, None, x, zero)?;
        let phi = b.b.select(t_f32, None, neg, low, high)?;
        b.b.f_mul(t_f32, None, x, phi)
    }

    fn activate(&self, b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
        let (t_f32, t_bool) = (b.t_f32(), b.t_bool());
        match self.ep.activation {
            Activation::None => Ok(x),
            Activation::Relu => {
                // select rather than max: NaN < 0 is false, so NaN stays NaN.
                let zero = Self::f32c(b, 0.0);
                let neg = b.b.f_ord_less_than(t_bool, None, x, zero)?;
                b.b.select(t_f32, None, neg, zero, x)
            }
            Activation::Gelu => {
                // 0.5 (1 + tanh u) = sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
                let k0 = 2.0 * (2.0 / std::f32::consts::PI).sqrt();
                let (c0, c1) = (Self::f32c(b, k0), Self::f32c(b, k0 * 0.044_715));
                let xx = b.b.f_mul(t_f32, None, x, x)?;
                let s = b.b.f_mul(t_f32, None, xx, c1)?;
                let s = b.b.f_add(t_f32, None, s, c0)?;
                let z = b.b.f_mul(t_f32, None, x, s)?;
                self.times_sigmoid(b, x, z)
            }
            Activation::GeluErf => self.gelu_erf(b, x),
            Activation::Silu => self.times_sigmoid(b, x, x),
        }
    }

    /// Element `index` of the bias vector as f32.
    fn bias(&self, b: &mut ModuleBuilder, v: Word, t: ComponentType, index: Word) -> BuildResult<Word> {
        let (t_u32, t_f32) = (b.t_u32(), b.t_f32());
        let p_u32 = b.ptr(StorageClass::StorageBuffer, t_u32);
        let c0 = b.c_u32(0);
        if t == ComponentType::F32 {
            let p = b.b.access_chain(p_u32, None, v, [c0, index])?;
            let w = b.b.load(t_u32, None, p, None, [])?;
            return b.b.bitcast(t_f32, None, w);
        }
        let word = b.div_u(index, 2)?;
        let p = b.b.access_chain(p_u32, None, v, [c0, word])?;
        let w = b.b.load(t_u32, None, p, None, [])?;
        let odd = b.mod_u(index, 2)?;
        let shift = b.mul_u(odd, 16)?;
        let h = b.b.shift_right_logical(t_u32, None, w, shift)?;
        let mask = b.c_u32(0xffff);
        let h = b.b.bitwise_and(t_u32, None, h, mask)?;
        if t == ComponentType::Bf16 {
            let c16 = b.c_u32(16);
            let bits = b.b.shift_left_logical(t_u32, None, h, c16)?;
            return b.b.bitcast(t_f32, None, bits);
        }
        const GLSL_UNPACK_HALF_2X16: u32 = 62;
        let t_vec2 = b.b.type_vector(t_f32, 2);
        let pair =
            b.b.ext_inst(t_vec2, None, self.glsl, GLSL_UNPACK_HALF_2X16, [Operand::IdRef(h)])?;
        b.b.composite_extract(t_f32, None, pair, [0])
    }

    /// f32 `x` as the value C stores (see [`store_type`]).
    fn narrow(&self, b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
        let (t_store, _) = store_type(b, self.output);
        match self.output {
            ComponentType::F16 => b.b.f_convert(t_store, None, x),
            ComponentType::Bf16 => {
                let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
                let bits = b.b.bitcast(t_u32, None, x)?;
                let c16 = b.c_u32(16);
                let top = b.b.shift_right_logical(t_u32, None, bits, c16)?;
                let c1 = b.c_u32(1);
                let odd = b.b.bitwise_and(t_u32, None, top, c1)?;
                let c7fff = b.c_u32(0x7fff);
                let bias = b.b.i_add(t_u32, None, odd, c7fff)?;
                let sum = b.b.i_add(t_u32, None, bits, bias)?;
                let rounded = b.b.shift_right_logical(t_u32, None, sum, c16)?;
                // NaN keeps a quiet NaN (its payload could round into infinity).
                let abs_mask = b.c_u32(0x7fff_ffff);
                let mag = b.b.bitwise_and(t_u32, None, bits, abs_mask)?;
                let inf = b.c_u32(0x7f80_0000);
                let nan = b.b.u_greater_than(t_bool, None, mag, inf)?;
                let qnan = b.c_u32(0x7fc0);
                let out = b.b.select(t_u32, None, nan, qnan, rounded)?;
                let t_hvec2 = b.b.type_vector(t_store, 2);
                let pair = b.b.bitcast(t_hvec2, None, out)?;
                b.b.composite_extract(t_store, None, pair, [0])
            }
            _ => Ok(x),
        }
    }

    /// C's stored value at `p` (for beta) as f32.
    fn widen(&self, b: &mut ModuleBuilder, p: Word) -> BuildResult<Word> {
        let (t_store, _) = store_type(b, self.output);
        let t_f32 = b.t_f32();
        let v = b.b.load(t_store, None, p, None, [])?;
        match self.output {
            ComponentType::F16 => b.b.f_convert(t_f32, None, v),
            ComponentType::Bf16 => {
                let t_u32 = b.t_u32();
                let t_hvec2 = b.b.type_vector(t_store, 2);
                let zero = b.b.constant_null(t_store);
                let pair = b.b.composite_construct(t_hvec2, None, [v, zero])?;
                let bits = b.b.bitcast(t_u32, None, pair)?;
                let c16 = b.c_u32(16);
                let bits = b.b.shift_left_logical(t_u32, None, bits, c16)?;
                b.b.bitcast(t_f32, None, bits)
            }
            _ => Ok(v),
        }
    }

    /// The stored value of an accumulator element `x` (of the result type) at pass-local `row`
    /// and `col`, C's element at `p_c` (read only with beta). Call only for elements inside C.
    pub fn element(&self, b: &mut ModuleBuilder, x: Word, at: (Word, Word), p_c: Word) -> BuildResult<Word> {
        let v = self.value(b, x, at, Some(p_c))?;
        self.narrow(b, v)
    }

    /// [`Fused::element`] before the rounding to C's type: the f32 result. `p_c` may be `None`
    /// only without beta.
    pub fn value(
        &self,
        b: &mut ModuleBuilder,
        x: Word,
        (row, col): (Word, Word),
        p_c: Option<Word>,
    ) -> BuildResult<Word> {
        let (alpha, beta, row0, col0) = self.scalars.expect("Fused::prepare ran in the entry block");
        let (t_u32, t_f32) = (b.t_u32(), b.t_f32());
        let grow = b.b.i_add(t_u32, None, row0, row)?;
        let gcol = b.b.i_add(t_u32, None, col0, col)?;
        let gcol = match self.col_base {
            Some(base) => b.b.i_add(t_u32, None, gcol, base)?,
            None => gcol,
        };
        let mut v = match self.result {
            ComponentType::F32 => x,
            ComponentType::I32 => b.b.convert_s_to_f(t_f32, None, x)?,
            ComponentType::U32 => b.b.convert_u_to_f(t_f32, None, x)?,
            _ => b.b.f_convert(t_f32, None, x)?,
        };
        if let Some([rs, cs]) = self.v_scales {
            let p_f32 = b.ptr(StorageClass::StorageBuffer, t_f32);
            let c0 = b.c_u32(0);
            for (buf, at) in [(rs, grow), (cs, gcol)] {
                let p = b.b.access_chain(p_f32, None, buf, [c0, at])?;
                let s = b.b.load(t_f32, None, p, None, [])?;
                v = b.b.f_mul(t_f32, None, v, s)?;
            }
        }
        if let Some(a) = alpha {
            v = b.b.f_mul(t_f32, None, v, a)?;
        }
        if let Some(bt) = beta {
            let old = self.widen(b, p_c.expect("beta reads C"))?;
            let t = b.b.f_mul(t_f32, None, old, bt)?;
            v = b.b.f_add(t_f32, None, v, t)?;
        }
        if let (Some((axis, t)), Some(buf)) = (self.ep.bias, self.v_bias) {
            let at = if axis == Axis::Row { grow } else { gcol };
            let bias = self.bias(b, buf, t, at)?;
            v = b.b.f_add(t_f32, None, v, bias)?;
        }
        self.activate(b, v)
    }
}
