//! [`Context`]: a device with its pipelines, buffers and caches, and the GEMM calls on it. Each call
//! validates its input, makes a [`GemmPlan`] (`crate::plan`), records it (`crate::record`) and
//! submits it (`crate::submit`); nothing reaches the GPU before the plan exists.

use super::matrix::{
    bytes_of_layout, check_download_target, check_matrix, pack, poison_pattern, unpack, DeviceMatrix, Element, MatMut,
    MatRef,
};
use super::operand::Placed;
use super::options::ContextOptions;
use crate::config::{choose_config, ComponentType, GPUSubgroupMatrixConfig};
use crate::device::{
    AdoptedDevice, Device, DeviceInfo, DeviceKind, Instance, InstanceOptions, QueueRef, ValidationMessages,
};
use crate::error::{Error, Result};
use crate::kernel::KernelKey;
use crate::memory::{Buffer, BufferKind, BufferPool};
use crate::pipeline::Pipelines;
use crate::plan::{device_ld, DispatchLimits, GemmPlan};
use crate::record::{record_plan, record_plan_marked, Access, Bindings, Recording};
use crate::selftest::SelfTest;
use crate::submit::StreamCore;
use crate::tiling::Layout;
use crate::tiling::{SchemeLists, TuneCache};
use rustc_hash::FxHashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// The most K slices [`GemmOptions::split_k`](crate::GemmOptions::split_k) takes (the automatic rule stops at 16).
pub const MAX_SPLIT_K: u32 = 64;

/// A device with its pipelines and buffers. Cheap to share (`&Context` is `Sync`).
pub struct Context {
    /// The stream the blocking calls submit on (queue 0), one call at a time.
    pub(super) blocking: Mutex<StreamCore>,
    pub(crate) pipelines: Pipelines,
    pub(crate) pool: Arc<BufferPool>,
    /// Streams made so far, to spread them over the device's queues.
    streams: std::sync::atomic::AtomicUsize,
    /// Cores of dropped streams, idle, for the next streams: a new one would allocate (and the
    /// OS fault in) its staging memory again, which for large uploads costs more than the copy.
    pub(super) idle_cores: Mutex<Vec<StreamCore>>,
    pub(crate) limits: DispatchLimits,
    pub(crate) options: ContextOptions,
    pub(crate) tune_cache: Option<Mutex<TuneCache>>,
    /// [`Context::choose_scheme`]'s candidates per config, built on first use: checking every
    /// scheme against the device on each call cost more host time (~5 us) than a 64x64x64
    /// GEMM's GPU time.
    pub(super) scheme_lists: Mutex<FxHashMap<GPUSubgroupMatrixConfig, Arc<SchemeLists>>>,
    /// The driver self-test's verdicts ([`Context::self_test`]).
    pub(super) verdicts: SelfTest,
    pub(crate) device: Arc<Device>,
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
        Self::on_instance(instance, options)
    }

    /// A context on `options.device` of an existing instance (several contexts share one).
    pub(crate) fn on_instance(instance: Arc<Instance>, options: ContextOptions) -> Result<Self> {
        let device = Device::new(
            instance,
            &options.device,
            options.copy_queues,
            options.compute_limits.as_ref(),
        )?;
        Self::on_device(device, options)
    }

    /// A context on a device the caller created with ash (see docs/runtime.md, "Bring your own
    /// device"). It must have enabled what
    /// [`DeviceRequirements::for_device`](crate::device::DeviceRequirements::for_device) lists
    /// for it; a missing extension or feature is [`Error::DeviceUnusable`] naming each. `options.device` and
    /// `options.validation` do not apply (the caller's instance has its own layers). vk-sgmat
    /// never destroys the caller's instance or device.
    ///
    /// # Safety
    /// Every handle in `adopted` must be valid and its `enabled_*` fields true to how the device
    /// was created; the instance and device must outlive the context; the caller must not use
    /// the adopted queue from another thread while a call of this context submits to it, and
    /// must let the GPU finish every command buffer it recorded with
    /// with [`Prepared::record`](crate::Prepared::record) before dropping the context.
    pub unsafe fn from_raw(adopted: AdoptedDevice, options: ContextOptions) -> Result<Self> {
        // SAFETY: forwarded from the caller.
        let device = unsafe { Device::adopt(adopted)? };
        Self::on_device(device, options)
    }

    fn on_device(device: Arc<Device>, options: ContextOptions) -> Result<Self> {
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
        let pool = Arc::new(BufferPool::new(device.clone(), limits.max_allocation));
        Ok(Self {
            blocking: Mutex::new(StreamCore::new(
                &device,
                &pool,
                QueueRef::Compute(0),
                options.gpu_timeout,
            )?),
            pipelines: Pipelines::new(
                device.clone(),
                options.pipeline_cache.path_for(device.info()),
                options.inject_fault,
                options.pipeline_compiler.helper_for(device.info()),
            )?,
            verdicts: SelfTest::open(
                options.self_test,
                options
                    .pipeline_cache
                    .self_test_path_for(device.info())
                    .filter(|_| options.inject_fault.is_none()),
                device.info(),
            ),
            pool,
            streams: std::sync::atomic::AtomicUsize::new(0),
            idle_cores: Mutex::new(Vec::new()),
            limits,
            options,
            tune_cache,
            scheme_lists: Mutex::new(FxHashMap::default()),
            device,
        })
    }

    /// What is known about the device.
    pub fn device_info(&self) -> &DeviceInfo {
        self.device.info()
    }

    /// The file this context keeps its pipeline cache in
    /// ([`ContextOptions::pipeline_cache`](crate::ContextOptions::pipeline_cache)), if any, and
    /// how many bytes of it were loaded when the context was made (0: none yet, or the file was
    /// missing, damaged or another device's, and ignored).
    pub fn pipeline_cache_file(&self) -> (Option<&std::path::Path>, usize) {
        (self.pipelines.cache_path(), self.pipelines.loaded_bytes())
    }

    /// The tuning file [`Context::tune`] keeps its winners in
    /// ([`ContextOptions::autotune`](crate::ContextOptions::autotune)), if any.
    pub fn tuning_file(&self) -> Option<&std::path::Path> {
        self.options.autotune.as_deref()
    }

    /// How many queues of a copy-only family (the GPU's copy engines) the host copies of
    /// [`MultiContext`](crate::MultiContext) GEMMs run on, beside the kernels; 0 where they share
    /// the compute queues.
    pub fn copy_queue_count(&self) -> usize {
        self.device.copy_queue_count()
    }

    /// Validation-layer warnings and errors so far (empty when validation is off).
    pub fn validation_messages(&self) -> &Arc<ValidationMessages> {
        self.device.instance().validation_messages()
    }

    /// Whether the validation layer is on.
    pub fn validation_enabled(&self) -> bool {
        self.device.instance().validation_enabled()
    }

    /// What the compiling helper ([`ContextOptions::pipeline_compiler`]) did so far: pipelines
    /// it compiled, and failed runs (whose pipelines were compiled in this process) with the
    /// last one's reason.
    pub fn compile_report(&self) -> crate::CompileReport {
        self.pipelines.compile_report()
    }

    /// Number of pipelines created so far: GEMM kernels' and their passes' (copies, split-K's
    /// reduction, dequantization, matrix-vector kernels).
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.len()
    }

    /// The driver's statistics for a kernel (e.g. registers per invocation), from a pipeline
    /// compiled for the purpose (the one that runs is compiled without capture); empty where the driver lacks `VK_KHR_pipeline_executable_properties`.
    pub fn kernel_statistics(&self, key: &KernelKey) -> Result<Vec<(String, String)>> {
        self.pipelines.statistics(key)
    }

    /// Every config the device offers (standard, then extended) less those the driver
    /// self-test dropped ([`Context::self_test`]); none where [`ContextOptions::matrix_units`]
    /// is off.
    pub fn configs(&self) -> Vec<GPUSubgroupMatrixConfig> {
        if !self.options.matrix_units {
            return Vec::new();
        }
        let mut all = self.device.info().all_configs();
        all.retain(|c| !self.verdicts.dropped(c));
        all
    }

    /// The config used for these element types (see [`GemmOptions::shape`](crate::GemmOptions::shape)).
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

    /// Runs `f` on the blocking stream, submits what it recorded and waits for it; on an error
    /// nothing recorded is submitted.
    pub(crate) fn run_blocking<R>(&self, f: impl FnOnce(&mut StreamCore) -> Result<R>) -> Result<R> {
        let mut core = self.blocking.lock().unwrap_or_else(|e| e.into_inner());
        match f(&mut core) {
            Ok(r) => core.finish().map(|()| r),
            Err(e) => {
                core.abort();
                Err(e)
            }
        }
    }

    /// [`Context::run_blocking`] for commands on buffers no stream shares.
    pub(crate) fn run_recorded(&self, f: impl FnOnce(&mut Recording<'_>) -> Result<()>) -> Result<()> {
        self.run_blocking(|core| f(&mut core.recording()?))
    }

    /// The index of the queue the next stream submits to.
    pub(crate) fn next_stream_queue(&self) -> usize {
        self.streams.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Uploads a host matrix.
    pub fn upload<T: Element>(&self, m: MatRef<'_, T>) -> Result<DeviceMatrix<T>> {
        check_matrix("matrix", &m)?;
        let dm = self.alloc_matrix::<T>(m.rows, m.cols, m.layout)?;
        self.run_blocking(|core| self.enqueue_upload(core, &m, &dm))?;
        Ok(dm)
    }

    /// Records the upload of `m` into `dm` (same shape and layout) on `core`.
    pub(crate) fn enqueue_upload<T: Element>(
        &self,
        core: &mut StreamCore,
        m: &MatRef<'_, T>,
        dm: &DeviceMatrix<T>,
    ) -> Result<()> {
        let bytes = bytes_of_layout(m.rows, m.cols, m.layout, dm.ld, size_of::<T>());
        core.access(&[], &[(&dm.buffer).into()])?;
        core.upload(dm.buffer.raw(), 0, bytes, |out| pack(m, dm.ld, out))
    }

    /// A zero row-major `rows x cols` device matrix (for C).
    pub fn zeros<T: Element>(&self, rows: usize, cols: usize) -> Result<DeviceMatrix<T>> {
        if rows == 0 || cols == 0 {
            return Err(Error::ZeroSize { m: rows, n: cols, k: 0 });
        }
        let dm = self.alloc_matrix::<T>(rows, cols, Layout::RowMajor)?;
        self.run_blocking(|core| {
            core.access(&[], &[(&dm.buffer).into()])?;
            core.recording()?.fill(dm.buffer.raw(), dm.buffer.size(), 0);
            Ok(())
        })?;
        Ok(dm)
    }

    /// Checks a download target against a device matrix.
    pub(crate) fn check_download<T: Element>(&self, m: &DeviceMatrix<T>, out: &MatMut<'_, T>) -> Result<()> {
        check_download_target(m.layout.outer_inner(m.rows, m.cols), out)?;
        self.check_owned(&m.buffer)
    }

    /// Records the copy of `m` into a readback buffer on `core`; the bytes are there once the
    /// submission completes.
    pub(crate) fn enqueue_download<T: Element>(&self, core: &mut StreamCore, m: &DeviceMatrix<T>) -> Result<Buffer> {
        self.check_owned(&m.buffer)?;
        // The matrix's bytes, not its buffer's: a pooled buffer may be larger.
        let size = bytes_of_layout(m.rows, m.cols, m.layout, m.ld, size_of::<T>());
        let staging = self.pool.take(size, BufferKind::Readback)?;
        core.access(&[(&m.buffer).into()], &[])?;
        let mut rec = core.recording()?;
        rec.copy(m.buffer.raw(), staging.raw(), size);
        rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
        Ok(staging)
    }

    /// Downloads a device matrix into a row-major host matrix of the same shape (for a
    /// column-major device matrix, the host gets its transpose's storage: same element order).
    pub fn download<T: Element>(&self, m: &DeviceMatrix<T>, out: MatMut<'_, T>) -> Result<()> {
        self.check_download(m, &out)?;
        let staging = self.run_blocking(|core| self.enqueue_download(core, m))?;
        unpack(staging.mapped()?, m.ld, out);
        self.pool.give(staging);
        Ok(())
    }

    /// Records `plan` on `core` over these operands (C poisoned first where the options say so
    /// and C is not read), with scratch from the pool held until the GPU is done; its pipelines
    /// are created first, so a failure records nothing.
    pub(crate) fn enqueue_plan(
        &self,
        core: &mut StreamCore,
        plan: &GemmPlan,
        [a, b, c]: [Placed<'_>; 3],
        result_type: ComponentType,
    ) -> Result<()> {
        self.pipelines.prepare(plan)?;
        core.access(&[a.touch(), b.touch()], &[c.touch()])?;
        self.record_fused(core, plan, [a, b, c], result_type, [None; 4])
    }

    /// Records `plan` without ordering against earlier work on the stream (the caller's
    /// `core.access` did that), with a fused epilogue's vector buffers (bias, row scales, column
    /// scales) and a grouped GEMM's counts on the device; its pipelines already created.
    pub(crate) fn record_fused(
        &self,
        core: &mut StreamCore,
        plan: &GemmPlan,
        [a, b, c]: [Placed<'_>; 3],
        result_type: ComponentType,
        vectors: [Option<ash::vk::Buffer>; 4],
    ) -> Result<()> {
        let scratch = self.scratch(plan)?.map(Arc::new);
        let mut rec = core.recording()?;
        // Rows past the device counts' sum are not the GEMM's to write, so not poisoned either.
        if !plan.reads_c && self.options.poison_outputs && !plan.counts_on_device() {
            let p = &plan.problem;
            let (count, stride) = (p.batch.count, p.batch.strides[2]);
            let fill = |rec: &mut Recording<'_>, offset: u64, rows: usize| {
                rec.fill_rows(
                    c.raw,
                    offset,
                    (rows, p.n, p.ldc),
                    p.c_bytes,
                    poison_pattern(result_type),
                );
            };
            if count == 1 || stride == p.m * p.ldc {
                // One entry, or entries back to back (a DeviceBatch): one fill over all rows.
                fill(&mut rec, c.offset, count * p.m);
            } else {
                for i in 0..count {
                    fill(&mut rec, c.offset + (i * stride * p.c_bytes) as u64, p.m);
                }
            }
            rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
        }
        let buffers = Bindings {
            vectors,
            ..bindings([a.raw, b.raw, c.raw], scratch.as_deref())
        };
        let recorded = record_plan(&mut rec, &self.pipelines, plan, &buffers);
        if let Some(s) = scratch {
            core.hold(s, true);
        }
        recorded
    }

    /// Records `plan` on these buffers `reps` times in one submission, a barrier between runs;
    /// `mark` is called at each run's [`RunMark`]s with its index (for timestamps), `before`
    /// once first.
    pub(crate) fn run_plan(
        &self,
        plan: &GemmPlan,
        (operands, vectors): ([&Arc<Buffer>; 3], [Option<ash::vk::Buffer>; 3]),
        reps: u32,
        mut mark: impl FnMut(&mut Recording<'_>, u32, RunMark),
        before: impl FnOnce(&mut Recording<'_>),
    ) -> Result<()> {
        let scratch = self.scratch(plan)?;
        let result = self.run_blocking(|core| {
            core.access(&[operands[0].into(), operands[1].into()], &[operands[2].into()])?;
            let mut rec = core.recording()?;
            before(&mut rec);
            let [bias, rows, cols] = vectors;
            let buffers = Bindings {
                vectors: [bias, rows, cols, None],
                ..bindings(operands.map(|b| b.raw()), scratch.as_ref())
            };
            for r in 0..reps {
                if r > 0 {
                    // Without it the queue may overlap consecutive GEMMs.
                    rec.barrier(Access::SHADER_READ_WRITE, Access::SHADER_READ_WRITE);
                }
                mark(&mut rec, r, RunMark::Start);
                let mut dispatched = |rec: &mut Recording<'_>, i| mark(rec, r, RunMark::Dispatched(i));
                record_plan_marked(&mut rec, &self.pipelines, plan, &buffers, &mut dispatched)?;
                mark(&mut rec, r, RunMark::End);
            }
            Ok(())
        });
        if let Some(buf) = scratch {
            self.pool.give(buf);
        }
        result
    }

    /// The scratch buffer a plan needs, from the pool.
    pub(crate) fn scratch(&self, plan: &GemmPlan) -> Result<Option<Buffer>> {
        (plan.scratch_bytes > 0)
            .then(|| self.pool.take(plan.scratch_bytes, BufferKind::Storage))
            .transpose()
    }

    /// Checks that every operand held in vk-sgmat's buffers belongs to this context (the
    /// caller's own buffers are theirs to vouch for).
    pub(crate) fn check_placed(&self, operands: &[&Placed<'_>]) -> Result<()> {
        operands
            .iter()
            .filter_map(|m| m.owned)
            .try_for_each(|buffer| self.check_owned(buffer))
    }

    pub(crate) fn check_owned(&self, buffer: &Buffer) -> Result<()> {
        if buffer.on(&self.device) {
            Ok(())
        } else {
            Err(Error::InvalidOperand(
                "a device matrix from another context was passed".into(),
            ))
        }
    }

    /// A zeroed-layout matrix of `t` elements in a new buffer, as the planner sees it (without
    /// an owner: the caller holds the buffer).
    pub(crate) fn alloc_placed(
        &self,
        rows: usize,
        cols: usize,
        layout: Layout,
        t: ComponentType,
    ) -> Result<(Arc<Buffer>, Placed<'static>)> {
        let es = t.size_bytes() as usize;
        let ld = device_ld(layout.outer_inner(rows, cols).1, es);
        let bytes = bytes_of_layout(rows, cols, layout, ld, es);
        let buffer = Arc::new(self.pool.allocate(bytes, BufferKind::Storage)?);
        let placed = Placed {
            rows,
            cols,
            layout,
            ld,
            offset: 0,
            raw: buffer.raw(),
            owned: None,
        };
        Ok((buffer, placed))
    }

    /// A matrix in a buffer from the pool (contents undefined): for work whose stream holds the
    /// buffer as pooled, so it returns to the pool when the GPU is done with it.
    pub(crate) fn pooled_matrix<T: Element>(
        &self,
        rows: usize,
        cols: usize,
        layout: Layout,
    ) -> Result<DeviceMatrix<T>> {
        let es = size_of::<T>();
        let ld = device_ld(layout.outer_inner(rows, cols).1, es);
        let buffer = self
            .pool
            .take(bytes_of_layout(rows, cols, layout, ld, es), BufferKind::Storage)?;
        Ok(DeviceMatrix {
            buffer: Arc::new(buffer),
            rows,
            cols,
            layout,
            ld,
            _t: PhantomData,
        })
    }

    pub(crate) fn alloc_matrix<T: Element>(&self, rows: usize, cols: usize, layout: Layout) -> Result<DeviceMatrix<T>> {
        let (buffer, placed) = self.alloc_placed(rows, cols, layout, T::TYPE)?;
        Ok(DeviceMatrix {
            buffer,
            rows,
            cols,
            layout,
            ld: placed.ld,
            _t: PhantomData,
        })
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({})", self.device.info().name)
    }
}

pub(crate) fn bindings([a, b, c]: [ash::vk::Buffer; 3], scratch: Option<&Buffer>) -> Bindings {
    Bindings {
        a,
        b,
        c,
        scratch: scratch.map(Buffer::raw),
        vectors: [None; 4],
    }
}

/// Where [`Context::run_plan`] calls its `mark`: before a run, after each of its dispatches
/// (by index), and after the run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum RunMark {
    Start,
    Dispatched(usize),
    End,
}
