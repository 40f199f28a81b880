//! Fused epilogues: `D = act(alpha * deq(A*B) + beta * C + bias)`, applied by the GEMM kernel
//! to each element before it is stored in C's type (see [`crate::kernel::Epilogue`]), so a
//! linear layer's bias, activation and output cast cost no extra pass over C.

use super::context::Context;
use super::matrix::{DeviceMatrix, Element};
use super::operand::Placed;
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::Epilogue;
pub use crate::kernel::{Activation, Axis};
use crate::memory::{Buffer, BufferKind};
use crate::plan::GemmPlan;
use crate::submit::{StreamCore, Touch};
use half::{bf16, f16};
use std::ops::Range;
use std::sync::Arc;

/// One vector of a fused epilogue (a bias, or dequantisation scales): host values, uploaded with
/// the GEMM, or a [`DeviceMatrix`] with one row or one column (its elements contiguous), kept on
/// the device across GEMMs. Made with `From` from `&[f32]`, `&[f16]`, `&[bf16]` or
/// `&DeviceMatrix` of those.
#[derive(Copy, Clone, Debug)]
pub struct EpilogueVector<'a>(Source<'a>);

#[derive(Copy, Clone, Debug)]
enum Source<'a> {
    Host(ComponentType, &'a [u8]),
    Device(ComponentType, &'a Arc<Buffer>, usize, bool),
}

macro_rules! vector_from {
    ($($t:ty),*) => {$(
        impl<'a> From<&'a [$t]> for EpilogueVector<'a> {
            fn from(v: &'a [$t]) -> Self {
                EpilogueVector(Source::Host(<$t as Element>::TYPE, bytemuck::cast_slice(v)))
            }
        }
        impl<'a> From<&'a Vec<$t>> for EpilogueVector<'a> {
            fn from(v: &'a Vec<$t>) -> Self {
                v.as_slice().into()
            }
        }
        impl<'a> From<&'a DeviceMatrix<$t>> for EpilogueVector<'a> {
            fn from(m: &'a DeviceMatrix<$t>) -> Self {
                let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
                let contiguous = outer == 1 || inner == m.ld;
                EpilogueVector(Source::Device(<$t as Element>::TYPE, &m.buffer, m.rows * m.cols, contiguous))
            }
        }
    )*};
}
vector_from!(f32, f16, bf16);

impl<'a> EpilogueVector<'a> {
    /// A host vector of `t` elements as little-endian bytes (the driver self-test's, whose
    /// element type is a kernel's, not a Rust type's).
    pub(crate) fn host(t: ComponentType, bytes: &'a [u8]) -> Self {
        EpilogueVector(Source::Host(t, bytes))
    }

    fn element_type(&self) -> ComponentType {
        match self.0 {
            Source::Host(t, _) | Source::Device(t, ..) => t,
        }
    }

    fn len(&self) -> usize {
        match self.0 {
            Source::Host(t, bytes) => bytes.len() / t.size_bytes() as usize,
            Source::Device(_, _, len, _) => len,
        }
    }
}

/// What a GEMM applies to each result element after `alpha * A*B + beta * C`, in f32, before C's
/// type is stored: dequantisation scales (8-bit inputs), a bias, an activation. C's type sets
/// the output cast: f16 or bf16 C with 16-bit float inputs accumulates in f32 and rounds once
/// at the store; f32, f16 or bf16 C with i8/u8 inputs accumulates in i32/u32 and dequantises.
///
/// ```no_run
/// # fn main() -> vk_sgmat::Result<()> {
/// use half::f16;
/// use vk_sgmat::{Activation, Axis, Context, Fused, MatMut, MatRef, Matmul};
/// let ctx = Context::new()?;
/// let (x, w, bias) = (vec![f16::ONE; 64 * 32], vec![f16::ONE; 32 * 48], vec![0.5f32; 48]);
/// let mut y = vec![f16::ZERO; 64 * 48];
/// let fused = Fused::new().bias(Axis::Col, &bias).activation(Activation::Gelu);
/// let op = Matmul::new().fused(&fused); // or Matmul::new().bias(..).activation(..)
/// ctx.run(&op, MatRef::new(&x, 64, 32), MatRef::new(&w, 32, 48), MatMut::new(&mut y, 64, 48))?;
/// # Ok(()) }
/// ```
#[derive(Copy, Clone, Debug, Default)]
pub struct Fused<'a> {
    /// A bias added after alpha and beta: per row of C (M values) or per column (N), of f32,
    /// f16 or bf16. Default: none.
    pub bias: Option<(Axis, EpilogueVector<'a>)>,
    /// The activation, applied last. Default: none.
    pub activation: Activation,
    /// Dequantisation of an integer product: `acc * rows[i] * cols[j]`, f32 scales (M and N of
    /// them), before alpha. Required, and only allowed, with i8 or u8 inputs and a float C.
    pub scales: Option<(EpilogueVector<'a>, EpilogueVector<'a>)>,
}

impl<'a> Fused<'a> {
    /// No terms: a plain GEMM (with its output cast, if C's type asks for one).
    pub fn new() -> Self {
        Self::default()
    }

    /// With a bias along `axis`.
    pub fn bias(self, axis: Axis, values: impl Into<EpilogueVector<'a>>) -> Self {
        Self {
            bias: Some((axis, values.into())),
            ..self
        }
    }

    /// With an activation.
    pub fn activation(self, activation: Activation) -> Self {
        Self { activation, ..self }
    }

    /// With dequantisation scales per row and per column.
    pub fn scales(self, rows: impl Into<EpilogueVector<'a>>, cols: impl Into<EpilogueVector<'a>>) -> Self {
        Self {
            scales: Some((rows.into(), cols.into())),
            ..self
        }
    }

    /// The kernel's terms (the output cast is the planner's), after checking the vectors'
    /// lengths against C's `m x n` and their types.
    pub(crate) fn terms(&self, (m, n): (usize, usize)) -> Result<Epilogue> {
        let check = |what: &str, v: &EpilogueVector<'_>, want: usize, axis: &str| -> Result<()> {
            if let Source::Device(.., false) = v.0 {
                return Err(Error::InvalidOperand(format!(
                    "{what}: a device vector is a DeviceMatrix of one row or one column"
                )));
            }
            if v.len() != want {
                return Err(Error::ShapeMismatch(format!(
                    "{what} has {} values; C has {want} {axis}",
                    v.len()
                )));
            }
            Ok(())
        };
        let mut e = Epilogue {
            activation: self.activation,
            ..Epilogue::default()
        };
        if let Some((axis, v)) = &self.bias {
            let (want, name) = if *axis == Axis::Row {
                (m, "rows")
            } else {
                (n, "columns")
            };
            check("the bias", v, want, name)?;
            e.bias = Some((*axis, v.element_type()));
        }
        if let Some((rows, cols)) = &self.scales {
            check("the row scales", rows, m, "rows")?;
            check("the column scales", cols, n, "columns")?;
            if [rows, cols].iter().any(|v| v.element_type() != ComponentType::F32) {
                return Err(Error::Unsupported("dequantisation scales are f32".into()));
            }
            e.dequant = true;
        }
        Ok(e)
    }

    /// The terms for the block `rows x cols` of C: host vectors cut to the block's rows and
    /// columns. A device vector cannot be cut (it is bound whole): an error.
    pub(crate) fn piece(&self, rows: &Range<usize>, cols: &Range<usize>) -> Result<Self> {
        const DEVICE_VECTOR: &str = "host operands over the allocation limit run in pieces, which need \
                                     the epilogue's vectors on the host; pass host slices";
        let cut = |v: EpilogueVector<'a>, r: &Range<usize>| match v.0 {
            Source::Host(t, bytes) => {
                let es = t.size_bytes() as usize;
                Ok(EpilogueVector(Source::Host(t, &bytes[r.start * es..r.end * es])))
            }
            Source::Device(..) => Err(Error::Unsupported(DEVICE_VECTOR.into())),
        };
        let bias = match self.bias {
            Some((axis, v)) => Some((axis, cut(v, if axis == Axis::Row { rows } else { cols })?)),
            None => None,
        };
        let scales = match self.scales {
            Some((r, c)) => Some((cut(r, rows)?, cut(c, cols)?)),
            None => None,
        };
        Ok(Self { bias, scales, ..*self })
    }

    /// The same terms for `C^T = B^T A^T`: row and column vectors trade places.
    pub(crate) fn transposed(self) -> Self {
        Self {
            bias: self.bias.map(|(axis, v)| (axis.flip(), v)),
            scales: self.scales.map(|(r, c)| (c, r)),
            ..self
        }
    }

    /// The vectors in binding order (bias, row scales, column scales).
    fn vectors(&self) -> [Option<EpilogueVector<'a>>; 3] {
        [
            self.bias.map(|(_, v)| v),
            self.scales.map(|(r, _)| r),
            self.scales.map(|(_, c)| c),
        ]
    }
}

impl Context {
    /// The kernel's terms of `fused` for an `m x n` C (of every entry, in a batch), checked:
    /// device vectors are this context's, lengths fit C, and dequantisation scales go with 8-bit
    /// inputs and only with them.
    pub(crate) fn fused_terms(
        &self,
        fused: &Fused<'_>,
        (m, n): (usize, usize),
        [ta, tb, tc]: [ComponentType; 3],
    ) -> Result<Epilogue> {
        for v in fused.vectors().into_iter().flatten() {
            if let Source::Device(_, buffer, ..) = v.0 {
                self.check_owned(buffer)?;
            }
        }
        let terms = fused.terms((m, n))?;
        if terms.dequant != matches!(ta, ComponentType::I8 | ComponentType::U8) {
            return Err(Error::Unsupported(format!(
                "{ta} x {tb} -> {tc}: dequantisation scales go with i8 or u8 inputs (and a float C), and only with them"
            )));
        }
        Ok(terms)
    }

    /// The vectors of `fused` on the device, in a plan's binding order (`transposed` or not):
    /// host ones uploaded now into buffers of their own, device ones held.
    pub(crate) fn hold_vectors(&self, fused: &Fused<'_>, transposed: bool) -> Result<[Option<Arc<Buffer>>; 3]> {
        let f = if transposed { fused.transposed() } else { *fused };
        let mut out = [None, None, None];
        for (slot, v) in out.iter_mut().zip(f.vectors()) {
            *slot = match v.map(|v| v.0) {
                Some(Source::Host(_, bytes)) => {
                    let buf = Arc::new(
                        self.pool
                            .allocate((bytes.len() as u64).next_multiple_of(16), BufferKind::Storage)?,
                    );
                    self.run_blocking(|core| {
                        core.access(&[], &[(&buf).into()])?;
                        core.upload(buf.raw(), 0, bytes.len() as u64, |out| out.copy_from_slice(bytes))
                    })?;
                    Some(buf)
                }
                Some(Source::Device(_, buffer, ..)) => {
                    self.check_owned(buffer)?;
                    Some(buffer.clone())
                }
                None => None,
            };
        }
        Ok(out)
    }

    /// Records a fused plan on `core`: host vectors uploaded into pooled buffers the stream
    /// holds until the GPU is done, then the plan after one ordering point.
    pub(crate) fn enqueue_fused(
        &self,
        core: &mut StreamCore,
        plan: &GemmPlan,
        operands: [Placed<'_>; 3],
        fused: &Fused<'_>,
        output: ComponentType,
    ) -> Result<()> {
        self.enqueue_fused_plans(core, &[(plan, operands)], operands, fused, (output, None))
    }

    /// [`Context::enqueue_fused`] for several plans (all transposed or none) that read the same
    /// vectors: one upload of each, one ordering point after whatever wrote `touched` (A, B,
    /// C), then the plans with no barrier between them.
    pub(crate) fn enqueue_fused_plans<P: std::borrow::Borrow<GemmPlan>>(
        &self,
        core: &mut StreamCore,
        plans: &[(P, [Placed<'_>; 3])],
        [a, b, c]: [Placed<'_>; 3],
        fused: &Fused<'_>,
        (output, counts): (ComponentType, Option<Placed<'_>>),
    ) -> Result<()> {
        for (plan, _) in plans {
            self.pipelines.prepare(plan.borrow())?;
        }
        let transposed = plans.first().is_some_and(|(p, _)| p.borrow().transposed);
        let fused = if transposed { fused.transposed() } else { *fused };
        let mut uploaded: Vec<Arc<Buffer>> = Vec::new();
        let mut raws = [None, None, None, counts.map(|p| p.raw)];
        // A, B, the counts and three vectors at most: no allocation per GEMM.
        let mut reads = [a.touch(); 6];
        let mut n_reads = 1;
        let mut read = |t| {
            reads[n_reads] = t;
            n_reads += 1;
        };
        read(b.touch());
        if let Some(p) = counts {
            read(p.touch());
        }
        let vectors = fused.vectors();
        for (i, v) in vectors.iter().enumerate() {
            match v.map(|v| v.0) {
                Some(Source::Host(_, bytes)) => {
                    let buf = Arc::new(
                        self.pool
                            .take((bytes.len() as u64).next_multiple_of(16), BufferKind::Storage)?,
                    );
                    // The stream holds it as pooled (below), so its ordering takes no owner.
                    core.access(&[], &[unowned(&buf)])?;
                    core.upload(buf.raw(), 0, bytes.len() as u64, |out| out.copy_from_slice(bytes))?;
                    raws[i] = Some(buf.raw());
                    read(unowned(&buf));
                    uploaded.push(buf);
                }
                Some(Source::Device(_, buffer, ..)) => {
                    raws[i] = Some(buffer.raw());
                    read(Touch::from(buffer));
                }
                None => {}
            }
        }
        core.access(&reads[..n_reads], &[c.touch()])?;
        let recorded = plans
            .iter()
            .try_for_each(|(plan, operands)| self.record_fused(core, plan.borrow(), *operands, output, raws));
        for buf in uploaded {
            core.hold(buf, true);
        }
        recorded
    }
}

fn unowned<'x>(buffer: &Arc<Buffer>) -> Touch<'x> {
    Touch::unowned(buffer.raw())
}
