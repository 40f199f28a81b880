//! [`Matmul`]: one description of the work, `C = act(alpha * A*B + beta * C + bias)`, with its
//! epilogue, its batch shape (one GEMM, or a strided batch given by the operands, or groups of
//! rows) and its tuning choices. Every verb ([`Context::run`](crate::Context::run),
//! [`Stream::run`](crate::Stream::run), [`MultiContext::run`](crate::MultiContext::run),
//! [`Context::prepare`](crate::Context::prepare)) takes one.

use super::fused::{Activation, Axis, EpilogueVector, Fused};
use super::operand::{placed, DeviceOperand, Placed};
use super::options::GemmOptions;
use crate::plan::Split;

/// How the rows of A and C divide among B's weights (a grouped, mixture-of-experts GEMM).
#[derive(Copy, Clone, Debug, Default)]
pub(crate) enum Groups<'a> {
    /// Not grouped: one GEMM, or a strided batch when an operand is a batch.
    #[default]
    None,
    /// Group `g` takes `rows[g]` rows, the groups' rows back to back.
    Rows(&'a [usize]),
    /// The sizes as u32 on the device, one per weight, in one row or column.
    Counted(Placed<'a>),
}

/// One matrix multiply, described: `C = act(alpha * deq(A*B) + beta * C + bias)`.
///
/// The operands say where the data lives and whether it is a batch (host [`MatRef`](crate::MatRef)s, device
/// [`DeviceMatrix`](crate::DeviceMatrix)es, strided [`BatchRef`](crate::BatchRef)es or
/// [`DeviceBatch`](crate::DeviceBatch)es, pinned or the caller's buffers); the description says
/// everything else, once:
///
/// ```no_run
/// # fn main() -> vk_sgmat::Result<()> {
/// use half::f16;
/// use vk_sgmat::{Activation, Axis, Context, MatMut, MatRef, Matmul};
/// let ctx = Context::new()?;
/// let (x, w, bias) = (vec![f16::ONE; 64 * 32], vec![f16::ONE; 32 * 48], vec![0.5f32; 48]);
/// let mut y = vec![f16::ZERO; 64 * 48];
/// let layer = Matmul::new().bias(Axis::Col, &bias).activation(Activation::Gelu);
/// ctx.run(&layer, MatRef::new(&x, 64, 32), MatRef::new(&w, 32, 48), MatMut::new(&mut y, 64, 48))?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Matmul<'a> {
    pub(crate) options: GemmOptions,
    pub(crate) fused: Option<Fused<'a>>,
    pub(crate) groups: Groups<'a>,
    pub(crate) split: Option<&'a Split>,
}

impl<'a> Matmul<'a> {
    /// `C = A*B`, every choice vk-sgmat's.
    pub fn new() -> Self {
        Self::default()
    }

    /// With these tuning choices and scalars (a copy of `options`).
    pub fn with_options(options: &GemmOptions) -> Self {
        Self {
            options: options.clone(),
            ..Self::default()
        }
    }

    /// The tuning choices and scalars.
    pub fn options(&self) -> &GemmOptions {
        &self.options
    }

    /// The fused epilogue, if any.
    pub fn epilogue(&self) -> Option<&Fused<'a>> {
        self.fused.as_ref()
    }

    /// Scale of the product (default 1; integer results take an integer that fits).
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.options.alpha = alpha;
        self
    }

    /// Scale of C's old value (default 0: C is not read).
    pub fn beta(mut self, beta: f64) -> Self {
        self.options.beta = beta;
        self
    }

    /// With these tuning choices; alpha and beta too are `options`'.
    pub fn tuning(mut self, options: GemmOptions) -> Self {
        self.options = options;
        self
    }

    /// With a fused epilogue ([`Fused`]; even one of no terms: a 16-bit float C then
    /// accumulates in f32 and rounds once at the store).
    pub fn fused(mut self, fused: &Fused<'a>) -> Self {
        self.fused = Some(*fused);
        self
    }

    /// With a bias along `axis` in the fused epilogue.
    pub fn bias(self, axis: Axis, values: impl Into<EpilogueVector<'a>>) -> Self {
        let f = self.fused.unwrap_or_default().bias(axis, values);
        self.fused(&f)
    }

    /// With an activation, applied last, in the fused epilogue.
    pub fn activation(self, activation: Activation) -> Self {
        let f = self.fused.unwrap_or_default().activation(activation);
        self.fused(&f)
    }

    /// With dequantisation scales (8-bit inputs, float C) in the fused epilogue.
    pub fn scales(self, rows: impl Into<EpilogueVector<'a>>, cols: impl Into<EpilogueVector<'a>>) -> Self {
        let f = self.fused.unwrap_or_default().scales(rows, cols);
        self.fused(&f)
    }

    /// Grouped (mixture of experts): group `g` multiplies the `rows[g]` rows of A after the
    /// groups before it by weight `g` of B (a batch) into the same rows of C. A and C are
    /// row-major with `sum(rows)` rows.
    pub fn grouped(mut self, rows: &'a [usize]) -> Self {
        self.groups = Groups::Rows(rows);
        self
    }

    /// Grouped with the sizes on the device: `counts` holds one u32 per weight of B, in one
    /// row or one column (a router that counts on the GPU hands them over without a trip to
    /// the host). Counts adding up to fewer rows than A's leave C's last rows as they were;
    /// [`Context::run`](crate::Context::run) waits and reads them back, and counts adding up to
    /// more rows are an error with C as it was; [`Stream::run`](crate::Stream::run) does not
    /// read them back, and runs no group then. Rows past the counts are never poisoned.
    /// Decode's shapes (A at most [`GEMV_MAX_ROWS`](crate::kernel::GEMV_MAX_ROWS) rows, each
    /// weight stored `N x K`, dense or quantized) run on the matrix-vector kernel, reading only
    /// the weights of the groups that have rows; larger ones on the grouped GEMM (quantized
    /// weights then dequantize every expert first, which ones have rows not being known).
    pub fn grouped_by_device_counts<T: DeviceOperand<u32>>(mut self, counts: &'a T) -> Self {
        self.groups = Groups::Counted(placed(counts));
        self
    }

    /// How [`MultiContext::run`](crate::MultiContext::run) cuts a host or pinned GEMM among its
    /// devices (from [`MultiContext::split`](crate::MultiContext::split), or built by hand: it is
    /// checked); default [`SplitKind::Auto`](crate::SplitKind::Auto). One device ignores it.
    pub fn split(mut self, split: &'a Split) -> Self {
        self.split = Some(split);
        self
    }

    /// An error unless this is a plain GEMM (no fused epilogue, no groups), which is all `what`
    /// runs.
    pub(crate) fn plain_only(&self, what: &str) -> crate::error::Result<()> {
        if self.fused.is_some() || !matches!(self.groups, Groups::None) {
            return Err(crate::error::Error::Unsupported(format!(
                "{what} run plain GEMMs (no fused epilogue, no groups)"
            )));
        }
        Ok(())
    }
}
