//! The public GEMM: host and device-resident matrices, the [`Context`] that owns a device and its
//! caches, option handling, validation (everything is checked before anything is submitted), and
//! config and tile-scheme choice.

use crate::autotune::{TuneCache, TuneKey};
use crate::config::{choose_config, ComponentType, GPUSubgroupMatrixConfig};
use crate::device::{Device, DeviceInfo, DeviceSelector, Instance, InstanceOptions, ValidationMessages};
use crate::dispatch::{median, Access, Submitter, TimestampPool};
use crate::error::{Error, Result};
use crate::kernel::{Epilogue, KernelKey, Probe, PushConstants};
use crate::memory::{Buffer, BufferKind, BufferPool};
use crate::pipeline::Pipelines;
use crate::plan::{choose_split_k, plan, plan_split_k, DispatchLimits, Pass, Problem};
use crate::tiling::{
    candidate_schemes, not_oversized, pick_scheme, preferred_workgroup_schemes, small_problem_scheme,
    workgroup_candidates, KernelScope, Layout, TileScheme, VECTOR_BYTES,
};
use half::{bf16, f16};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod sealed {
    pub trait Sealed {}
}

/// An element type vk-sgmat can move to and from the GPU.
pub trait Element: bytemuck::Pod + Send + Sync + sealed::Sealed + PartialEq + std::fmt::Debug {
    /// The matching component type.
    const TYPE: ComponentType;
    /// Exact conversion to f64.
    fn to_f64(self) -> f64;
    /// Conversion from f64 (rounding to nearest for floats, truncation toward zero for integers).
    fn from_f64(v: f64) -> Self;
}

macro_rules! element {
    ($t:ty, $ct:ident, |$x:ident| $to:expr, |$v:ident| $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ComponentType = ComponentType::$ct;
            fn to_f64(self) -> f64 {
                let $x = self;
                $to
            }
            fn from_f64($v: f64) -> Self {
                $from
            }
        }
    };
}
element!(f16, F16, |x| x.to_f64(), |v| f16::from_f64(v));
element!(bf16, Bf16, |x| x.to_f64(), |v| bf16::from_f64(v));
element!(f32, F32, |x| f64::from(x), |v| v as f32);
element!(i8, I8, |x| f64::from(x), |v| v as i8);
element!(u8, U8, |x| f64::from(x), |v| v as u8);
element!(i32, I32, |x| f64::from(x), |v| v as i32);
element!(u32, U32, |x| f64::from(x), |v| v as u32);

/// A read-only host matrix: a slice, its shape, storage order and leading dimension.
#[derive(Copy, Clone, Debug)]
pub struct MatRef<'a, T> {
    /// The elements.
    pub data: &'a [T],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Storage order.
    pub layout: Layout,
    /// Leading dimension: distance between consecutive rows (row-major) or columns (column-major).
    pub ld: usize,
}

impl<'a, T> MatRef<'a, T> {
    /// A dense row-major matrix (ld = cols).
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            layout: Layout::RowMajor,
            ld: cols,
        }
    }

    /// A dense column-major matrix (ld = rows).
    pub fn col_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            layout: Layout::ColMajor,
            ld: rows,
        }
    }

    /// Sets the leading dimension.
    pub fn with_ld(self, ld: usize) -> Self {
        Self { ld, ..self }
    }

    /// Index of element (r, c) in `data`.
    pub fn index(&self, r: usize, c: usize) -> usize {
        match self.layout {
            Layout::RowMajor => r * self.ld + c,
            Layout::ColMajor => c * self.ld + r,
        }
    }
}

/// A writable row-major host matrix (C).
#[derive(Debug)]
pub struct MatMut<'a, T> {
    /// The elements.
    pub data: &'a mut [T],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Leading dimension (distance between rows).
    pub ld: usize,
}

impl<'a, T> MatMut<'a, T> {
    /// A dense row-major matrix (ld = cols).
    pub fn new(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            ld: cols,
        }
    }

    /// Sets the leading dimension.
    pub fn with_ld(self, ld: usize) -> Self {
        Self { ld, ..self }
    }

    fn as_ref(&self) -> MatRef<'_, T> {
        MatRef {
            data: self.data,
            rows: self.rows,
            cols: self.cols,
            layout: Layout::RowMajor,
            ld: self.ld,
        }
    }
}

/// GEMM options: `C = alpha * A*B + beta * C`.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmOptions {
    /// Scale of the product. Default 1. Integer results need an integer that fits the type.
    pub alpha: f64,
    /// Scale of C's old value. Default 0 (C is then not read, so it may hold anything).
    pub beta: f64,
    /// Fragment shape (m, n, k) to use; default: the largest the device offers for the types.
    pub shape: Option<(u32, u32, u32)>,
    /// Tile scheme to use; default: chosen per problem (see [`Context::choose_scheme`]).
    pub scheme: Option<TileScheme>,
    /// K slices computed concurrently and summed by a reduction pass (split-K); default: chosen
    /// per problem (see [`crate::plan::choose_split_k`]; never on CPU drivers); `Some(1)` turns
    /// it off. Ignored when the problem already needs several passes for the device's limits.
    pub split_k: Option<u32>,
}

impl Default for GemmOptions {
    fn default() -> Self {
        Self {
            alpha: 1.0,
            beta: 0.0,
            shape: None,
            scheme: None,
            split_k: None,
        }
    }
}

/// Context settings. Each field says its default.
#[derive(Clone, Debug)]
pub struct ContextOptions {
    /// Which device. Default: `VK_SGMAT_DEVICE` (index or name substring), else the best usable.
    pub device: DeviceSelector,
    /// Khronos validation layer and message capture. Default: off (on with `VK_SGMAT_VALIDATION=1`).
    pub validation: bool,
    /// Fill C with a poison pattern (NaN for floats, 0x7fffffff for integers) before every GEMM
    /// that does not read C, so unwritten elements show. Default: off (tests turn it on).
    pub poison_outputs: bool,
    /// Replace the device's dispatch limits (workgroup count, storage-buffer range, offset
    /// alignment) with smaller ones, to exercise multi-pass plans on any device. Default: none.
    pub limits_override: Option<DispatchLimits>,
    /// File to load the Vulkan pipeline cache from and save it to. Default: none (in memory).
    pub pipeline_cache: Option<PathBuf>,
    /// Autotune: the first GEMM of each (config, layouts, shape rounded up to powers of two)
    /// times the candidate tile schemes on scratch matrices of its size and keeps the fastest in
    /// this JSON file (keyed by device UUID and driver version; a stale or corrupt file is
    /// ignored and replaced). Later GEMMs of that bucket, in any process, use the stored winner.
    /// Default: none ([`Context::choose_scheme`]'s heuristic). An explicit
    /// [`GemmOptions::scheme`] always wins.
    pub autotune: Option<PathBuf>,
}

impl Default for ContextOptions {
    fn default() -> Self {
        Self {
            device: DeviceSelector::from_env(),
            validation: false,
            poison_outputs: false,
            limits_override: None,
            pipeline_cache: None,
            autotune: None,
        }
    }
}

/// A matrix in device memory, in vk-sgmat's layout: the caller's storage order, leading dimension
/// padded to 16 bytes, padding zero. Create with [`Context::upload`] or [`Context::zeros`].
pub struct DeviceMatrix<T: Element> {
    buffer: Buffer,
    rows: usize,
    cols: usize,
    layout: Layout,
    ld: usize,
    _t: PhantomData<T>,
}

impl<T: Element> DeviceMatrix<T> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Storage order.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Padded leading dimension in elements.
    pub fn ld(&self) -> usize {
        self.ld
    }
}

impl<T: Element> std::fmt::Debug for DeviceMatrix<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceMatrix<{}>({}x{}, {:?}, ld {})",
            T::TYPE,
            self.rows,
            self.cols,
            self.layout,
            self.ld
        )
    }
}

/// Padded leading dimension: the contiguous extent rounded up to whole 16-byte vectors.
fn device_ld(inner: usize, elem_bytes: usize) -> usize {
    inner.next_multiple_of(VECTOR_BYTES as usize / elem_bytes.min(VECTOR_BYTES as usize))
}

/// Largest M, N or K accepted: kernels index with 32-bit integers.
pub const MAX_DIM: usize = (1 << 31) - 1;

/// A device with its pipelines and buffers. Cheap to share (`&Context` is `Sync`).
pub struct Context {
    pub(crate) submitter: Submitter,
    pub(crate) pipelines: Pipelines,
    pool: BufferPool,
    limits: DispatchLimits,
    options: ContextOptions,
    tune_cache: Option<Mutex<TuneCache>>,
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
        let limits = options
            .limits_override
            .unwrap_or_else(|| DispatchLimits::from_device(&device.info().limits));
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

    /// Tile schemes valid on this device for `config`: the subgroup-scope ones, largest first,
    /// then the workgroup-scope ones where the device offers `VK_NV_cooperative_matrix2`.
    pub fn schemes(&self, config: &GPUSubgroupMatrixConfig) -> Vec<TileScheme> {
        let info = self.device.info();
        let cpu = info.kind == crate::device::DeviceKind::Cpu;
        let mut out = candidate_schemes(config, &info.limits, self.subgroup_size(), cpu);
        out.extend(workgroup_candidates(config, info, self.subgroup_size()));
        out
    }

    /// The default scheme for an `m x n` output: [`pick_scheme`] over the measured-faster
    /// workgroup-scope schemes of [`preferred_workgroup_schemes`], then the subgroup-scope ones
    /// of [`candidate_schemes`] (largest grid-filling tile first; a 32x64 tile for small
    /// problems).
    pub fn choose_scheme(&self, config: &GPUSubgroupMatrixConfig, m: usize, n: usize) -> Result<TileScheme> {
        let lists = self.scheme_lists(config);
        let cpu = self.device.info().kind == crate::device::DeviceKind::Cpu;
        pick_scheme(&lists.ordered, lists.small, config, (m, n), cpu)
            .ok_or_else(|| Error::InvalidTileScheme(format!("no tile scheme fits {config} on this device")))
    }

    /// [`Context::choose_scheme`]'s candidates for `config`, built once per context.
    fn scheme_lists(&self, config: &GPUSubgroupMatrixConfig) -> Arc<SchemeLists> {
        let mut map = self.scheme_lists.lock().unwrap_or_else(|e| e.into_inner());
        let lists = map.entry(*config).or_insert_with(|| {
            let info = self.device.info();
            let sg = self.subgroup_size();
            let cpu = info.kind == crate::device::DeviceKind::Cpu;
            let subgroup_scope = candidate_schemes(config, &info.limits, sg, cpu);
            let small = small_problem_scheme(&subgroup_scope);
            let mut ordered = preferred_workgroup_schemes(config, info, sg);
            ordered.extend(subgroup_scope);
            Arc::new(SchemeLists { ordered, small })
        });
        lists.clone()
    }

    /// The scheme for a problem: the autotuner's (see [`ContextOptions::autotune`]) when it is on,
    /// else [`Context::choose_scheme`]'s.
    fn scheme_for<TA: Element, TC: Element>(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> Result<TileScheme> {
        let Some(cache) = &self.tune_cache else {
            return self.choose_scheme(config, m, n);
        };
        let key = TuneKey::new(config, layouts, (m, n, k));
        let info = self.device.info();
        let known = cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .filter(|s| s.check_device(config, info).is_ok());
        if let Some(s) = known {
            return Ok(s);
        }
        let (scheme, tflops) = self.autotune::<TA, TC>(config, (m, n, k), layouts)?;
        cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, scheme, tflops, [m, n, k])?;
        Ok(scheme)
    }

    /// Times each candidate scheme that fits the problem (tile at most twice the problem) on
    /// scratch matrices of its size and returns the fastest with its TFLOP/s. Each candidate runs
    /// until its speed is steady (0.1 to 3 s, see [`Context::warm_up`]) before it is timed.
    fn autotune<TA: Element, TC: Element>(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        (al, bl): (Layout, Layout),
    ) -> Result<(TileScheme, f64)> {
        const WARM: (std::time::Duration, std::time::Duration) =
            (std::time::Duration::from_millis(100), std::time::Duration::from_secs(3));
        let fits: Vec<TileScheme> = self
            .schemes(config)
            .into_iter()
            .filter(|s| {
                let g = s.geometry(config);
                not_oversized(g.bm as usize, g.bn as usize, m, n)
            })
            .collect();
        if fits.len() < 2 || self.device.info().limits.timestamp_period <= 0.0 {
            return Ok((self.choose_scheme(config, m, n)?, 0.0));
        }
        // Nonzero operands (1.0 or 1), so the timing is not that of a multiply by zero.
        let one: u32 = match TA::TYPE {
            ComponentType::F16 => 0x3c00_3c00,
            ComponentType::Bf16 => 0x3f80_3f80,
            ComponentType::F32 => 0x3f80_0000,
            _ => 0x0101_0101,
        };
        let a = self.alloc_matrix::<TA>(m, k, al)?;
        let b = self.alloc_matrix::<TA>(k, n, bl)?;
        let c = self.zeros::<TC>(m, n)?;
        self.submitter.run(self.pipelines.set_layout, 0, |rec| {
            rec.fill(a.buffer.raw(), a.buffer.size(), one);
            rec.fill(b.buffer.raw(), b.buffer.size(), one);
            Ok(())
        })?;
        let mut best: Option<(TileScheme, f64)> = None;
        for scheme in fits {
            let options = GemmOptions {
                scheme: Some(scheme),
                ..Default::default()
            };
            let job = self.prepare_device(&a, &b, &c, &options)?;
            let operands = [&a.buffer, &b.buffer, &c.buffer];
            self.warm_job(&job, operands, WARM)?;
            let median = median(&mut self.time_job(&job, operands, 7)?);
            if best.is_none_or(|(_, t)| median < t) {
                best = Some((scheme, median));
            }
        }
        let (scheme, seconds) = best.expect("at least two candidates");
        Ok((scheme, 2.0 * (m * n * k) as f64 / seconds / 1e12))
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
        let job = self.prepare::<TA, TC>(
            (a.rows, a.cols, a.layout),
            (b.rows, b.cols, b.layout),
            (c.rows, c.cols),
            options,
        )?;

        // Everything is validated; now move data and run, in one submission.
        let lda = device_ld(a.layout.outer_inner(a.rows, a.cols).1, size_of::<TA>());
        let ldb = device_ld(b.layout.outer_inner(b.rows, b.cols).1, size_of::<TA>());
        let a_bytes = bytes_of_layout(a.rows, a.cols, a.layout, lda, size_of::<TA>());
        let b_bytes = bytes_of_layout(b.rows, b.cols, b.layout, ldb, size_of::<TA>());
        let c_bytes = bytes_of_layout(c.rows, c.cols, Layout::RowMajor, job.problem.ldc, size_of::<TC>());
        let a_dev = self.pool.take(a_bytes, BufferKind::Storage)?;
        let b_dev = self.pool.take(b_bytes, BufferKind::Storage)?;
        let c_dev = self.pool.take(c_bytes, BufferKind::Storage)?;
        let mut up = self.pool.take(a_bytes + b_bytes + c_bytes, BufferKind::Upload)?;
        let down = self.pool.take(c_bytes, BufferKind::Readback)?;
        let reads_c = options.beta != 0.0;
        {
            let bytes = up.mapped_mut()?;
            let (ab, rest) = bytes.split_at_mut(a_bytes as usize);
            let (bb, cb) = rest.split_at_mut(b_bytes as usize);
            pack(&a, lda, ab);
            pack(&b, ldb, bb);
            if reads_c {
                pack(&c.as_ref(), job.problem.ldc, cb);
            }
        }
        let scratch = self.scratch(&job)?;
        let result = self
            .submitter
            .run(self.pipelines.set_layout, job.descriptor_sets(), |rec| {
                let region = |src_off: u64, dst: &Buffer, size: u64| (src_off, dst.raw(), size);
                let copies = [region(0, &a_dev, a_bytes), region(a_bytes, &b_dev, b_bytes)];
                for (off, dst, size) in copies {
                    rec.copy_at(up.raw(), off, dst, size);
                }
                if reads_c {
                    rec.copy_at(up.raw(), a_bytes + b_bytes, c_dev.raw(), c_bytes);
                } else if self.options.poison_outputs {
                    rec.fill(c_dev.raw(), c_bytes, poison_pattern(TC::TYPE));
                }
                rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
                self.record_passes(rec, &job, [a_dev.raw(), b_dev.raw(), c_dev.raw()], scratch.as_ref())?;
                rec.barrier(Access::SHADER_WRITE, Access::TRANSFER_READ);
                rec.copy(c_dev.raw(), down.raw(), c_bytes);
                rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
                Ok(())
            });
        let mut down = down;
        if result.is_ok() {
            unpack(down.mapped_mut()?, job.problem.ldc, c);
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
        let job = self.prepare_device(a, b, c, options)?;
        let scratch = self.scratch(&job)?;
        let result = self
            .submitter
            .run(self.pipelines.set_layout, job.descriptor_sets(), |rec| {
                if options.beta == 0.0 && self.options.poison_outputs {
                    rec.fill(c.buffer.raw(), c.buffer.size(), poison_pattern(TC::TYPE));
                    rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
                }
                self.record_passes(
                    rec,
                    &job,
                    [a.buffer.raw(), b.buffer.raw(), c.buffer.raw()],
                    scratch.as_ref(),
                )
            });
        if let Some(buf) = scratch {
            self.pool.give(buf);
        }
        result
    }

    /// The scratch buffer a split-K job needs, from the pool.
    fn scratch(&self, job: &Job) -> Result<Option<Buffer>> {
        job.split
            .as_ref()
            .map(|s| self.pool.take(s.scratch_bytes, BufferKind::Storage))
            .transpose()
    }

    /// Runs `reps` GEMMs on device-resident matrices in one submission, a barrier between each, and
    /// returns each one's GPU time in seconds from timestamp queries (submission overhead excluded).
    pub fn time_gemm_device<TA: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceMatrix<TA>,
        c: &mut DeviceMatrix<TC>,
        options: &GemmOptions,
        reps: u32,
    ) -> Result<Vec<f64>> {
        let job = self.prepare_device(a, b, c, options)?;
        self.time_job(&job, [&a.buffer, &b.buffer, &c.buffer], reps)
    }

    /// Runs the GEMM repeatedly, untimed, for at least `min` and until two consecutive batches'
    /// median GPU times agree within 3% (at most `max`), so that timings taken next see a steady
    /// kernel: NVIDIA's driver runs a freshly compiled pipeline slowly at first, for seconds with
    /// workgroup-scope kernels (docs/performance.md). Returns the last batch's median in seconds.
    pub fn warm_up<TA: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceMatrix<TA>,
        c: &mut DeviceMatrix<TC>,
        options: &GemmOptions,
        (min, max): (std::time::Duration, std::time::Duration),
    ) -> Result<f64> {
        let job = self.prepare_device(a, b, c, options)?;
        self.warm_job(&job, [&a.buffer, &b.buffer, &c.buffer], (min, max))
    }

    fn warm_job(
        &self,
        job: &Job,
        operands: [&Buffer; 3],
        (min, max): (std::time::Duration, std::time::Duration),
    ) -> Result<f64> {
        let start = std::time::Instant::now();
        let mut last = f64::INFINITY;
        loop {
            let median = median(&mut self.time_job(job, operands, 8)?);
            let steady = (median - last).abs() <= 0.03 * last;
            last = median;
            if (steady && start.elapsed() >= min) || start.elapsed() >= max {
                return Ok(median);
            }
        }
    }

    /// Times a diagnostic variant of the kernel that `options` selects for this problem, with one
    /// part of its main loop removed (see [`Probe`]), like [`Context::time_gemm_device`]. For
    /// performance analysis only: C's contents are unspecified afterwards.
    pub fn time_probe<TA: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceMatrix<TA>,
        c: &mut DeviceMatrix<TC>,
        options: &GemmOptions,
        probe: Probe,
        reps: u32,
    ) -> Result<Vec<f64>> {
        let mut job = self.prepare_device(a, b, c, options)?;
        if job.first.scheme.scope == KernelScope::Workgroup && probe != Probe::Full {
            return Err(Error::Unsupported(format!(
                "probes take apart the subgroup-scope kernel; {} is workgroup-scope",
                job.first.scheme.name()
            )));
        }
        let g = job.first.scheme.geometry(&job.first.config);
        let (bm, bn, bk) = (g.bm as usize, g.bn as usize, g.bk as usize);
        if probe == Probe::Unchecked {
            let p = &job.problem;
            let whole = job
                .passes
                .iter()
                .all(|q| q.m % bm == 0 && q.n % bn == 0 && q.k % bk == 0);
            if !whole || job.split.is_some() {
                return Err(Error::Unsupported(format!(
                    "the unchecked probe needs whole {bm}x{bn}x{bk} tiles and no split-K; {}x{}x{} is not",
                    p.m, p.n, p.k
                )));
            }
        }
        if let Probe::SharedAtLeast(bytes) = probe {
            let max = self.device.info().limits.max_shared_memory;
            if bytes > max {
                return Err(Error::Unsupported(format!(
                    "{bytes} bytes of shared memory exceed the device's {max}"
                )));
            }
        }
        job.first.probe = probe;
        job.rest.probe = probe;
        if let Some(split) = &mut job.split {
            split.partial.probe = probe;
        }
        self.time_job(&job, [&a.buffer, &b.buffer, &c.buffer], reps)
    }

    fn time_job(&self, job: &Job, operands: [&Buffer; 3], reps: u32) -> Result<Vec<f64>> {
        let info = self.device.info();
        if info.limits.timestamp_period <= 0.0 {
            return Err(Error::Unsupported("the device has no timestamp queries".into()));
        }
        let reps = reps.max(1);
        let pool = TimestampPool::new(&self.device, 2 * reps)?;
        let scratch = self.scratch(job)?;
        let result = self
            .submitter
            .run(self.pipelines.set_layout, reps * job.descriptor_sets(), |rec| {
                rec.reset_queries(pool.raw, pool.count);
                for r in 0..reps {
                    if r > 0 {
                        // Without it the queue may overlap consecutive GEMMs.
                        rec.barrier(Access::SHADER_READ_WRITE, Access::SHADER_READ_WRITE);
                    }
                    rec.timestamp(pool.raw, 2 * r);
                    let buffers = operands.map(|b| b.raw());
                    self.record_passes(rec, job, buffers, scratch.as_ref())?;
                    rec.timestamp(pool.raw, 2 * r + 1);
                }
                Ok(())
            });
        if let Some(buf) = scratch {
            self.pool.give(buf);
        }
        result?;
        pool.intervals()
    }

    /// Checks that device operands belong to this context and C is row-major, then prepares.
    fn prepare_device<TA: Element, TC: Element>(
        &self,
        a: &DeviceMatrix<TA>,
        b: &DeviceMatrix<TA>,
        c: &DeviceMatrix<TC>,
        options: &GemmOptions,
    ) -> Result<Job> {
        for buffer in [&a.buffer, &b.buffer, &c.buffer] {
            self.check_owned(buffer)?;
        }
        if c.layout != Layout::RowMajor {
            return Err(Error::InvalidOperand(
                "C must be row-major (create it with Context::zeros or upload a row-major matrix)".into(),
            ));
        }
        self.prepare::<TA, TC>(
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

    fn alloc_matrix<T: Element>(&self, rows: usize, cols: usize, layout: Layout) -> Result<DeviceMatrix<T>> {
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

    /// Validates shapes, types and scalars; chooses config, scheme and kernels; plans passes.
    fn prepare<TA: Element, TC: Element>(
        &self,
        (ar, ac, al): (usize, usize, Layout),
        (br, bc, bl): (usize, usize, Layout),
        (cr, cc): (usize, usize),
        options: &GemmOptions,
    ) -> Result<Job> {
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
        let config = self.choose_config(TA::TYPE, TC::TYPE, options.shape)?;
        let alpha_bits = scalar_bits("alpha", options.alpha, TC::TYPE)?;
        let beta_bits = scalar_bits("beta", options.beta, TC::TYPE)?;
        let scheme = match options.scheme {
            Some(s) => {
                s.check_device(&config, self.device.info())?;
                s
            }
            None => self.scheme_for::<TA, TC>(&config, (m, n, k), (al, bl))?,
        };
        let geometry = scheme.geometry(&config);
        let problem = Problem {
            m,
            n,
            k,
            a_layout: al,
            b_layout: bl,
            lda: device_ld(al.outer_inner(ar, ac).1, size_of::<TA>()),
            ldb: device_ld(bl.outer_inner(br, bc).1, size_of::<TA>()),
            ldc: device_ld(n, size_of::<TC>()),
            ab_bytes: size_of::<TA>(),
            c_bytes: size_of::<TC>(),
        };
        let passes = plan(&problem, &geometry, &self.limits)?;
        let key = |beta: bool| KernelKey {
            config,
            scheme,
            a_layout: al,
            b_layout: bl,
            epilogue: Epilogue {
                alpha: options.alpha != 1.0,
                beta,
            },
            probe: Probe::Full,
        };
        let first = key(options.beta != 0.0);
        let rest = key(true);
        // Create pipelines now: a failure surfaces before anything is submitted.
        self.pipelines.get(&first)?;
        if passes.iter().any(|p| p.accumulate) {
            self.pipelines.get(&rest)?;
        }
        let one_bits = scalar_bits("beta", 1.0, TC::TYPE)?;
        let split = match passes.as_slice() {
            [single] => {
                let tiles = single.groups[0] as usize * single.groups[1] as usize;
                let cpu = self.device.info().kind == crate::device::DeviceKind::Cpu;
                let subgroups = (scheme.sg_m * scheme.sg_n) as usize;
                let splits = options
                    .split_k
                    .unwrap_or_else(|| choose_split_k(tiles, subgroups, k, cpu));
                if splits > 1 {
                    self.plan_split::<TC>(&problem, &geometry, splits, &first, single.c, options)?
                } else {
                    None
                }
            }
            _ => None,
        };
        Ok(Job {
            problem,
            passes,
            first,
            rest,
            alpha_bits,
            beta_bits,
            one_bits,
            split,
        })
    }

    /// Plans split-K, or `None` where its scratch buffer or reduction would not fit the limits.
    fn plan_split<TC: Element>(
        &self,
        problem: &Problem,
        geometry: &crate::tiling::TileGeometry,
        splits: u32,
        first: &KernelKey,
        c: crate::plan::Window,
        options: &GemmOptions,
    ) -> Result<Option<Split>> {
        let l = &self.limits;
        let c_bytes = (problem.m * problem.ldc * problem.c_bytes) as u64;
        let slice_bytes = c_bytes.next_multiple_of(l.offset_alignment.max(16));
        let Some(passes) = plan_split_k(problem, geometry, l, splits, slice_bytes) else {
            return Ok(None);
        };
        let scratch_bytes = slice_bytes * passes.len() as u64;
        let total = problem.m * problem.n;
        let wg = total.div_ceil(crate::kernel::reduce::THREADS as usize);
        let gx = wg.min(l.max_groups[0] as usize);
        let gy = wg.div_ceil(gx);
        let fits = scratch_bytes <= l.max_range && gy <= l.max_groups[1] as usize && total <= u32::MAX as usize;
        if passes.len() < 2 || !fits {
            return Ok(None);
        }
        let partial = KernelKey {
            epilogue: Epilogue::default(),
            ..*first
        };
        self.pipelines.get(&partial)?;
        let epilogue = Epilogue {
            alpha: options.alpha != 1.0,
            beta: options.beta != 0.0,
        };
        let reduce = self.pipelines.get_reduce(TC::TYPE, epilogue, self.subgroup_size())?;
        Ok(Some(Split {
            passes,
            partial,
            reduce,
            slice_bytes,
            scratch_bytes,
            c,
            groups: [gx as u32, gy as u32],
        }))
    }

    fn record_passes(
        &self,
        rec: &mut crate::dispatch::Recording<'_>,
        job: &Job,
        buffers: [ash::vk::Buffer; 3],
        scratch: Option<&Buffer>,
    ) -> Result<()> {
        let p = &job.problem;
        if let (Some(split), Some(scratch)) = (&job.split, scratch) {
            // The slices write disjoint scratch slices: no barrier between them.
            let pipeline = self.pipelines.get(&split.partial)?;
            for pass in &split.passes {
                // The partial products use the plain epilogue: alpha and beta are the reduction's.
                let push = pass_push(p, pass, 0, 0);
                let bindings = [(buffers[0], pass.a), (buffers[1], pass.b), (scratch.raw(), pass.c)];
                rec.dispatch(pipeline.raw, self.pipelines.layout, bindings, &push, pass.groups)?;
            }
            rec.barrier(Access::SHADER_READ_WRITE, Access::SHADER_READ_WRITE);
            let whole = crate::plan::Window {
                bind_offset: 0,
                bind_range: split.scratch_bytes,
                start: 0,
            };
            let push = PushConstants {
                m: p.m as u32,
                n: p.n as u32,
                k: split.passes.len() as u32,
                lda_vec: (split.slice_bytes / p.c_bytes as u64) as u32,
                ldb_vec: split.groups[0],
                ldc: p.ldc as u32,
                c_off: (split.c.start / p.c_bytes as u64) as u32,
                alpha_bits: job.alpha_bits,
                beta_bits: job.beta_bits,
                ..Default::default()
            };
            let bindings = [(scratch.raw(), whole), (scratch.raw(), whole), (buffers[2], split.c)];
            return rec.dispatch(split.reduce.raw, self.pipelines.layout, bindings, &push, split.groups);
        }
        for (i, pass) in job.passes.iter().enumerate() {
            if i > 0 {
                // Passes along K accumulate into the C written by the previous one.
                rec.barrier(Access::SHADER_READ_WRITE, Access::SHADER_READ_WRITE);
            }
            let key = if pass.accumulate { &job.rest } else { &job.first };
            let pipeline = self.pipelines.get(key)?;
            let beta_bits = if pass.accumulate { job.one_bits } else { job.beta_bits };
            let push = pass_push(p, pass, job.alpha_bits, beta_bits);
            rec.dispatch(
                pipeline.raw,
                self.pipelines.layout,
                [(buffers[0], pass.a), (buffers[1], pass.b), (buffers[2], pass.c)],
                &push,
                pass.groups,
            )?;
        }
        Ok(())
    }

    /// The kernel and passes a GEMM of this shape would run (for split-K: the K slices, whose
    /// reduction follows). For inspection and benchmarks.
    pub fn plan_gemm<TA: Element, TC: Element>(
        &self,
        m: usize,
        n: usize,
        k: usize,
        layouts: (Layout, Layout),
        options: &GemmOptions,
    ) -> Result<(KernelKey, Vec<Pass>)> {
        let job = self.prepare::<TA, TC>((m, k, layouts.0), (k, n, layouts.1), (m, n), options)?;
        match job.split {
            Some(split) => Ok((split.partial, split.passes)),
            None => Ok((job.first, job.passes)),
        }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({})", self.device.info().name)
    }
}

struct Job {
    problem: Problem,
    passes: Vec<Pass>,
    first: KernelKey,
    rest: KernelKey,
    alpha_bits: u32,
    beta_bits: u32,
    one_bits: u32,
    split: Option<Split>,
}

/// The kernel's push constants for one pass of `p`.
fn pass_push(p: &Problem, pass: &Pass, alpha_bits: u32, beta_bits: u32) -> PushConstants {
    let vec = u64::from(VECTOR_BYTES);
    let es = p.ab_bytes as u64;
    PushConstants {
        m: pass.m as u32,
        n: pass.n as u32,
        k: pass.k as u32,
        lda_vec: (p.lda as u64 * es / vec) as u32,
        ldb_vec: (p.ldb as u64 * es / vec) as u32,
        ldc: p.ldc as u32,
        a_off_vec: (pass.a.start / vec) as u32,
        b_off_vec: (pass.b.start / vec) as u32,
        c_off: (pass.c.start / p.c_bytes as u64) as u32,
        alpha_bits,
        beta_bits,
    }
}

impl Job {
    /// Descriptor sets one run of the job binds.
    fn descriptor_sets(&self) -> u32 {
        match &self.split {
            Some(s) => s.passes.len() as u32 + 1,
            None => self.passes.len() as u32,
        }
    }
}

/// A split-K plan: partial products of K slices into a scratch buffer, then one reduction.
struct Split {
    /// One pass per K slice; their C windows point into the scratch buffer.
    passes: Vec<Pass>,
    /// The kernel for the partial products (plain epilogue).
    partial: KernelKey,
    /// The reduction, which applies alpha and beta.
    reduce: Arc<crate::pipeline::Pipeline>,
    slice_bytes: u64,
    scratch_bytes: u64,
    /// C's window for the reduction.
    c: crate::plan::Window,
    /// The reduction's workgroups (x, y).
    groups: [u32; 2],
}

fn poison_pattern(t: ComponentType) -> u32 {
    if t.is_float() {
        u32::MAX // NaN in f32 and in both f16 halves
    } else {
        0x7fff_ffff
    }
}

/// The 32 bits the kernel reads for alpha or beta in result type `t`.
fn scalar_bits(name: &'static str, v: f64, t: ComponentType) -> Result<u32> {
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

/// Checks a host matrix's slice against its shape and leading dimension.
fn check_matrix<T>(name: &'static str, m: &MatRef<'_, T>) -> Result<()> {
    let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
    if m.rows == 0 || m.cols == 0 {
        return Ok(()); // the GEMM's own check names M, N, K
    }
    if m.ld < inner {
        return Err(Error::BadLeadingDimension {
            matrix: name,
            ld: m.ld,
            min: inner,
        });
    }
    let needed = (outer - 1)
        .checked_mul(m.ld)
        .and_then(|v| v.checked_add(inner))
        .ok_or_else(|| Error::TooLarge(format!("matrix {name}: {outer} x ld {} overflows", m.ld)))?;
    if m.data.len() < needed {
        return Err(Error::ShortSlice {
            matrix: name,
            needed,
            got: m.data.len(),
        });
    }
    Ok(())
}

fn bytes_of_layout(rows: usize, cols: usize, layout: Layout, ld: usize, es: usize) -> u64 {
    let (outer, _) = layout.outer_inner(rows, cols);
    (outer * ld * es) as u64
}

/// Copies a host matrix into device layout (same storage order, leading dimension `ld`, padding
/// zeroed: the kernels rely on zero padding for the K tail).
fn pack<T: Element>(m: &MatRef<'_, T>, ld: usize, out: &mut [u8]) {
    let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
    let es = size_of::<T>();
    let out = &mut out[..outer * ld * es];
    for o in 0..outer {
        let src = bytemuck::cast_slice::<T, u8>(&m.data[o * m.ld..o * m.ld + inner]);
        let row = &mut out[o * ld * es..(o + 1) * ld * es];
        row[..inner * es].copy_from_slice(src);
        row[inner * es..].fill(0);
    }
}

/// Copies device rows (leading dimension `ld`) into a host matrix.
fn unpack<T: Element>(bytes: &[u8], ld: usize, out: MatMut<'_, T>) {
    let es = size_of::<T>();
    for r in 0..out.rows {
        let src = &bytes[r * ld * es..(r * ld + out.cols) * es];
        let dst = &mut out.data[r * out.ld..r * out.ld + out.cols];
        bytemuck::cast_slice_mut::<T, u8>(dst).copy_from_slice(src);
    }
}

static DEFAULT_CONTEXT: Mutex<Option<Arc<Context>>> = Mutex::new(None);

/// The lazily created default context (best device, or `VK_SGMAT_DEVICE`). A failed creation is
/// not cached: the next call tries again.
pub fn default_context() -> Result<Arc<Context>> {
    let mut slot = DEFAULT_CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = slot.as_ref() {
        return Ok(c.clone());
    }
    let c = Arc::new(Context::new()?);
    *slot = Some(c.clone());
    Ok(c)
}

/// `c = a * b` on the default context.
pub fn gemm<TA: Element, TC: Element>(a: MatRef<'_, TA>, b: MatRef<'_, TA>, c: MatMut<'_, TC>) -> Result<()> {
    default_context()?.gemm(a, b, c)
}
