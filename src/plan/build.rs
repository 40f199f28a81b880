//! Building a [`GemmPlan`] from a [`PlanRequest`]: the passes that fit the device, split-K, the
//! accurate split, the copies first (`super::narrow`), each dispatch's push constants and
//! windows. Pure, so what a GEMM will do is tested without a device.

use super::gemm::{fused_vectors, scalar_bits, Dispatch, GemmPlan, Kernel, Operand, PlanRequest, SplitK};
use super::narrow::{absmax_dispatch, scale_words};
use super::passes::{choose_split_k, plan, plan_split_k, DispatchLimits, Pass, Problem, Window};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::{reduce, Epilogue, FixedSizes, KernelKey, Load, Probe, PushConstants};
use crate::tiling::VECTOR_BYTES;

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
        check_element_sizes(req)?;
        // A fused epilogue applies alpha and beta in f32.
        let st = if fused.is_fused() { ComponentType::F32 } else { rt };
        let alpha_bits = scalar_bits("alpha", req.alpha, st)?;
        let beta_bits = scalar_bits("beta", req.beta, st)?;
        let one_bits = scalar_bits("beta", 1.0, st)?;
        let geometry = scheme.geometry(&config);
        let passes = plan(p, &geometry, limits)?;
        let epilogue = Epilogue {
            alpha: req.alpha != 1.0,
            beta: req.beta != 0.0,
            ..fused
        };
        let vectors = fused_vectors(p, &fused, limits)?;
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
                gemm_key(req, (epilogue.alpha, epilogue.beta)),
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
            if out.split_where_worth(req, single, epilogue, (alpha_bits, beta_bits), limits) {
                return Ok(out);
            }
        }
        out.plan_passes(req, &passes, epilogue, (alpha_bits, beta_bits, one_bits), vectors);
        Ok(out)
    }

    /// Adds a dispatch per pass of `req`; the passes after the first along K accumulate into
    /// the C the previous one wrote (beta = 1: `one_bits`).
    fn plan_passes(
        &mut self,
        req: &PlanRequest,
        passes: &[Pass],
        epilogue: Epilogue,
        (alpha_bits, beta_bits, one_bits): (u32, u32, u32),
        vectors: [Option<(Operand, Window)>; 3],
    ) {
        let p = &req.problem;
        // Passes cut along K by the device's limits keep their sizes pushed: one pipeline for all.
        let fixed = match passes {
            [pass] if pass.k == p.k => fixed_sizes(req, pass),
            _ => None,
        };
        for (i, pass) in passes.iter().enumerate() {
            let (kernel, beta) = if pass.accumulate {
                (gemm_key(req, (epilogue.alpha, true)), one_bits)
            } else {
                (gemm_key(req, (epilogue.alpha, epilogue.beta)), beta_bits)
            };
            self.dispatches.push(Dispatch {
                kernel: Kernel::Gemm(KernelKey { fixed, ..kernel }),
                bindings: [(Operand::A, pass.a), (Operand::B, pass.b), (Operand::C, pass.c)],
                push: pass_push(p, pass, alpha_bits, beta),
                groups: pass.groups,
                after_previous: i > 0 && pass.accumulate,
                aux: None,
                vectors,
            });
        }
    }

    /// Adds split-K's slices over `single`'s grid and their reduction (applying `epilogue`'s
    /// alpha and beta), as many as `req` asks for or, by default, as fill the GPU; false
    /// (nothing added) where that is one slice or the slices would not fit the limits.
    fn split_where_worth(
        &mut self,
        req: &PlanRequest,
        single: &Pass,
        epilogue: Epilogue,
        bits: (u32, u32),
        limits: &DispatchLimits,
    ) -> bool {
        let scheme = req.scheme;
        let splits = match req.split_k {
            SplitK::Slices(s) => s,
            SplitK::Auto { cpu_device } => {
                let tiles = single.groups[0] as usize * single.groups[1] as usize;
                choose_split_k(tiles, scheme.subgroups() as usize, req.problem.k, cpu_device)
            }
        };
        let reduce = Kernel::Reduce {
            result_type: req.config.result_type,
            epilogue,
            subgroup_size: scheme.subgroup_size(),
        };
        splits > 1 && self.plan_split(req, limits, splits, reduce, single.c, bits)
    }

    /// Adds split-K's slices of `req` and their reduction; false (nothing added) where its
    /// scratch buffer or reduction would not fit the limits.
    fn plan_split(
        &mut self,
        req: &PlanRequest,
        l: &DispatchLimits,
        splits: u32,
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
        // epilogue: alpha and beta are the reduction's. Each builds its depth in where sizes
        // are built in (the last slice may be shallower: a second pipeline).
        let partial = gemm_key(req, (false, false));
        for pass in &passes {
            let fixed = fixed_sizes(req, pass);
            self.dispatches.push(Dispatch {
                kernel: Kernel::Gemm(KernelKey { fixed, ..partial }),
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
}

/// The GEMM kernel of `req` applying alpha and beta where `(alpha, beta)` say, the rest of
/// its fused epilogue as asked.
fn gemm_key(req: &PlanRequest, (alpha, beta): (bool, bool)) -> KernelKey {
    KernelKey {
        config: req.config,
        scheme: req.scheme,
        a_layout: req.problem.a_layout,
        b_layout: req.problem.b_layout,
        epilogue: Epilogue {
            alpha,
            beta,
            ..req.epilogue
        },
        loads: req.loads,
        probe: Probe::Full,
        grouped: false,
        fixed: None,
    }
}

/// A typed error where C's elements are not what the plan stores, the loads are not ones the
/// kernel takes, or A's or B's elements are not what the plan loads.
fn check_element_sizes(req: &PlanRequest) -> Result<()> {
    let p = &req.problem;
    let out_type = req.epilogue.output_type(req.config.result_type);
    if out_type.size_bytes() as usize != p.c_bytes {
        return Err(Error::InvalidOperand(format!(
            "C has {}-byte elements but the plan stores {out_type}",
            p.c_bytes
        )));
    }
    gemm_key(req, (false, false)).check_loads()?;
    let ct = req.config.component_type;
    for (name, load, bytes) in [("A", req.loads[0], p.a_bytes), ("B", req.loads[1], p.b_bytes)] {
        let stored = load.storage_type(ct);
        if stored.size_bytes() as usize != bytes {
            return Err(Error::InvalidOperand(format!(
                "{name} has {bytes}-byte elements but the plan loads it as {stored}"
            )));
        }
    }
    Ok(())
}

/// The sizes to build into the kernel that runs `pass` of `req` ([`PlanRequest::specialize`]):
/// a pass over all of M and N of one GEMM, a workgroup-scope scheme, operands read as stored.
/// K is the pass's: the whole K, or a split-K slice's depth (a pipeline per depth). On the H200
/// slices with their depth built in ran 2.7-5.6% faster than with sizes pushed (512x4096x4096
/// and 512x4096x11008 in two, docs/perf/h200-49-4.txt); they compile in about 3 s where the
/// depth is a whole number of the kernel's iterations, in 5-10 s where a tail of single steps
/// is left, as long as the kernel with sizes pushed (h200-49-2, -3).
fn fixed_sizes(req: &PlanRequest, pass: &Pass) -> Option<FixedSizes> {
    let p = &req.problem;
    let whole = (pass.m, pass.n) == (p.m, p.n) && p.batch.count == 1;
    let kernel = req.scheme.scope() == crate::tiling::KernelScope::Workgroup && req.loads == [Load::Native; 2];
    if !(req.specialize && whole && kernel) {
        return None;
    }
    let u = |v: usize| u32::try_from(v).ok();
    Some(FixedSizes {
        n: u(p.n)?,
        k: u(pass.k)?,
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
