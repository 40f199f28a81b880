//! Weights in a ggml block format on the device ([`QuantMatrix`]), uploaded from the bytes a GGUF
//! file holds, and GEMMs that take them as A or B: decode's shapes on the matrix-vector kernel
//! reading the blocks ([`crate::plan::gemv_on_blocks`]), the rest on a dense copy the planner
//! has a pass make in scratch first ([`crate::plan::dequantized_first`]), f16 or f32 as the
//! operand's element type says. Host operands beside them are uploaded and downloaded.

use super::argument::{In, Out};
use super::context::Context;
use super::matmul::{Groups, Matmul};
use super::matrix::{check_matrix, DeviceMatrix, Element, MatMut};
use super::operand::{placed, Placed};
use super::work::{Planned, Plans};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::memory::{Buffer, BufferKind};
use crate::plan::{
    dequantized_first, gemv_on_blocks, streams_blocks, Batch, BlockReads, ComputeMode, DispatchLimits, GemmPlan,
    Operand, Quantized, Window,
};
use crate::quant::QuantType;
use crate::tiling::{Layout, VECTOR_BYTES};
use half::f16;
use std::marker::PhantomData;
use std::sync::Arc;

/// A matrix in a ggml block format in device memory: `rows` rows of `cols` values, each row
/// `cols / block_values` blocks stored one after the other, exactly as a GGUF file stores a
/// weight tensor of `ne = [cols, rows]` (an `nn.Linear` weight: `rows` = output features,
/// `cols` = input features, K). Create with [`Context::upload_quantized`], or as a mixture of
/// experts' weights (`ne = [cols, rows, experts]`) with [`Context::upload_quantized_experts`].
///
/// As an operand of [`Context::run`] it reads as the `rows x cols` matrix of its dequantized
/// values (`&w`), or as its transpose ([`QuantMatrix::t`]: `y = x * w^T`, the usual layer), in
/// f16 (each value rounded to nearest even, as ggml-vulkan's f16 matrix multiply reads it), or
/// exactly in f32 ([`QuantRef::as_f32`]). Either goes with activations of f16 or f32. Experts
/// are B of a grouped [`Matmul`] ([`Matmul::grouped`]): group `g`'s rows of A multiply expert
/// `g`.
pub struct QuantMatrix {
    pub(crate) buffer: Arc<Buffer>,
    quant: QuantType,
    rows: usize,
    cols: usize,
    /// Matrices held (experts, from [`Context::upload_quantized_experts`]; 1 otherwise).
    count: usize,
    /// Bytes from one matrix's first block to the next one's on the device (a multiple of 16).
    pub(crate) stride: usize,
    /// Whether the blocks are interleaved on the device ([`QuantType::interleave`]).
    interleaved: bool,
}

/// `blocks` of `quant` as the file holds them into `out`, each as the device holds it
/// ([`QuantType::device_block`]).
fn device_blocks(quant: QuantType, blocks: &[u8], out: &mut [u8]) {
    let (stored, padded) = (quant.block_bytes(), quant.device_block_bytes());
    for (to, from) in out.chunks_exact_mut(padded).zip(blocks.chunks_exact(stored)) {
        quant.device_block(from, to);
    }
}

/// A [`QuantMatrix`] as an operand: as stored or transposed, its values read as `T` (f16 or
/// f32).
#[derive(Debug)]
pub struct QuantRef<'a, T = f16> {
    pub(crate) view: QuantView<'a>,
    _t: PhantomData<T>,
}

impl<T> Clone for QuantRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for QuantRef<'_, T> {}

/// A [`QuantRef`] without its element type, as the planner takes it.
#[derive(Copy, Clone, Debug)]
pub struct QuantView<'a> {
    pub(crate) matrix: &'a QuantMatrix,
    pub(crate) transposed: bool,
}

impl<'a, T> QuantRef<'a, T> {
    fn new(matrix: &'a QuantMatrix, transposed: bool) -> Self {
        QuantRef {
            view: QuantView { matrix, transposed },
            _t: PhantomData,
        }
    }

    /// The same operand read exactly, as the f32 values of ggml's dequantization (the copy the
    /// GEMM reads is then twice the size of an f16 one).
    pub fn as_f32(self) -> QuantRef<'a, f32> {
        QuantRef::new(self.view.matrix, self.view.transposed)
    }

    /// The same operand read as f16 (the default).
    pub fn as_f16(self) -> QuantRef<'a, f16> {
        QuantRef::new(self.view.matrix, self.view.transposed)
    }
}

impl QuantMatrix {
    /// The block format.
    pub fn quant(&self) -> QuantType {
        self.quant
    }
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Values per row (a whole number of blocks).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Matrices held: the experts of [`Context::upload_quantized_experts`], or 1.
    pub fn experts(&self) -> usize {
        self.count
    }
    /// Bytes of its blocks as a GGUF file stores them, every expert's (on the device Q3_K's and
    /// Q6_K's blocks take two more each, so each starts on a word).
    pub fn bytes(&self) -> usize {
        self.count * self.rows * self.cols / self.quant.block_values() * self.quant.block_bytes()
    }
    /// Whether the device holds the blocks interleaved in groups ([`QuantType::interleave`]:
    /// the formats that have groups, where each row is a whole number of them), which the
    /// kernels read faster; the values are the same either way.
    pub fn interleaved(&self) -> bool {
        self.interleaved
    }
    /// The transpose as an operand, read as f16: the `cols x rows` matrix, B of `y = x * w^T`.
    pub fn t(&self) -> QuantRef<'_> {
        QuantRef::new(self, true)
    }

    /// The matrix as an operand, read as f16 (as `&w` is).
    pub fn as_ref(&self) -> QuantRef<'_> {
        QuantRef::new(self, false)
    }
}

impl std::fmt::Debug for QuantMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QuantMatrix<{}>({}x{})", self.quant, self.rows, self.cols)
    }
}

impl QuantView<'_> {
    /// Expert `g`'s blocks (the only matrix's for `g` = 0) as the planner takes them.
    pub(crate) fn expert(&self, g: usize) -> Quantized {
        let m = self.matrix;
        Quantized {
            quant: m.quant,
            rows: m.rows,
            cols: m.cols,
            window: Window {
                start: (g * m.stride) as u64,
                ..Window::from_start(m.buffer.size())
            },
            interleaved: m.interleaved,
        }
    }

    /// Rows and columns as the GEMM sees them.
    fn shape(&self) -> (usize, usize) {
        let m = self.matrix;
        if self.transposed {
            (m.cols, m.rows)
        } else {
            (m.rows, m.cols)
        }
    }
}

/// Weight values up to which one row of activations is multiplied as it is rather than rounded
/// to 8 bits first: the rounding pass is a dispatch of its own, about 2 us on the H200, more
/// than the packed products save on a small weight (h200-41-6, one token of 2048x2048: q8_0
/// 7.0 -> 5.2 us, q4_0 6.8 -> 5.0, MXFP4 7.1 -> 6.6; of 2880x2880 q8_0 8.0 / 7.9, q4_0 7.5 /
/// 6.9, but MXFP4 8.6 / 10.8, and of 4096x4096 the 8-bit path ahead in each).
const SMALL_DECODE: usize = 1 << 22;

impl Context {
    /// Uploads a `rows x cols` matrix of `quant` blocks: `blocks` holds each row's
    /// `cols / block_values` blocks, row after row, as a GGUF file stores them (no repacking by
    /// the caller; on the way Q3_K's and Q6_K's blocks are padded to a whole word, the K-quant
    /// formats' codes are regrouped by 32 values within each block, and where each row is a
    /// whole number of a format's groups the blocks are interleaved in them,
    /// [`QuantType::interleave`]; each value kept bit for bit).
    /// A typed error, before anything reaches the GPU, where `cols` is not a whole number of
    /// blocks or `blocks` is not exactly that many bytes.
    pub fn upload_quantized(&self, quant: QuantType, rows: usize, cols: usize, blocks: &[u8]) -> Result<QuantMatrix> {
        self.upload_quantized_experts(quant, 1, rows, cols, blocks)
    }

    /// Uploads `experts` matrices of `rows x cols` values in `quant` blocks, one after the other
    /// as a GGUF file stores a mixture of experts' weight tensor (`ne = [cols, rows, experts]`),
    /// for a grouped GEMM ([`Matmul::grouped`]: group `g`'s tokens multiply expert `g`). Each
    /// expert starts on a 16-byte boundary on the device; values are kept bit for bit, as
    /// [`Context::upload_quantized`] keeps them.
    /// A typed error, before anything reaches the GPU, where `cols` is not a whole number of
    /// blocks, `experts` is 0 or `blocks` is not exactly that many bytes.
    pub fn upload_quantized_experts(
        &self,
        quant: QuantType,
        experts: usize,
        rows: usize,
        cols: usize,
        blocks: &[u8],
    ) -> Result<QuantMatrix> {
        let what = match experts {
            1 => format!("a {rows}x{cols} {quant} matrix"),
            _ => format!("{experts} experts of {rows}x{cols} {quant}"),
        };
        if rows == 0 || cols == 0 || experts == 0 {
            return Err(Error::InvalidOperand(format!(
                "{what}: rows, columns and experts must be at least 1"
            )));
        }
        let row_bytes = quant.bytes_for(cols)?;
        let too_large = || Error::TooLarge(format!("{what}: {row_bytes} bytes a row overflow"));
        let each = row_bytes.checked_mul(rows).ok_or_else(too_large)?;
        let bytes = each.checked_mul(experts).ok_or_else(too_large)?;
        if blocks.len() != bytes {
            return Err(Error::InvalidOperand(format!(
                "{what} is {} blocks of {} bytes per row, {bytes} bytes in all; {} were given",
                cols / quant.block_values(),
                quant.block_bytes(),
                blocks.len()
            )));
        }
        // On the device each block is as `QuantType::device_block` lays it out (Q3_K and Q6_K
        // padded to a word, the K-quant formats' codes regrouped), interleaved in groups where
        // the rows allow (`QuantType::interleave`), each expert from a 16-byte boundary, in
        // whole 16-byte vectors, at least 8 bytes past the last block: the kernels read the
        // word after each one they need (a block need not start on a word).
        let (stored, padded) = (quant.block_bytes(), quant.device_block_bytes());
        let device_each = each / stored * padded;
        let stride = device_each.next_multiple_of(VECTOR_BYTES as usize);
        let size = (((experts - 1) * stride + device_each) as u64 + 8).next_multiple_of(u64::from(VECTOR_BYTES));
        if size > self.limits.max_range {
            return Err(Error::TooLarge(format!(
                "{what} takes {size} bytes, over the device's largest binding ({})",
                self.limits.max_range
            )));
        }
        let interleave = quant.interleave().filter(|_| quant.interleaves(cols));
        let buffer = Arc::new(self.pool.allocate(size, BufferKind::Storage)?);
        self.run_blocking(|core| {
            core.access(&[], &[(&buffer).into()])?;
            core.upload(buffer.raw(), 0, size, |out| {
                for (e, from) in blocks.chunks_exact(each).enumerate() {
                    let to = &mut out[e * stride..];
                    // Zeros between experts, and past the last one to the end.
                    let end = if e + 1 == experts { to.len() } else { stride };
                    to[device_each..end].fill(0);
                    let to = &mut to[..device_each];
                    match interleave {
                        // Interleaved formats keep their blocks' size (the quant tests hold it).
                        Some(i) => i.scatter(quant, from, to),
                        None => device_blocks(quant, from, to),
                    }
                }
            })
        })?;
        Ok(QuantMatrix {
            buffer,
            quant,
            rows,
            cols,
            count: experts,
            stride,
            interleaved: interleave.is_some(),
        })
    }

    /// Plans `op` with a quantized A or B (the other operand and C on the device): one GEMM, or
    /// a grouped one over quantized experts ([`Context::plan_quantized_groups`]).
    pub(crate) fn plan_quantized<'o, TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'o>,
        (a, b, c): (&'o In<'_, TA>, &'o In<'_, TB>, &'o Out<'_, TC>),
    ) -> Result<Planned<'o>> {
        if op.split.is_some() {
            return Err(Error::Unsupported(
                "a quantized operand runs on one device: split GEMMs take dense weights for now".into(),
            ));
        }
        let pc = match c {
            Out::Device(m) => placed(&**m),
            Out::Buffer(m) => placed(&**m),
            other => {
                return Err(Error::Unsupported(format!(
                    "beside a quantized operand, C is {}: pass a DeviceMatrix or a host MatMut",
                    other.residency()
                )))
            }
        };
        let (j, q, to) = match (a, b) {
            (In::Quant(_), In::Quant(_)) => {
                return Err(Error::Unsupported(
                    "A and B are both quantized: one operand (the weights) may be".into(),
                ))
            }
            (In::Quant(q), _) => (0, *q, TA::TYPE),
            (_, In::Quant(q)) => (1, *q, TB::TYPE),
            _ => unreachable!("called with a quantized operand"),
        };
        match op.groups {
            Groups::None => {}
            Groups::Rows(rows) if j == 1 => {
                return self.plan_quantized_groups::<TA, TB, TC>(op, (dense(a, "A")?, (q, to), pc), rows)
            }
            Groups::Counted(counts) if j == 1 => {
                return self.plan_quantized_counted::<TA, TB, TC>(op, (dense(a, "A")?, (q, to), pc), counts)
            }
            Groups::Rows(_) | Groups::Counted(_) => {
                return Err(Error::InvalidOperand(
                    "a grouped GEMM's experts are B (one per group); A holds the groups' rows".into(),
                ))
            }
        }
        if q.matrix.count != 1 {
            return Err(Error::InvalidOperand(format!(
                "a QuantMatrix of {} experts is B of a grouped GEMM (Matmul::grouped), one group per expert",
                q.matrix.count
            )));
        }
        let quantized = q.expert(0);
        let seen = self.dense_view(q, &quantized, to);
        let (pa, pb) = if j == 0 {
            (seen, dense(b, "B")?)
        } else {
            (dense(a, "A")?, seen)
        };
        self.check_placed(&[&pa, &pb, &pc])?;
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let terms = op
            .fused
            .as_ref()
            .map(|f| self.fused_terms(f, (pc.rows, pc.cols), types))
            .transpose()?;
        let plan = self.plan_one_quantized([pa, pb, pc], j, (&quantized, to), types, (&op.options, terms))?;
        let operands = plan.bind_order([pa, pb, pc]);
        Ok(Planned {
            plans: Plans::One([(plan, operands)]),
            whole: [pa, pb, pc],
            counts: None,
            output: TC::TYPE,
        })
    }

    /// One GEMM of checked `views` whose operand `j` (0 = A, 1 = B) is the dense view of
    /// `quantized` read as `to`: the matrix-vector kernel on the blocks for decode's shapes,
    /// else the GEMM on the dense copy after the pass that makes it.
    pub(crate) fn plan_one_quantized(
        &self,
        [pa, pb, pc]: [Placed<'_>; 3],
        j: usize,
        (quantized, to): (&Quantized, ComponentType),
        types: [ComponentType; 3],
        (options, terms): (&crate::GemmOptions, Option<crate::kernel::Epilogue>),
    ) -> Result<GemmPlan> {
        let which_of = |plan: &GemmPlan| quantized_operand(j, plan);
        // Decode's shapes first, the binding limit lifted for the dense view (the blocks are
        // bound, and they are smaller); then the GEMM on the dense copy.
        let lifted = DispatchLimits {
            max_range: u64::MAX,
            max_allocation: u64::MAX,
            ..self.limits
        };
        // The rows of quantized weights per workgroup are checked against their own kernel's
        // layout (`gemv_on_blocks`), not the dense one's.
        let dense = crate::GemmOptions {
            gemv_cols: None,
            ..options.clone()
        };
        let streamed = self
            .plan_gemv_within((pa, pb, pc), types, (&dense, terms), &lifted)?
            .filter(|p| streams_blocks(p, which_of(p)));
        let plan = match streamed {
            Some(plan) => plan,
            None => {
                let operands = ([pa, pb, pc], (quantized, to));
                if let Some(plan) = self.plan_quantized_chunks(operands, j, types, (options, terms))? {
                    return Ok(plan);
                }
                self.plan_fused(pa, pb, pc, types, Batch::ONE, options, terms)?
            }
        };
        let which = which_of(&plan);
        // Decode's shapes stream the blocks; the rest multiply a dense copy.
        if streams_blocks(&plan, which) {
            // The activations are the operand beside the quantized one; C has a column (or
            // a row) for each of their rows.
            let one_small = pc.rows * pc.cols == quantized.rows && quantized.rows * quantized.cols <= SMALL_DECODE;
            let int8_x = self.int8_activations(options, types[1 - j], one_small)?;
            let reads = BlockReads {
                layout: (options.gemv_cols, options.gemv_lanes),
                int8_x,
                wide_loads: options.gemv_wide_loads != Some(false),
            };
            gemv_on_blocks(plan, which, quantized, reads, &self.limits)
        } else {
            dequantized_first(plan, which, quantized, to, &self.limits)
        }
    }

    /// `op` with a quantized operand, the other and C on the host: both uploaded, the GEMM run
    /// on the device, C downloaded into the caller's matrix (any storage order and leading
    /// dimension).
    pub(crate) fn run_quantized_host<TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        a: In<'_, TA>,
        b: In<'_, TB>,
        c: MatMut<'_, TC>,
    ) -> Result<()> {
        check_matrix("C", &c.as_ref())?;
        let (ua, ub) = (self.uploaded(&a)?, self.uploaded(&b)?);
        // C's old value is read only where beta is set; otherwise it is only written.
        let mut dc = if op.options.beta == 0.0 {
            self.alloc_matrix::<TC>(c.rows, c.cols, c.layout)?
        } else {
            self.upload(c.as_ref())?
        };
        let (a, b) = (on_device(a, ua.as_ref(), "A")?, on_device(b, ub.as_ref(), "B")?);
        self.run_operands(op, a, b, Out::Device(&mut dc))?;
        let (outer, inner) = c.layout.outer_inner(c.rows, c.cols);
        let stored = MatMut {
            data: c.data,
            rows: outer,
            cols: inner,
            ld: c.ld,
            layout: Layout::RowMajor,
        };
        self.download(&dc, stored)
    }

    /// Whether decode rounds its `elem` activations to 8 bits
    /// ([`GemmOptions::int8_activations`](crate::GemmOptions::int8_activations)); by default not
    /// for `one_small` (one row of them over at most [`SMALL_DECODE`] weights).
    fn int8_activations(&self, options: &crate::GemmOptions, elem: ComponentType, one_small: bool) -> Result<bool> {
        let can = self.device.info().features.shader_integer_dot_product;
        match options.int8_activations {
            Some(false) => Ok(false),
            Some(true) if !can => Err(Error::Unsupported(
                "8-bit activations need shaderIntegerDotProduct, which this device has not enabled".into(),
            )),
            Some(true) => Ok(true),
            None => Ok(can
                && !one_small
                && (elem != ComponentType::F32
                    || matches!(options.compute, ComputeMode::FastF16 | ComputeMode::FastBf16))),
        }
    }

    /// A host input uploaded (`None` for the others).
    fn uploaded<T: Element>(&self, x: &In<'_, T>) -> Result<Option<DeviceMatrix<T>>> {
        match x {
            In::Host(m) => self.upload(*m).map(Some),
            _ => Ok(None),
        }
    }
}

/// An input of a GEMM beside a quantized operand, its host matrix replaced by the upload `up`:
/// re-made at the upload's lifetime (an ndarray view makes `In` invariant in its own).
fn on_device<'l: 's, 's, T: Element>(x: In<'l, T>, up: Option<&'s DeviceMatrix<T>>, name: &str) -> Result<In<'s, T>> {
    match (up, x) {
        (Some(d), _) => Ok(In::Device(d)),
        (None, In::Quant(v)) => Ok(In::Quant(v)),
        (None, In::Device(m)) => Ok(In::Device(m)),
        (None, In::Buffer(m)) => Ok(In::Buffer(m)),
        (None, other) => Err(Error::Unsupported(format!(
            "beside a quantized operand, {name} is {}: pass a host MatRef or a DeviceMatrix",
            other.residency()
        ))),
    }
}

/// The dense operand beside a quantized one: on the device, whole.
pub(super) fn dense<'o, T: Element>(x: &'o In<'_, T>, name: &str) -> Result<Placed<'o>> {
    match x {
        In::Device(m) => Ok(placed(*m)),
        In::Buffer(m) => Ok(placed(*m)),
        other => Err(Error::Unsupported(format!(
            "beside a quantized operand, {name} is {}: pass a host MatRef (with a host MatMut C) or a DeviceMatrix",
            other.residency()
        ))),
    }
}

/// Which of `plan`'s operands is the caller's operand `j` (0 = A, 1 = B), the quantized one: a
/// column-major C swaps A and B in the plan.
pub(super) fn quantized_operand(j: usize, plan: &GemmPlan) -> Operand {
    if (j == 0) != plan.transposed {
        Operand::A
    } else {
        Operand::B
    }
}

impl Context {
    /// The quantized operand as the GEMM is planned on it: the dense copy the pass will make
    /// (row-major `rows x cols`, or its transpose seen column-major), bound where the blocks are.
    pub(super) fn dense_view<'o>(&self, q: QuantView<'o>, quantized: &Quantized, to: ComponentType) -> Placed<'o> {
        let (rows, cols) = q.shape();
        Placed {
            rows,
            cols,
            layout: if q.transposed {
                Layout::ColMajor
            } else {
                Layout::RowMajor
            },
            ld: quantized.copy_ld(to),
            offset: 0,
            raw: q.matrix.buffer.raw(),
            owned: Some(&q.matrix.buffer),
        }
    }
}
