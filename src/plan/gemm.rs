//! One GEMM as plain data: the validated problem, the kernels it needs, and the dispatches it
//! records, in order, with their push constants, buffer windows and the barriers between them.
//! [`GemmPlan::new`] is pure, so what a GEMM will do is tested without a device; recording it
//! (`crate::record`) only resolves kernels to pipelines and operands to buffers.

use super::passes::{choose_split_k, plan, plan_split_k, DispatchLimits, Pass, Problem, Window};
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::kernel::{absmax, reduce, Epilogue, KernelKey, Load, Probe, PushConstants};
use crate::tiling::{Layout, TileScheme, VECTOR_BYTES};
use serde::Serialize;

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
}

/// A kernel a plan dispatches; the recorder turns it into a pipeline.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Kernel {
    /// A GEMM kernel.
    Gemm(KernelKey),
    /// The largest-magnitude pass of the accurate split ([`crate::kernel::absmax`]).
    AbsMax,
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

/// One dispatch of a plan.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dispatch {
    /// What runs.
    pub kernel: Kernel,
    /// Bindings 0, 1 and 2: which buffer, and which window of it.
    pub bindings: [(Operand, Window); 3],
    /// Binding 3, for kernels that read it (the accurate split's scale words).
    pub aux: Option<(Operand, Window)>,
    /// The push constants.
    pub push: PushConstants,
    /// Workgroups along x and y.
    pub groups: [u32; 2],
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
        let (p, config, scheme) = (&req.problem, req.config, req.scheme);
        let rt = config.result_type;
        let alpha_bits = scalar_bits("alpha", req.alpha, rt)?;
        let beta_bits = scalar_bits("beta", req.beta, rt)?;
        let one_bits = scalar_bits("beta", 1.0, rt)?;
        let geometry = scheme.geometry(&config);
        let passes = plan(p, &geometry, limits)?;
        let key = |alpha: bool, beta: bool| KernelKey {
            config,
            scheme,
            a_layout: p.a_layout,
            b_layout: p.b_layout,
            epilogue: Epilogue { alpha, beta },
            loads: req.loads,
            probe: Probe::Full,
        };
        let epilogue = Epilogue {
            alpha: req.alpha != 1.0,
            beta: req.beta != 0.0,
        };
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
            reads_c: epilogue.beta,
            transposed: false,
        };
        if req.loads == [Load::Split; 2] {
            out.plan_accurate_split(
                &passes,
                limits,
                (alpha_bits, beta_bits),
                key(epilogue.alpha, epilogue.beta),
            )?;
            return Ok(out);
        }
        if let [single] = passes.as_slice() {
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
        for (i, pass) in passes.iter().enumerate() {
            // Passes along K accumulate into the C the previous one wrote (beta = 1).
            let (kernel, beta) = if pass.accumulate {
                (key(epilogue.alpha, true), one_bits)
            } else {
                (key(epilogue.alpha, epilogue.beta), beta_bits)
            };
            out.dispatches.push(Dispatch {
                kernel: Kernel::Gemm(kernel),
                bindings: [(Operand::A, pass.a), (Operand::B, pass.b), (Operand::C, pass.c)],
                push: pass_push(p, pass, alpha_bits, beta),
                groups: pass.groups,
                after_previous: i > 0 && pass.accumulate,
                aux: None,
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
        let fits = scratch_bytes <= l.max_range && gy <= l.max_groups[1] as usize && total <= u32::MAX as usize;
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
            });
        }
        let whole = Window {
            bind_offset: 0,
            bind_range: scratch_bytes,
            start: 0,
        };
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
            groups: [gx as u32, gy as u32],
            after_previous: true,
            aux: None,
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
    ) -> Result<()> {
        let [pass] = passes else {
            return Err(Error::TooLarge(format!(
                "the accurate f32 mode runs a GEMM in one pass, and this one needs {} for the device's limits; use ComputeMode::Exact",
                passes.len()
            )));
        };
        let p = &self.problem;
        let words = Window {
            bind_offset: 0,
            bind_range: limits.offset_alignment.max(16),
            start: 0,
        };
        // Each operand in storage order: rows of its contiguous dimension, in 16-byte vectors.
        let operand = |which, window: Window, (rows, cols): (usize, usize), layout: Layout, ld: usize, word| {
            let (outer, inner) = layout.outer_inner(rows, cols);
            let vectors = outer * (inner * 4).div_ceil(VECTOR_BYTES as usize);
            let groups = vectors
                .div_ceil(absmax::THREADS as usize)
                .min(absmax::MAX_GROUPS as usize) as u32;
            Dispatch {
                kernel: Kernel::AbsMax,
                bindings: [(which, window), (which, window), (Operand::Scratch, words)],
                aux: None,
                push: PushConstants {
                    m: outer as u32,
                    n: (inner * 4).div_ceil(VECTOR_BYTES as usize) as u32,
                    lda_vec: (ld * 4 / VECTOR_BYTES as usize) as u32,
                    a_off_vec: (window.start / u64::from(VECTOR_BYTES)) as u32,
                    c_off: word,
                    k: groups,
                    ..Default::default()
                },
                groups: [groups, 1],
                after_previous: false,
            }
        };
        self.dispatches
            .push(operand(Operand::A, pass.a, (p.m, p.k), p.a_layout, p.lda, 0));
        self.dispatches
            .push(operand(Operand::B, pass.b, (p.k, p.n), p.b_layout, p.ldb, 1));
        self.dispatches.push(Dispatch {
            kernel: Kernel::Gemm(kernel),
            bindings: [(Operand::A, pass.a), (Operand::B, pass.b), (Operand::C, pass.c)],
            aux: Some((Operand::Scratch, words)),
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

    /// The GEMM kernel of the first GEMM dispatch (the partial-product kernel under split-K).
    pub fn main_kernel(&self) -> KernelKey {
        self.dispatches
            .iter()
            .find_map(|d| match d.kernel {
                Kernel::Gemm(key) => Some(key),
                _ => None,
            })
            .expect("every plan has a GEMM dispatch")
    }

    /// Whether the plan runs split-K.
    pub fn is_split_k(&self) -> bool {
        self.scratch_bytes > 0
    }

    /// The GEMM dispatches as passes of the problem (for inspection): their extents along M, N, K.
    pub fn gemm_dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.dispatches.iter().filter(|d| matches!(d.kernel, Kernel::Gemm(_)))
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
    }
}

/// Padded leading dimension: the contiguous extent rounded up to whole 16-byte vectors.
pub fn device_ld(inner: usize, elem_bytes: usize) -> usize {
    inner.next_multiple_of(VECTOR_BYTES as usize / elem_bytes.min(VECTOR_BYTES as usize))
}

/// The kernel's push constants for one pass of `p`.
fn pass_push(p: &Problem, pass: &Pass, alpha_bits: u32, beta_bits: u32) -> PushConstants {
    let vec = u64::from(VECTOR_BYTES);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ComponentType::*;
    use crate::tiling::test_support::{cfg, h200_limits};

    fn request(m: usize, n: usize, k: usize, alpha: f64, beta: f64, split_k: SplitK) -> PlanRequest {
        let config = cfg(16, 16, 16, F16, F32);
        let scheme = TileScheme::new(&config, &h200_limits(), 32, (1, 2), (2, 2), 32).unwrap();
        PlanRequest {
            problem: device_problem((m, n, k), (Layout::RowMajor, Layout::ColMajor), (2, 2, 4)),
            config,
            scheme,
            loads: [Load::Native; 2],
            alpha,
            beta,
            split_k,
        }
    }

    fn unlimited() -> DispatchLimits {
        DispatchLimits::from_device(&h200_limits())
    }

    #[test]
    fn one_pass_binds_a_b_c_with_the_callers_scalars() {
        let p = GemmPlan::new(&request(100, 70, 50, 2.0, 0.5, SplitK::Slices(1)), &unlimited()).unwrap();
        assert_eq!(p.dispatches.len(), 1);
        assert_eq!(p.scratch_bytes, 0);
        assert!(p.reads_c);
        let d = &p.dispatches[0];
        let Kernel::Gemm(key) = d.kernel else {
            panic!("{:?}", d.kernel)
        };
        assert_eq!(
            key.epilogue,
            Epilogue {
                alpha: true,
                beta: true
            }
        );
        assert_eq!(d.bindings.map(|b| b.0), [Operand::A, Operand::B, Operand::C]);
        assert_eq!((d.push.m, d.push.n, d.push.k), (100, 70, 50));
        assert_eq!(
            (d.push.alpha_bits, d.push.beta_bits),
            (2.0f32.to_bits(), 0.5f32.to_bits())
        );
        // 32x64 tiles: 2 columns of tiles, 4 rows.
        assert_eq!(d.groups, [2, 4]);
        assert!(!d.after_previous);
        // lda of row-major A (K=50 f16) padded to 56; ldb of column-major B (K contiguous) too.
        assert_eq!((d.push.lda_vec, d.push.ldb_vec, d.push.ldc), (7, 7, 72));
        // beta = 0 leaves C unread and the beta term out of the kernel.
        let p = GemmPlan::new(&request(100, 70, 50, 1.0, 0.0, SplitK::Slices(1)), &unlimited()).unwrap();
        assert!(!p.reads_c);
        assert_eq!(p.main_kernel().epilogue, Epilogue::default());
    }

    #[test]
    fn k_chunks_accumulate_after_a_barrier() {
        // Column-major A and row-major B (K outermost in both) in windows of 4 KiB: only K chunks
        // shrink them.
        let limits = DispatchLimits {
            max_groups: [65535; 2],
            max_range: 4 << 10,
            offset_alignment: 16,
        };
        let mut req = request(16, 32, 1000, 1.0, 3.0, SplitK::Slices(1));
        req.problem = device_problem((16, 32, 1000), (Layout::ColMajor, Layout::RowMajor), (2, 2, 4));
        let p = GemmPlan::new(&req, &limits).unwrap();
        assert!(p.dispatches.len() > 1);
        assert_eq!(p.dispatches.iter().map(|d| d.push.k as usize).sum::<usize>(), 1000);
        let first = &p.dispatches[0];
        assert!(!first.after_previous);
        assert_eq!(first.push.beta_bits, 3.0f32.to_bits());
        for d in &p.dispatches[1..] {
            assert!(d.after_previous, "an accumulating pass waits for the one before");
            assert_eq!(d.push.beta_bits, 1.0f32.to_bits());
            let Kernel::Gemm(key) = d.kernel else { panic!() };
            assert!(key.epilogue.beta);
        }
        // With beta != 0 every pass runs the same kernel; with beta = 0 the first one skips C.
        assert_eq!(p.kernels().len(), 1, "{:?}", p.kernels());
        req.beta = 0.0;
        assert_eq!(GemmPlan::new(&req, &limits).unwrap().kernels().len(), 2);
    }

    #[test]
    fn split_k_writes_scratch_then_reduces() {
        let p = GemmPlan::new(&request(16, 64, 4096, 0.5, -1.0, SplitK::Slices(4)), &unlimited()).unwrap();
        assert!(p.is_split_k());
        let (slices, reduce) = p.dispatches.split_at(4);
        assert!(slices
            .iter()
            .all(|d| d.bindings[2].0 == Operand::Scratch && !d.after_previous));
        assert!(slices.iter().all(|d| d.push.alpha_bits == 0 && d.push.beta_bits == 0));
        assert_eq!(slices.iter().map(|d| d.push.k).sum::<u32>(), 4096);
        let [r] = reduce else { panic!("{reduce:?}") };
        assert!(r.after_previous);
        assert_eq!(
            r.bindings.map(|b| b.0),
            [Operand::Scratch, Operand::Scratch, Operand::C]
        );
        assert_eq!(r.push.k, 4, "the reduction sums 4 slices");
        assert_eq!(
            (r.push.alpha_bits, r.push.beta_bits),
            (0.5f32.to_bits(), (-1.0f32).to_bits())
        );
        let slice = (16 * 64 * 4) as u64;
        assert_eq!(p.scratch_bytes, 4 * slice);
        assert!(matches!(p.kernels()[1], Kernel::Reduce { result_type: F32, .. }));
        // The automatic rule splits this skinny problem on a GPU, never on a CPU driver.
        let auto = |cpu_device| {
            GemmPlan::new(
                &request(16, 64, 4096, 1.0, 0.0, SplitK::Auto { cpu_device }),
                &unlimited(),
            )
            .unwrap()
            .is_split_k()
        };
        assert!(auto(false));
        assert!(!auto(true));
    }

    #[test]
    fn bad_scalars_and_shapes_are_typed_errors() {
        let e = GemmPlan::new(&request(8, 8, 8, f64::NAN, 0.0, SplitK::Slices(1)), &unlimited()).unwrap_err();
        assert!(matches!(e, Error::InvalidScalar { name: "alpha", .. }), "{e}");
        assert!(scalar_bits("beta", 0.5, I32).is_err());
        assert!(scalar_bits("beta", 1e6, F16).is_err());
        assert_eq!(scalar_bits("beta", -2.0, I32).unwrap(), (-2i32) as u32);
        assert!(matches!(
            check_shapes((3, 4), (5, 6), (3, 6)),
            Err(Error::ShapeMismatch(_))
        ));
        assert!(matches!(
            check_shapes((3, 4), (4, 6), (6, 3)),
            Err(Error::ShapeMismatch(_))
        ));
        assert!(matches!(
            check_shapes((0, 4), (4, 6), (0, 6)),
            Err(Error::ZeroSize { .. })
        ));
        assert!(matches!(
            check_shapes((MAX_DIM + 1, 1), (1, 1), (MAX_DIM + 1, 1)),
            Err(Error::TooLarge(_))
        ));
        assert_eq!(check_shapes((3, 4), (4, 6), (3, 6)).unwrap(), (3, 6, 4));
    }

    #[test]
    fn accurate_split_finds_magnitudes_then_multiplies_in_one_pass() {
        let mut req = request(100, 70, 4096, 1.0, 0.0, SplitK::Slices(4));
        req.problem = device_problem((100, 70, 4096), (Layout::RowMajor, Layout::ColMajor), (4, 4, 4));
        req.loads = [Load::Split; 2];
        let p = GemmPlan::new(&req, &unlimited()).unwrap();
        let kinds: Vec<_> = p.dispatches.iter().map(|d| d.kernel).collect();
        assert!(
            matches!(kinds[..], [Kernel::AbsMax, Kernel::AbsMax, Kernel::Gemm(_)]),
            "{kinds:?}"
        );
        let [a, b, gemm] = &p.dispatches[..] else {
            unreachable!()
        };
        // A's rows of 4096 f32 (1024 vectors), B (column-major, K contiguous) likewise, into words 0 and 1.
        assert_eq!((a.push.m, a.push.n, a.push.c_off), (100, 1024, 0));
        assert_eq!((b.push.m, b.push.n, b.push.c_off), (70, 1024, 1));
        assert!(!a.after_previous && !b.after_previous && gemm.after_previous);
        assert_eq!(gemm.aux.map(|x| x.0), Some(Operand::Scratch));
        assert_eq!(p.zeroed_scratch_bytes, 16);
        assert!(!p.is_split_k() || p.scratch_bytes == 16, "split-K is not used");
        assert_eq!(p.main_kernel().loads, [Load::Split; 2]);
        // Beyond one pass of the limits: an error that names the way out.
        let tight = DispatchLimits {
            max_groups: [65535; 2],
            max_range: 1 << 20,
            offset_alignment: 16,
        };
        let e = GemmPlan::new(&req, &tight).unwrap_err();
        assert!(matches!(e, Error::TooLarge(ref m) if m.contains("Exact")), "{e}");
        // Element sizes must match the loads.
        req.problem = device_problem((100, 70, 4096), (Layout::RowMajor, Layout::ColMajor), (2, 2, 4));
        assert!(matches!(
            GemmPlan::new(&req, &unlimited()),
            Err(Error::InvalidOperand(_))
        ));
    }

    #[test]
    fn probes_replace_every_gemm_kernel() {
        let p = GemmPlan::new(&request(16, 64, 4096, 1.0, 0.0, SplitK::Slices(3)), &unlimited()).unwrap();
        let probed = p.with_probe(Probe::NoMma);
        assert!(probed
            .gemm_dispatches()
            .all(|d| matches!(d.kernel, Kernel::Gemm(k) if k.probe == Probe::NoMma)));
        assert!(matches!(
            probed.dispatches.last().unwrap().kernel,
            Kernel::Reduce { .. }
        ));
    }
}
