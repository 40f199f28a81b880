//! One GEMM as plain data: the validated problem, the kernels it needs, and the dispatches it
//! records, in order, with their push constants, buffer windows and the barriers between them.
//! [`GemmPlan::new`] (`build.rs`) is pure, so what a GEMM will do is tested without a device;
//! recording it (`crate::record`) only resolves kernels to pipelines and operands to buffers.

use super::passes::{Batch, DispatchLimits, Problem, Window};
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::kernel::{Axis, Epilogue, GemvKey, KernelKey, Load, Probe, PushConstants};
use crate::quant::QuantType;
use crate::tiling::{Layout, TileScheme, VECTOR_BYTES};
use serde::Serialize;

pub use super::input::{check_shapes, scalar_bits, MAX_DIM};

/// Which buffer a dispatch binds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operand {
    /// The A matrix.
    A,
    /// The B matrix.
    B,
    /// The C matrix (read when beta is not zero or a pass accumulates, always written).
    C,
    /// The plan's scratch buffer ([`GemmPlan::scratch_bytes`]), for split-K partial products.
    Scratch,
    /// A fused epilogue's bias vector.
    Bias,
    /// A fused epilogue's row scales (dequantisation).
    RowScales,
    /// A fused epilogue's column scales.
    ColScales,
    /// A grouped GEMM's group sizes on the device ([`GemmPlan::grouped_counted`]).
    Counts,
}

/// A kernel a plan dispatches; the recorder turns it into a pipeline.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Kernel {
    /// A GEMM kernel.
    Gemm(KernelKey),
    /// The largest-magnitude pass of the accurate split ([`crate::kernel::absmax`]).
    AbsMax,
    /// The pass that rounds an f32 operand into scratch before the GEMM
    /// ([`crate::kernel::narrow`]).
    Narrow {
        /// The 16-bit float type it rounds to.
        to: ComponentType,
    },
    /// The pass that splits an f32 operand into f16 planes in scratch before the GEMM
    /// ([`Load::Planes`]).
    SplitPlanes {
        /// Whether the planes are stored in the other order than the operand
        /// ([`crate::kernel::transpose`]).
        transposed: bool,
    },
    /// The pass that copies an operand into the other storage order in scratch before the
    /// GEMM ([`crate::kernel::transpose`], [`PlanRequest::relayout`]).
    Transpose {
        /// `None`: an operand copied as it is; `Some(t)`: an f32 operand, rounded to `t`.
        rounds_to: Option<ComponentType>,
        /// Bytes per element of the copy: 2 (16-bit operands, rounded f32 ones) or 1 (8-bit).
        bytes: u8,
    },
    /// The pass that dequantizes an operand held in a ggml block format into a dense copy in
    /// scratch before the GEMM ([`crate::kernel::dequant`]).
    Dequant {
        /// The block format.
        quant: QuantType,
        /// The copy's type: f16 or f32.
        to: ComponentType,
        /// Whether the blocks are interleaved in groups ([`QuantType::interleave`]).
        interleaved: bool,
    },
    /// The pass that rounds the activations of a matrix-vector GEMM on quantized weights to 8
    /// bits into scratch before it ([`crate::kernel::act8`]).
    Act8 {
        /// The activations' type.
        elem: ComponentType,
    },
    /// The pass that builds a grouped GEMM's tile table from counts on the device
    /// ([`crate::kernel::group_table`]).
    GroupTable,
    /// The matrix-vector kernel ([`crate::kernel::gemv`]): a plan of this one dispatch runs
    /// instead of the GEMM kernels ([`super::gemv_dispatch`]).
    Gemv(GemvKey),
    /// The split-K reduction for a result type and epilogue, at a subgroup size.
    Reduce {
        /// C's type.
        result_type: ComponentType,
        /// Which of alpha and beta it applies.
        epilogue: Epilogue,
        /// The subgroup size its pipeline pins.
        subgroup_size: u32,
    },
}

impl Kernel {
    /// A short name for reports: a GEMM's tile scheme, else the pass.
    pub fn label(&self) -> String {
        match self {
            Kernel::Gemm(key) => key.scheme.name(),
            Kernel::Gemv(key) => key.name(),
            Kernel::AbsMax => "absmax".into(),
            Kernel::Narrow { to } => format!("round to {to}"),
            Kernel::SplitPlanes { transposed: false } => "split planes".into(),
            Kernel::SplitPlanes { transposed: true } => "split planes transposed".into(),
            Kernel::Transpose { rounds_to: None, .. } => "transpose".into(),
            Kernel::Transpose { rounds_to: Some(t), .. } => format!("transpose, round to {t}"),
            Kernel::GroupTable => "group table".into(),
            Kernel::Dequant { quant, to, interleaved } => format!(
                "dequantize {quant}{} to {to}",
                if *interleaved { " (interleaved)" } else { "" }
            ),
            Kernel::Act8 { elem } => format!("round {elem} activations to 8 bits"),
            Kernel::Reduce { .. } => "split-K reduce".into(),
        }
    }
}

/// One dispatch of a plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dispatch {
    /// What runs.
    pub kernel: Kernel,
    /// Bindings 0, 1 and 2: which buffer, and which window of it.
    pub bindings: [(Operand, Window); 3],
    /// Binding 3, for kernels that read it (split scale words, a grouped kernel's tile table).
    pub aux: Option<(Operand, Window)>,
    /// Bindings 4, 5 and 6, for kernels with a fused epilogue that reads them (bias, row
    /// scales, column scales: each whole, from the start of its buffer).
    pub vectors: [Option<(Operand, Window)>; 3],
    /// The push constants.
    pub push: PushConstants,
    /// Workgroups along x, y and z.
    pub groups: [u32; 3],
    /// Whether it reads what earlier dispatches of the plan wrote: a compute-to-compute barrier
    /// goes before it. Dispatches without it run concurrently with the one before.
    pub after_previous: bool,
}

/// How many K slices to run concurrently (split-K).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SplitK {
    /// [`choose_split_k`](crate::plan::choose_split_k)'s rule (never on CPU drivers).
    Auto {
        /// Whether the device is a CPU driver.
        cpu_device: bool,
    },
    /// Exactly this many (1 turns split-K off).
    Slices(u32),
}

/// Everything a plan is made from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PlanRequest {
    /// The shape, layouts and device leading dimensions.
    pub problem: Problem,
    /// The cooperative-matrix configuration.
    pub config: GPUSubgroupMatrixConfig,
    /// The tile scheme, checked against `config` and the device by the caller.
    pub scheme: TileScheme,
    /// How A and B are stored and converted (the problem's element sizes must match).
    pub loads: [Load; 2],
    /// Scale of the product.
    pub alpha: f64,
    /// Scale of C's old value (0: C is not read).
    pub beta: f64,
    /// Split-K.
    pub split_k: SplitK,
    /// The fused epilogue terms (bias, activation, dequantisation, output cast); its `alpha`
    /// and `beta` flags are ignored (they follow `alpha` and `beta`). Default: none.
    pub epilogue: Epilogue,
    /// Whether f32 operands are converted first, each in a pass of its own into scratch, so the
    /// GEMM reads them as 16-bit operands: those loaded with [`Load::Round`] rounded (the GEMM
    /// may then take a scheme of workgroup scope), an accurate split ([`Load::Split`]) into
    /// planes for a workgroup-scope GEMM ([`Load::Planes`]). One GEMM at a time: a batch is an
    /// error.
    pub convert_first: bool,
    /// Operands (A, B) copied first into the other storage order, each in a pass of its own
    /// into scratch, so the GEMM reads them with their layout flipped: 16-bit operands (loaded
    /// [`Load::Native`]) and f32 operands converted first (rounded on the way). `scheme` is the
    /// flipped problem's. One GEMM at a time: a batch is an error.
    pub relayout: [bool; 2],
    /// Build N, K and the leading dimensions into the GEMM kernel ([`KernelKey::fixed`]) where
    /// it is a workgroup-scope kernel of one GEMM in one pass reading its operands as stored.
    pub specialize: bool,
}

/// A GEMM, planned: what to dispatch, in order, on which windows of which operands.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GemmPlan {
    /// The problem.
    pub problem: Problem,
    /// The config.
    pub config: GPUSubgroupMatrixConfig,
    /// The tile scheme.
    pub scheme: TileScheme,
    /// The dispatches, in recording order.
    pub dispatches: Vec<Dispatch>,
    /// Bytes of scratch memory the plan binds as [`Operand::Scratch`] (0: none).
    pub scratch_bytes: u64,
    /// Bytes at the start of scratch that must be zero before the first dispatch (the recorder
    /// fills them; the accurate split's scale words).
    pub zeroed_scratch_bytes: u64,
    /// Words the recorder writes at the start of scratch first (a grouped GEMM's tile table).
    pub scratch_words: Vec<u32>,
    /// Whether the result depends on C's old value; if not, C is only written.
    pub reads_c: bool,
    /// Whether the plan computes `C^T = B^T A^T` because C is column-major: then its
    /// [`Operand::A`] is the caller's B (transposed) and [`Operand::B`] the caller's A.
    pub transposed: bool,
}

impl GemmPlan {
    /// The caller's (A, B, C) in the order the plan binds them ([`GemmPlan::transposed`]).
    pub fn bind_order<T>(&self, [a, b, c]: [T; 3]) -> [T; 3] {
        if self.transposed {
            [b, a, c]
        } else {
            [a, b, c]
        }
    }

    /// The distinct kernels the plan dispatches, in first-use order.
    pub fn kernels(&self) -> Vec<Kernel> {
        let mut out: Vec<Kernel> = Vec::new();
        for d in &self.dispatches {
            if !out.contains(&d.kernel) {
                out.push(d.kernel);
            }
        }
        out
    }

    /// The matrix-vector kernel, where the plan is one ([`Kernel::Gemv`]).
    pub fn gemv_kernel(&self) -> Option<GemvKey> {
        self.dispatches.iter().find_map(|d| match d.kernel {
            Kernel::Gemv(key) => Some(key),
            _ => None,
        })
    }

    /// The name of what multiplies: the matrix-vector kernel's, or the GEMM dispatches' tile
    /// scheme.
    pub fn kernel_name(&self) -> String {
        match self.gemv_kernel() {
            Some(key) => key.name(),
            None => self.main_kernel().scheme.name(),
        }
    }

    /// The GEMM kernel of the first GEMM dispatch (the partial-product kernel under split-K).
    /// A matrix-vector plan has none: it panics there (see [`GemmPlan::gemv_kernel`]).
    pub fn main_kernel(&self) -> KernelKey {
        self.dispatches
            .iter()
            .find_map(|d| match d.kernel {
                Kernel::Gemm(key) => Some(key),
                _ => None,
            })
            .expect("every plan has a GEMM dispatch")
    }

    /// Whether the plan runs split-K (slices into scratch, then the reduction).
    pub fn is_split_k(&self) -> bool {
        self.dispatches
            .iter()
            .any(|d| matches!(d.kernel, Kernel::Reduce { .. }))
    }

    /// The GEMM dispatches as passes of the problem (for inspection): their extents along M, N, K
    /// (a matrix-vector plan's one dispatch included).
    pub fn gemm_dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.dispatches
            .iter()
            .filter(|d| matches!(d.kernel, Kernel::Gemm(_) | Kernel::Gemv(_)))
    }

    /// The same plan with every GEMM kernel replaced by a diagnostic variant (see [`Probe`]).
    pub fn with_probe(mut self, probe: Probe) -> Self {
        for d in &mut self.dispatches {
            if let Kernel::Gemm(key) = &mut d.kernel {
                key.probe = probe;
            }
        }
        self
    }
}

/// The problem of a GEMM on matrices in device layout (leading dimensions padded to 16 bytes).
pub fn device_problem(
    (m, n, k): (usize, usize, usize),
    (a_layout, b_layout): (Layout, Layout),
    (a_bytes, b_bytes, c_bytes): (usize, usize, usize),
) -> Problem {
    Problem {
        m,
        n,
        k,
        a_layout,
        b_layout,
        lda: device_ld(a_layout.outer_inner(m, k).1, a_bytes),
        ldb: device_ld(b_layout.outer_inner(k, n).1, b_bytes),
        ldc: device_ld(n, c_bytes),
        a_bytes,
        b_bytes,
        c_bytes,
        offsets: [0; 3],
        batch: Batch::ONE,
    }
}

/// Padded leading dimension: the contiguous extent rounded up to whole 16-byte vectors.
pub fn device_ld(inner: usize, elem_bytes: usize) -> usize {
    inner.next_multiple_of(VECTOR_BYTES as usize / elem_bytes.min(VECTOR_BYTES as usize))
}

/// The windows of a fused epilogue's vectors (bindings 4, 5, 6): the bias (M or N elements of
/// its type, rounded up to whole 32-bit words) and the f32 row and column scales.
pub(super) fn fused_vectors(
    p: &Problem,
    e: &Epilogue,
    limits: &DispatchLimits,
) -> Result<[Option<(Operand, Window)>; 3]> {
    let whole = |which: Operand, len: usize, bytes: usize| -> Result<Option<(Operand, Window)>> {
        let range = (len as u64 * bytes as u64).next_multiple_of(4);
        if range > limits.max_range {
            return Err(Error::TooLarge(format!(
                "a {len}-element epilogue vector is {range} bytes, over maxStorageBufferRange ({})",
                limits.max_range
            )));
        }
        Ok(Some((which, Window::from_start(range))))
    };
    let bias = match e.bias {
        Some((axis, t)) => {
            let len = if axis == Axis::Row { p.m } else { p.n };
            whole(Operand::Bias, len, t.size_bytes() as usize)?
        }
        None => None,
    };
    let (rows, cols) = if e.dequant {
        (whole(Operand::RowScales, p.m, 4)?, whole(Operand::ColScales, p.n, 4)?)
    } else {
        (None, None)
    };
    Ok([bias, rows, cols])
}

#[cfg(test)]
#[path = "gemm_tests.rs"]
pub(in crate::plan) mod tests;
