//! One GEMM as plain data: the validated problem, the kernels it needs, and the dispatches it
//! records, in order, with their push constants, buffer windows and the barriers between them.
//! [`GemmPlan::new`] is pure, so what a GEMM will do is tested without a device; recording it
//! (`crate::record`) only resolves kernels to pipelines and operands to buffers.

use super::narrow::{absmax_dispatch, scale_words};
use super::passes::{choose_split_k, plan, plan_split_k, Batch, DispatchLimits, Pass, Problem, Window};
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::kernel::{reduce, Axis, Epilogue, FixedSizes, GemvKey, KernelKey, Load, Probe, PushConstants};
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
    /// [`choose_split_k`]'s rule (never on CPU drivers).
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
    /// Plans `req` within `limits`: passes that fit the device's workgroup counts and buffer
    /// ranges (K chunks after the first accumulate into C), or split-K slices into scratch plus a
    /// reduction where the grid is too small for the GPU.
    pub fn new(req: &PlanRequest, limits: &DispatchLimits) -> Result<Self> {
        if req.convert_first && req.loads == [Load::Split; 2] {
            return super::narrow::plan_planes(req, limits);
        }
        if (req.convert_first && req.loads.contains(&Load::Round)) || req.relayout.contains(&true) {
            return super::narrow::plan_copied(req, limits);
        }
        let (p, config, scheme) = (&req.problem, req.config, req.scheme);
        let rt = config.result_type;
        let fused = req.epilogue;
        fused.check(rt)?;
        let out_type = fused.output_type(rt);
        if out_type.size_bytes() as usize != p.c_bytes {
            return Err(Error::InvalidOperand(format!(
                "C has {}-byte elements but the plan stores {out_type}",
                p.c_bytes
            )));
        }
        // A fused epilogue applies alpha and beta in f32.
        let st = if fused.is_fused() { ComponentType::F32 } else { rt };
        let alpha_bits = scalar_bits("alpha", req.alpha, st)?;
        let beta_bits = scalar_bits("beta", req.beta, st)?;
        let one_bits = scalar_bits("beta", 1.0, st)?;
        let geometry = scheme.geometry(&config);
        let passes = plan(p, &geometry, limits)?;
        let key = |alpha: bool, beta: bool| KernelKey {
            config,
            scheme,
            a_layout: p.a_layout,
            b_layout: p.b_layout,
            epilogue: Epilogue { alpha, beta, ..fused },
            loads: req.loads,
            probe: Probe::Full,
            grouped: false,
            fixed: None,
        };
        let epilogue = Epilogue {
            alpha: req.alpha != 1.0,
            beta: req.beta != 0.0,
            ..fused
        };
        let vectors = fused_vectors(p, &fused, limits)?;
        key(false, false).check_loads()?;
        let ct = config.component_type;
        for (name, load, bytes) in [("A", req.loads[0], p.a_bytes), ("B", req.loads[1], p.b_bytes)] {
            let stored = load.storage_type(ct);
            if stored.size_bytes() as usize != bytes {
                return Err(Error::InvalidOperand(format!(
                    "{name} has {bytes}-byte elements but the plan loads it as {stored}"
                )));
            }
        }
        let mut out = Self {
            problem: *p,
            config,
            scheme,
            dispatches: Vec::new(),
            scratch_bytes: 0,
            zeroed_scratch_bytes: 0,
            scratch_words: Vec::new(),
            reads_c: epilogue.beta,
            transposed: false,
        };
        if req.loads == [Load::Split; 2] {
            out.plan_accurate_split(
                &passes,
                limits,
                (alpha_bits, beta_bits),
                key(epilogue.alpha, epilogue.beta),
                vectors,
            )?;
            return Ok(out);
        }
        if fused.is_fused() && passes.iter().any(|pass| pass.accumulate) {
            return Err(Error::TooLarge(format!(
                "a fused epilogue needs K = {} in one pass, and the device's limits cut it into {}",
                p.k,
                passes.len()
            )));
        }
        // Split-K's reduction applies alpha and beta only: fused epilogues run in one pass.
        if let ([single], false) = (passes.as_slice(), fused.is_fused()) {
            let splits = match req.split_k {
                SplitK::Slices(s) => s,
                SplitK::Auto { cpu_device } => {
                    let tiles = single.groups[0] as usize * single.groups[1] as usize;
                    choose_split_k(tiles, scheme.subgroups() as usize, p.k, cpu_device)
                }
            };
            if splits > 1 {
                let reduce = Kernel::Reduce {
                    result_type: rt,
                    epilogue,
                    subgroup_size: scheme.subgroup_size(),
                };
                let partial = key(false, false);
                if out.plan_split(limits, splits, partial, reduce, single.c, (alpha_bits, beta_bits)) {
                    return Ok(out);
                }
            }
        }
        let fixed = fixed_sizes(req, &passes);
        for (i, pass) in passes.iter().enumerate() {
            // Passes along K accumulate into the C the previous one wrote (beta = 1).
            let (kernel, beta) = if pass.accumulate {
                (key(epilogue.alpha, true), one_bits)
            } else {
                (key(epilogue.alpha, epilogue.beta), beta_bits)
            };
            let kernel = KernelKey { fixed, ..kernel };
            out.dispatches.push(Dispatch {
                kernel: Kernel::Gemm(kernel),
                bindings: [(Operand::A, pass.a), (Operand::B, pass.b), (Operand::C, pass.c)],
                push: pass_push(p, pass, alpha_bits, beta),
                groups: pass.groups,
                after_previous: i > 0 && pass.accumulate,
                aux: None,
                vectors,
            });
        }
        Ok(out)
    }

    /// Adds split-K's slices and reduction; false (nothing added) where its scratch buffer or
    /// reduction would not fit the limits.
    fn plan_split(
        &mut self,
        l: &DispatchLimits,
        splits: u32,
        partial: KernelKey,
        reduce: Kernel,
        c: Window,
        (alpha_bits, beta_bits): (u32, u32),
    ) -> bool {
        let p = &self.problem;
        let geometry = self.scheme.geometry(&self.config);
        let c_bytes = (p.m * p.ldc * p.c_bytes) as u64;
        let slice_bytes = c_bytes.next_multiple_of(l.offset_alignment.max(16));
        let Some(passes) = plan_split_k(p, &geometry, l, splits, slice_bytes) else {
            return false;
        };
        let scratch_bytes = slice_bytes * passes.len() as u64;
        let total = p.m * p.n;
        let wg = total.div_ceil(reduce::THREADS as usize);
        let gx = wg.min(l.max_groups[0] as usize);
        let gy = wg.div_ceil(gx);
        let fits = scratch_bytes <= l.max_range.min(l.max_allocation)
            && gy <= l.max_groups[1] as usize
            && total <= u32::MAX as usize;
        if passes.len() < 2 || !fits {
            return false;
        }
        // The slices write disjoint scratch slices: no barrier between them. They use the plain
        // epilogue: alpha and beta are the reduction's.
        for pass in &passes {
            self.dispatches.push(Dispatch {
                kernel: Kernel::Gemm(partial),
                bindings: [(Operand::A, pass.a), (Operand::B, pass.b), (Operand::Scratch, pass.c)],
                push: pass_push(p, pass, 0, 0),
                groups: pass.groups,
                after_previous: false,
                aux: None,
                vectors: [None; 3],
            });
        }
        let whole = Window::from_start(scratch_bytes);
        self.dispatches.push(Dispatch {
            kernel: reduce,
            bindings: [(Operand::Scratch, whole), (Operand::Scratch, whole), (Operand::C, c)],
            push: PushConstants {
                m: p.m as u32,
                n: p.n as u32,
                k: passes.len() as u32,
                lda_vec: (slice_bytes / p.c_bytes as u64) as u32,
                ldb_vec: gx as u32,
                ldc: p.ldc as u32,
                c_off: (c.start / p.c_bytes as u64) as u32,
                alpha_bits,
                beta_bits,
                ..Default::default()
            },
            groups: [gx as u32, gy as u32, 1],
            after_previous: true,
            aux: None,
            vectors: [None; 3],
        });
        self.scratch_bytes = scratch_bytes;
        true
    }

    /// The accurate split in one pass: the largest magnitudes of A and B into two zeroed scratch
    /// words, then the GEMM reading them. Split-K is not used; a problem beyond one pass of the
    /// device's limits is an error that points to the exact mode.
    fn plan_accurate_split(
        &mut self,
        passes: &[Pass],
        limits: &DispatchLimits,
        (alpha_bits, beta_bits): (u32, u32),
        kernel: KernelKey,
        vectors: [Option<(Operand, Window)>; 3],
    ) -> Result<()> {
        if self.problem.batch.count > 1 {
            return Err(Error::Unsupported(
                "the accurate f32 mode runs one GEMM at a time; a batch takes ComputeMode::Exact or a fast mode".into(),
            ));
        }
        let [pass] = passes else {
            return Err(Error::TooLarge(format!(
                "the accurate f32 mode runs a GEMM in one pass, and this one needs {} for the device's limits; use ComputeMode::Exact",
                passes.len()
            )));
        };
        let p = &self.problem;
        let words = scale_words(limits);
        let (a, b) = (p.a_layout.outer_inner(p.m, p.k), p.b_layout.outer_inner(p.k, p.n));
        self.dispatches
            .push(absmax_dispatch((Operand::A, pass.a), a, p.lda, (0, words)));
        self.dispatches
            .push(absmax_dispatch((Operand::B, pass.b), b, p.ldb, (1, words)));
        self.dispatches.push(Dispatch {
            kernel: Kernel::Gemm(kernel),
            bindings: [(Operand::A, pass.a), (Operand::B, pass.b), (Operand::C, pass.c)],
            aux: Some((Operand::Scratch, words)),
            vectors,
            push: pass_push(p, pass, alpha_bits, beta_bits),
            groups: pass.groups,
            after_previous: true,
        });
        self.scratch_bytes = words.bind_range;
        self.zeroed_scratch_bytes = 16;
        Ok(())
    }

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

/// The sizes to build into the kernel of `req` planned as `passes` ([`PlanRequest::specialize`]):
/// one pass over the whole problem, one GEMM, a workgroup-scope scheme, operands read as stored.
fn fixed_sizes(req: &PlanRequest, passes: &[Pass]) -> Option<FixedSizes> {
    let p = &req.problem;
    let [pass] = passes else { return None };
    let whole = (pass.m, pass.n, pass.k) == (p.m, p.n, p.k) && p.batch.count == 1;
    let kernel = req.scheme.scope() == crate::tiling::KernelScope::Workgroup && req.loads == [Load::Native; 2];
    if !(req.specialize && whole && kernel) {
        return None;
    }
    let u = |v: usize| u32::try_from(v).ok();
    Some(FixedSizes {
        n: u(p.n)?,
        k: u(p.k)?,
        lda: u(p.lda)?,
        ldb: u(p.ldb)?,
        ldc: u(p.ldc)?,
    })
}

/// The kernel's push constants for one pass of `p`.
fn pass_push(p: &Problem, pass: &Pass, alpha_bits: u32, beta_bits: u32) -> PushConstants {
    let vec = u64::from(VECTOR_BYTES);
    // Strides only matter with more than one entry in the grid; then the windows (at most
    // maxStorageBufferRange, a u32) span them, so they fit 32 bits.
    let stride = |j: usize, unit: u64| {
        if pass.batch > 1 {
            (p.batch.strides[j] as u64 * [p.a_bytes, p.b_bytes, p.c_bytes][j] as u64 / unit) as u32
        } else {
            0
        }
    };
    PushConstants {
        m: pass.m as u32,
        n: pass.n as u32,
        k: pass.k as u32,
        lda_vec: (p.lda as u64 * p.a_bytes as u64 / vec) as u32,
        ldb_vec: (p.ldb as u64 * p.b_bytes as u64 / vec) as u32,
        ldc: p.ldc as u32,
        a_off_vec: (pass.a.start / vec) as u32,
        b_off_vec: (pass.b.start / vec) as u32,
        c_off: (pass.c.start / p.c_bytes as u64) as u32,
        alpha_bits,
        beta_bits,
        a_batch_vec: stride(0, vec),
        b_batch_vec: stride(1, vec),
        c_batch: stride(2, p.c_bytes as u64),
        row0: pass.m0 as u32,
        col0: pass.n0 as u32,
    }
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
