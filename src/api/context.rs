//! [`Context`]: a device with its pipelines, buffers and caches, and the GEMM calls on it. Each call
//! validates its input, makes a [`GemmPlan`] (`crate::plan`), records it (`crate::record`) and
//! submits it (`crate::submit`); nothing reaches the GPU before the plan exists.

use super::matrix::{
    bytes_of_layout, check_matrix, pack, poison_pattern, unpack, DeviceMatrix, Element, MatMut, MatRef,
};
use super::options::{ContextOptions, GemmOptions};
use crate::config::{choose_config, ComponentType, GPUSubgroupMatrixConfig};
use crate::device::{Device, DeviceInfo, DeviceKind, Instance, InstanceOptions, ValidationMessages};
use crate::error::{Error, Result};
use crate::kernel::KernelKey;
use crate::memory::{Buffer, BufferKind, BufferPool};
use crate::pipeline::Pipelines;
use crate::plan::{check_shapes, device_ld, device_problem, DispatchLimits, GemmPlan, PlanRequest, SplitK};
use crate::record::{record_plan, Access, Bindings, Recording};
use crate::submit::Submitter;
use crate::tiling::{
    candidate_schemes, pick_scheme, preferred_workgroup_schemes, small_problem_scheme, workgroup_candidates, Layout,
    TileScheme,
};
use crate::tune::TuneCache;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// The most K slices [`GemmOptions::split_k`] takes (the automatic rule stops at 16).
pub const MAX_SPLIT_K: u32 = 64;

/// A device with its pipelines and buffers. Cheap to share (`&Context` is `Sync`).
pub struct Context {
    pub(crate) submitter: Submitter,
    pub(crate) pipelines: Pipelines,
    pub(crate) pool: BufferPool,
    limits: DispatchLimits,
    pub(crate) options: ContextOptions,
    pub(crate) tune_cache: Option<Mutex<TuneCache>>,
    /// [`Context::choose_scheme`]'s candidates per config, built on first use: checking every
    /// scheme against the device on each call cost more host time (~5 us) than a 64x64x64
    /// GEMM's GPU time.
    scheme_lists: Mutex<HashMap<GPUSubgroupMatrixConfig, Arc<SchemeLists>>>,
    pub(crate) device: Arc<Device>,
}

/// The schemes [`Context::choose_scheme`] picks from for one config, best first.
struct SchemeLists {
    /// The measured-faster workgroup-scope schemes, then the subgroup-scope ones.
    ordered: Vec<TileScheme>,
    /// For problems no candidate's grid fills: 2 subgroups of 2x2 fragments (32x64 with 16x16
    /// fragments), else the smallest subgroup-scope scheme.
    small: Option<TileScheme>,
}

impl Context {
    /// A context on the best usable device (or `VK_SGMAT_DEVICE`).
    pub fn new() -> Result<Self> {
        Self::with_options(ContextOptions::default())
    }

    /// A context with explicit options.
    pub fn with_options(options: ContextOptions) -> Result<Self> {
        let instance = Instance::new(&InstanceOptions {
            validation: options.validation,
        })?;
        let device = Device::new(instance, &options.device)?;
        let device_limits = DispatchLimits::from_device(&device.info().limits);
        let limits = match options.limits_override {
            Some(l) => {
                l.check_within(&device_limits)?;
                l
            }
            None => device_limits,
        };
        let tune_cache = options
            .autotune
            .as_deref()
            .map(|path| Mutex::new(TuneCache::open(path, device.info())));
        Ok(Self {
            submitter: Submitter::new(device.clone())?,
            pipelines: Pipelines::new(device.clone(), options.pipeline_cache.clone())?,
            pool: BufferPool::new(device.clone()),
            limits,
            options,
            tune_cache,
            scheme_lists: Mutex::new(HashMap::new()),
            device,
        })
    }

    /// What is known about the device.
    pub fn device_info(&self) -> &DeviceInfo {
        self.device.info()
    }

    /// Validation-layer warnings and errors so far (empty when validation is off).
    pub fn validation_messages(&self) -> &Arc<ValidationMessages> {
        self.device.instance().validation_messages()
    }

    /// Whether the validation layer is on.
    pub fn validation_enabled(&self) -> bool {
        self.device.instance().validation_enabled()
    }

    /// Number of pipelines created so far.
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.len()
    }

    /// The driver's statistics for a kernel (e.g. registers per invocation), creating its
    /// pipeline if needed; empty where the driver lacks `VK_KHR_pipeline_executable_properties`.
    pub fn kernel_statistics(&self, key: &KernelKey) -> Result<Vec<(String, String)>> {
        Ok(self.pipelines.get(key)?.statistics.clone())
    }

    /// Every config the device offers (standard, then extended).
    pub fn configs(&self) -> Vec<GPUSubgroupMatrixConfig> {
        self.device.info().all_configs()
    }

    /// The config used for these element types (see [`GemmOptions::shape`]).
    pub fn choose_config(
        &self,
        component_type: ComponentType,
        result_type: ComponentType,
        shape: Option<(u32, u32, u32)>,
    ) -> Result<GPUSubgroupMatrixConfig> {
        let all = self.configs();
        choose_config(&all, component_type, result_type, shape).ok_or(Error::NoConfig {
            component_type,
            result_type,
            available: all,
        })
    }

    /// The subgroup size kernels pin: 32 where the device allows it (NVIDIA's warp, AMD's wave32,
    /// Intel's widest), else the device's largest.
    pub fn subgroup_size(&self) -> u32 {
        let l = &self.device.info().limits;
        if l.min_subgroup_size <= 32 && 32 <= l.max_subgroup_size {
            32
        } else {
            l.max_subgroup_size.max(l.subgroup_size)
        }
    }

    pub(crate) fn is_cpu(&self) -> bool {
        self.device.info().kind == DeviceKind::Cpu
    }

    /// Tile schemes valid on this device for `config`: the subgroup-scope ones, largest first,
    /// then the workgroup-scope ones where the device offers `VK_NV_cooperative_matrix2`.
    pub fn schemes(&self, config: &GPUSubgroupMatrixConfig) -> Vec<TileScheme> {
        let info = self.device.info();
        let mut out = candidate_schemes(config, &info.limits, self.subgroup_size(), self.is_cpu());
        out.extend(workgroup_candidates(config, info, self.subgroup_size()));
        out
    }

    /// The default scheme for an `m x n` output: [`pick_scheme`] over the measured-faster
    /// workgroup-scope schemes of [`preferred_workgroup_schemes`], then the subgroup-scope ones
    /// of [`candidate_schemes`] (largest grid-filling tile first; a 32x64 tile for small
    /// problems).
    pub fn choose_scheme(&self, config: &GPUSubgroupMatrixConfig, m: usize, n: usize) -> Result<TileScheme> {
        let lists = self.scheme_lists(config);
        pick_scheme(&lists.ordered, lists.small, config, (m, n), self.is_cpu())
            .ok_or_else(|| Error::InvalidTileScheme(format!("no tile scheme fits {config} on this device")))
    }

    /// [`Context::choose_scheme`]'s candidates for `config`, built once per context.
    fn scheme_lists(&self, config: &GPUSubgroupMatrixConfig) -> Arc<SchemeLists> {
        let mut map = self.scheme_lists.lock().unwrap_or_else(|e| e.into_inner());
        let lists = map.entry(*config).or_insert_with(|| {
            let info = self.device.info();
            let sg = self.subgroup_size();
            let subgroup_scope = candidate_schemes(config, &info.limits, sg, self.is_cpu());
            let small = small_problem_scheme(&subgroup_scope);
            let mut ordered = preferred_workgroup_schemes(config, info, sg);
            ordered.extend(subgroup_scope);
            Arc::new(SchemeLists { ordered, small })
        });
        lists.clone()
    }

    /// Uploads a host matrix.
    pub fn upload<T: Element>(&self, m: MatRef<'_, T>) -> Result<DeviceMatrix<T>> {
        check_matrix("matrix", &m)?;
        let dm = self.alloc_matrix::<T>(m.rows, m.cols, m.layout)?;
        let size = dm.buffer.size();
        let mut staging = self.pool.take(size, BufferKind::Upload)?;
        pack(&m, dm.ld, staging.mapped_mut()?);
        let res = self.submitter.run(self.pipelines.set_layout, 0, |rec| {
            rec.copy(staging.raw(), dm.buffer.raw(), size);
            Ok(())
        });
        self.pool.give(staging);
        res.map(|()| dm)
    }

    /// A zero row-major `rows x cols` device matrix (for C).
    pub fn zeros<T: Element>(&self, rows: usize, cols: usize) -> Result<DeviceMatrix<T>> {
        if rows == 0 || cols == 0 {
            return Err(Error::ZeroSize { m: rows, n: cols, k: 0 });
        }
        let dm = self.alloc_matrix::<T>(rows, cols, Layout::RowMajor)?;
        let size = dm.buffer.size();
        self.submitter.run(self.pipelines.set_layout, 0, |rec| {
            rec.fill(dm.buffer.raw(), size, 0);
            Ok(())
        })?;
        Ok(dm)
    }

    /// Downloads a device matrix into a row-major host matrix of the same shape (for a
    /// column-major device matrix, the host gets its transpose's storage: same element order).
    pub fn download<T: Element>(&self, m: &DeviceMatrix<T>, out: MatMut<'_, T>) -> Result<()> {
        let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
        let (oo, oi) = (out.rows, out.cols);
        if (oo, oi) != (outer, inner) {
            return Err(Error::ShapeMismatch(format!(
                "download target is {oo}x{oi}, the device matrix stores {outer}x{inner}"
            )));
        }
        check_matrix("download target", &out.as_ref())?;
        self.check_owned(&m.buffer)?;
        let size = m.buffer.size();
        let mut staging = self.pool.take(size, BufferKind::Readback)?;
        let res = self.submitter.run(self.pipelines.set_layout, 0, |rec| {
            rec.copy(m.buffer.raw(), staging.raw(), size);
            rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
            Ok(())
        });
        if res.is_ok() {
            unpack(staging.mapped_mut()?, m.ld, out);
        }
        self.pool.give(staging);
        res
    }

    /// `c = a * b` on host matrices.
    pub fn gemm<TA: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: MatRef<'_, TA>,
        c: MatMut<'_, TC>,
    ) -> Result<()> {
        self.gemm_with(a, b, c, &GemmOptions::default())
    }

    /// `c = alpha * a * b + beta * c` on host matrices.
    pub fn gemm_with<TA: Element, TC: Element>(
        &self,
        a: MatRef<'_, TA>,
        b: MatRef<'_, TA>,
        c: MatMut<'_, TC>,
        options: &GemmOptions,
    ) -> Result<()> {
        check_matrix("A", &a)?;
        check_matrix("B", &b)?;
        check_matrix("C", &c.as_ref())?;
        let plan = self.plan::<TA, TC>(
            (a.rows, a.cols, a.layout),
            (b.rows, b.cols, b.layout),
            (c.rows, c.cols),
            options,
        )?;

        // Everything is validated; now move data and run, in one submission.
        let p = plan.problem;
        let a_bytes = bytes_of_layout(a.rows, a.cols, a.layout, p.lda, size_of::<TA>());
        let b_bytes = bytes_of_layout(b.rows, b.cols, b.layout, p.ldb, size_of::<TA>());
        let c_bytes = bytes_of_layout(c.rows, c.cols, Layout::RowMajor, p.ldc, size_of::<TC>());
        let a_dev = self.pool.take(a_bytes, BufferKind::Storage)?;
        let b_dev = self.pool.take(b_bytes, BufferKind::Storage)?;
        let c_dev = self.pool.take(c_bytes, BufferKind::Storage)?;
        let mut up = self.pool.take(a_bytes + b_bytes + c_bytes, BufferKind::Upload)?;
        let mut down = self.pool.take(c_bytes, BufferKind::Readback)?;
        {
            let bytes = up.mapped_mut()?;
            let (ab, rest) = bytes.split_at_mut(a_bytes as usize);
            let (bb, cb) = rest.split_at_mut(b_bytes as usize);
            pack(&a, p.lda, ab);
            pack(&b, p.ldb, bb);
            if plan.reads_c {
                pack(&c.as_ref(), p.ldc, cb);
            }
        }
        let scratch = self.scratch(&plan)?;
        let result = self
            .submitter
            .run(self.pipelines.set_layout, plan.dispatches.len() as u32, |rec| {
                rec.copy_at(up.raw(), 0, a_dev.raw(), a_bytes);
                rec.copy_at(up.raw(), a_bytes, b_dev.raw(), b_bytes);
                if plan.reads_c {
                    rec.copy_at(up.raw(), a_bytes + b_bytes, c_dev.raw(), c_bytes);
                } else if self.options.poison_outputs {
                    rec.fill(c_dev.raw(), c_bytes, poison_pattern(TC::TYPE));
                }
                rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
                let buffers = bindings([&a_dev, &b_dev, &c_dev], scratch.as_ref());
                record_plan(rec, &self.pipelines, &plan, &buffers)?;
                rec.barrier(Access::SHADER_WRITE, Access::TRANSFER_READ);
                rec.copy(c_dev.raw(), down.raw(), c_bytes);
                rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
                Ok(())
            });
        if result.is_ok() {
            unpack(down.mapped_mut()?, p.ldc, c);
        }
        for buf in [a_dev, b_dev, c_dev, up, down].into_iter().chain(scratch) {
            self.pool.give(buf);
        }
        result
    }

    /// `c = alpha * a * b + beta * c` on device-resident matrices (C row-major).
    pub fn gemm_device<TA: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceMatrix<TA>,
        c: &mut DeviceMatrix<TC>,
        options: &GemmOptions,
    ) -> Result<()> {
        let plan = self.plan_device(a, b, c, options)?;
        let scratch = self.scratch(&plan)?;
        let result = self
            .submitter
            .run(self.pipelines.set_layout, plan.dispatches.len() as u32, |rec| {
                if !plan.reads_c && self.options.poison_outputs {
                    rec.fill(c.buffer.raw(), c.buffer.size(), poison_pattern(TC::TYPE));
                    rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
                }
                let buffers = bindings([&a.buffer, &b.buffer, &c.buffer], scratch.as_ref());
                record_plan(rec, &self.pipelines, &plan, &buffers)
            });
        if let Some(buf) = scratch {
            self.pool.give(buf);
        }
        result
    }

    /// Records `plan` on these buffers (taking scratch from the pool) `reps` times, a barrier
    /// between runs; `around` is called before and after each run with the run's index (for
    /// timestamps). One submission.
    pub(crate) fn run_plan(
        &self,
        plan: &GemmPlan,
        operands: [&Buffer; 3],
        reps: u32,
        mut around: impl FnMut(&mut Recording<'_>, u32, bool),
        before: impl FnOnce(&mut Recording<'_>),
    ) -> Result<()> {
        let scratch = self.scratch(plan)?;
        let result = self
            .submitter
            .run(self.pipelines.set_layout, reps * plan.dispatches.len() as u32, |rec| {
                before(rec);
                let buffers = bindings(operands, scratch.as_ref());
                for r in 0..reps {
                    if r > 0 {
                        // Without it the queue may overlap consecutive GEMMs.
                        rec.barrier(Access::SHADER_READ_WRITE, Access::SHADER_READ_WRITE);
                    }
                    around(rec, r, false);
                    record_plan(rec, &self.pipelines, plan, &buffers)?;
                    around(rec, r, true);
                }
                Ok(())
            });
        if let Some(buf) = scratch {
            self.pool.give(buf);
        }
        result
    }

    /// The scratch buffer a plan needs, from the pool.
    fn scratch(&self, plan: &GemmPlan) -> Result<Option<Buffer>> {
        (plan.scratch_bytes > 0)
            .then(|| self.pool.take(plan.scratch_bytes, BufferKind::Storage))
            .transpose()
    }

    /// Checks that device operands belong to this context and C is row-major, then plans.
    pub(crate) fn plan_device<TA: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceMatrix<TA>,
        c: &DeviceMatrix<TC>,
        options: &GemmOptions,
    ) -> Result<GemmPlan> {
        for buffer in [&a.buffer, &b.buffer, &c.buffer] {
            self.check_owned(buffer)?;
        }
        if c.layout != Layout::RowMajor {
            return Err(Error::InvalidOperand(
                "C must be row-major (create it with Context::zeros or upload a row-major matrix)".into(),
            ));
        }
        self.plan::<TA, TC>(
            (a.rows, a.cols, a.layout),
            (b.rows, b.cols, b.layout),
            (c.rows, c.cols),
            options,
        )
    }

    fn check_owned(&self, buffer: &Buffer) -> Result<()> {
        if buffer.on(&self.device) {
            Ok(())
        } else {
            Err(Error::InvalidOperand(
                "a device matrix from another context was passed".into(),
            ))
        }
    }

    pub(crate) fn alloc_matrix<T: Element>(&self, rows: usize, cols: usize, layout: Layout) -> Result<DeviceMatrix<T>> {
        let (_, inner) = layout.outer_inner(rows, cols);
        let ld = device_ld(inner, size_of::<T>());
        let bytes = bytes_of_layout(rows, cols, layout, ld, size_of::<T>());
        let buffer = Buffer::new(&self.device, bytes, BufferKind::Storage)?;
        Ok(DeviceMatrix {
            buffer,
            rows,
            cols,
            layout,
            ld,
            _t: PhantomData,
        })
    }

    /// Validates shapes, types and scalars; chooses config and scheme; plans; creates the
    /// pipelines the plan needs, so a failure surfaces before anything is submitted.
    fn plan<TA: Element, TC: Element>(
        &self,
        (ar, ac, al): (usize, usize, Layout),
        (br, bc, bl): (usize, usize, Layout),
        (cr, cc): (usize, usize),
        options: &GemmOptions,
    ) -> Result<GemmPlan> {
        let (m, n, k) = check_shapes((ar, ac), (br, bc), (cr, cc))?;
        let config = self.choose_config(TA::TYPE, TC::TYPE, options.shape)?;
        let scheme = match options.scheme {
            Some(s) => {
                s.check_device(&config, self.device.info())?;
                s
            }
            None => self.scheme_for::<TA, TC>(&config, (m, n, k), (al, bl))?,
        };
        let request = PlanRequest {
            problem: device_problem((m, n, k), (al, bl), (size_of::<TA>(), size_of::<TC>())),
            config,
            scheme,
            alpha: options.alpha,
            beta: options.beta,
            split_k: match options.split_k {
                Some(s @ 1..=MAX_SPLIT_K) => SplitK::Slices(s),
                Some(s) => {
                    return Err(Error::InvalidOption(format!(
                        "split_k = {s}: use 1 (off) to {MAX_SPLIT_K}, or None to choose per problem"
                    )))
                }
                None => SplitK::Auto {
                    cpu_device: self.is_cpu(),
                },
            },
        };
        let plan = GemmPlan::new(&request, &self.limits)?;
        self.pipelines.prepare(&plan)?;
        Ok(plan)
    }

    /// The plan a GEMM of this shape would run: its kernels, passes and dispatches. For
    /// inspection and benchmarks.
    pub fn plan_gemm<TA: Element, TC: Element>(
        &self,
        m: usize,
        n: usize,
        k: usize,
        layouts: (Layout, Layout),
        options: &GemmOptions,
    ) -> Result<GemmPlan> {
        self.plan::<TA, TC>((m, k, layouts.0), (k, n, layouts.1), (m, n), options)
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({})", self.device.info().name)
    }
}

fn bindings([a, b, c]: [&Buffer; 3], scratch: Option<&Buffer>) -> Bindings {
    Bindings {
        a: a.raw(),
        b: b.raw(),
        c: c.raw(),
        scratch: scratch.map(Buffer::raw),
    }
}
