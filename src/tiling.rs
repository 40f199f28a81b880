//! Problem shapes, tile schemes and the plan of passes. Pure: nothing here touches Vulkan.
//!
//! A [`TileScheme`] fixes how one workgroup covers a `BM x BN` block of C: `sg_m x sg_n` subgroups,
//! each owning `fr_m x fr_n` accumulator fragments of the config's `m x n` shape, stepping through K
//! `k_step` at a time with A and B staged in shared memory. [`plan`] splits a GEMM into passes that
//! respect the device's workgroup-count and storage-buffer-range limits.

use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::device::{DeviceInfo, DeviceLimits};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Bytes every global load and shared-memory copy moves at once; also the alignment of every
/// device matrix row (its leading dimension is padded to a multiple of this).
pub const VECTOR_BYTES: u32 = 16;

/// Storage order of a matrix.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Rows are contiguous: element (r, c) at `r * ld + c`.
    #[default]
    RowMajor,
    /// Columns are contiguous: element (r, c) at `c * ld + r`.
    ColMajor,
}

impl Layout {
    /// 'n' for row-major (not transposed), 't' for column-major, as in `--layout nt`.
    pub fn letter(self) -> char {
        match self {
            Layout::RowMajor => 'n',
            Layout::ColMajor => 't',
        }
    }

    /// (outer, inner) extents of a `rows x cols` matrix stored this way: inner is contiguous.
    pub fn outer_inner(self, rows: usize, cols: usize) -> (usize, usize) {
        match self {
            Layout::RowMajor => (rows, cols),
            Layout::ColMajor => (cols, rows),
        }
    }
}

/// Which cooperative matrices a kernel computes with.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelScope {
    /// Subgroup-scope matrices (`VK_KHR_cooperative_matrix`): the tiled kernel, operands staged
    /// through shared memory by the kernel itself.
    #[default]
    Subgroup,
    /// One workgroup-scope accumulator per workgroup (`VK_NV_cooperative_matrix2` with tensor
    /// addressing): the driver stages operands and handles edges; needs a device that offers it
    /// (see [`TileScheme::check_device`]).
    Workgroup,
}

/// How one workgroup tiles its block of C. Construct with [`TileScheme::new`] or
/// [`TileScheme::workgroup`], which check it against the config and the device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TileScheme {
    /// Subgroup size the pipeline requires.
    pub subgroup_size: u32,
    /// Subgroups along M.
    pub sg_m: u32,
    /// Subgroups along N.
    pub sg_n: u32,
    /// Accumulator fragments per subgroup along M.
    pub fr_m: u32,
    /// Accumulator fragments per subgroup along N.
    pub fr_n: u32,
    /// K consumed per shared-memory stage (a multiple of the config's k).
    pub k_step: u32,
    /// Skew added to each shared-memory row, in bytes (breaks power-of-two strides; keeps every
    /// fragment start 16-byte aligned).
    pub pad_bytes: u32,
    /// Shared-memory stages: 1 (two barriers per K step) or 2 (double-buffered, one barrier).
    /// For workgroup scope: K steps per loop iteration (1 to 8), all loads first.
    pub stages: u32,
    /// Workgroup raster: 0 walks tiles row by row; G > 0 walks groups of G tile rows column by
    /// column, so consecutive workgroups share A rows and B columns in L2.
    pub raster_group: u32,
    /// Subgroup-scope (the tiled kernel) or workgroup-scope matrices. With workgroup scope the
    /// workgroup tile is still `sg_m * fr_m * m` by `sg_n * fr_n * n` with
    /// `sg_m * sg_n * subgroup_size` invocations, but one matrix covers it, `k_step` is its K
    /// extent, and padding and stages do not apply.
    #[serde(default)]
    pub scope: KernelScope,
}

/// The derived sizes of a scheme for one config.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TileGeometry {
    /// Rows of C per workgroup.
    pub bm: u32,
    /// Columns of C per workgroup.
    pub bn: u32,
    /// K per stage.
    pub bk: u32,
    /// Invocations per workgroup.
    pub threads: u32,
    /// Shared memory in bytes.
    pub shared_bytes: u32,
}

impl TileScheme {
    /// Builds a scheme and checks it against `config` and `limits`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &GPUSubgroupMatrixConfig,
        limits: &DeviceLimits,
        subgroup_size: u32,
        (sg_m, sg_n): (u32, u32),
        (fr_m, fr_n): (u32, u32),
        k_step: u32,
    ) -> Result<Self> {
        let s = Self {
            subgroup_size,
            sg_m,
            sg_n,
            fr_m,
            fr_n,
            k_step,
            pad_bytes: VECTOR_BYTES,
            stages: 1,
            raster_group: 0,
            scope: KernelScope::Subgroup,
        };
        s.check(config, limits)?;
        Ok(s)
    }

    /// A workgroup-scope scheme (see [`KernelScope::Workgroup`]) of `stages` K steps of `k_step`
    /// per loop iteration, checked against `info`: the device must offer
    /// `VK_NV_cooperative_matrix2` workgroup-scope matrices of the config's types for this tile and
    /// workgroup size.
    pub fn workgroup(
        config: &GPUSubgroupMatrixConfig,
        info: &DeviceInfo,
        subgroup_size: u32,
        sg: (u32, u32),
        fr: (u32, u32),
        (k_step, stages): (u32, u32),
    ) -> Result<Self> {
        let s = Self {
            subgroup_size,
            sg_m: sg.0,
            sg_n: sg.1,
            fr_m: fr.0,
            fr_n: fr.1,
            k_step,
            pad_bytes: 0,
            stages,
            raster_group: 0,
            scope: KernelScope::Workgroup,
        };
        s.check_device(config, info)?;
        Ok(s)
    }

    /// The same scheme with `stages` shared-memory buffers, checked again.
    pub fn with_stages(self, stages: u32, config: &GPUSubgroupMatrixConfig, limits: &DeviceLimits) -> Result<Self> {
        let s = Self { stages, ..self };
        s.check(config, limits)?;
        Ok(s)
    }

    /// The same scheme with a grouped workgroup raster (0 = off).
    pub fn with_raster_group(self, raster_group: u32) -> Self {
        Self { raster_group, ..self }
    }

    /// Sizes derived for `config`.
    pub fn geometry(&self, config: &GPUSubgroupMatrixConfig) -> TileGeometry {
        let bm = self.sg_m * self.fr_m * config.m;
        let bn = self.sg_n * self.fr_n * config.n;
        let bk = self.k_step;
        let threads = self.sg_m * self.sg_n * self.subgroup_size;
        if self.scope == KernelScope::Workgroup {
            // The driver stages operands in shared memory it reserves itself.
            return TileGeometry {
                bm,
                bn,
                bk,
                threads,
                shared_bytes: 0,
            };
        }
        let es = config.component_type.size_bytes();
        // Either orientation of each operand occupies the same bytes up to the skew; take the
        // larger so a scheme that fits one layout fits all.
        let a = (bm * (bk * es + self.pad_bytes)).max(bk * (bm * es + self.pad_bytes));
        let b = (bn * (bk * es + self.pad_bytes)).max(bk * (bn * es + self.pad_bytes));
        // The epilogue's staging tiles overlay the larger operand array (see kernel::gemm).
        let stage = self.sg_m * self.sg_n * config.m * config.n * config.result_type.size_bytes();
        let (a, b) = (self.stages * a, self.stages * b);
        TileGeometry {
            bm,
            bn,
            bk,
            threads,
            shared_bytes: a + b + stage.saturating_sub(a.max(b)),
        }
    }

    /// Checks the scheme; the error says which rule failed.
    pub fn check(&self, config: &GPUSubgroupMatrixConfig, limits: &DeviceLimits) -> Result<()> {
        let bad = |msg: String| Err(Error::InvalidTileScheme(msg));
        if [
            self.sg_m,
            self.sg_n,
            self.fr_m,
            self.fr_n,
            self.k_step,
            self.subgroup_size,
        ]
        .contains(&0)
        {
            return bad("every scheme parameter must be at least 1".into());
        }
        let max_stages = match self.scope {
            KernelScope::Subgroup => 2,
            KernelScope::Workgroup => 8,
        };
        if !(1..=max_stages).contains(&self.stages) {
            return bad(format!("stages must be 1 to {max_stages}, not {}", self.stages));
        }
        if !self.subgroup_size.is_power_of_two() {
            return bad(format!("subgroup size {} is not a power of two", self.subgroup_size));
        }
        if limits.max_subgroup_size != 0
            && (self.subgroup_size < limits.min_subgroup_size || self.subgroup_size > limits.max_subgroup_size)
        {
            return bad(format!(
                "subgroup size {} outside the device's range {}..={}",
                self.subgroup_size, limits.min_subgroup_size, limits.max_subgroup_size
            ));
        }
        let es = config.component_type.size_bytes();
        let rs = config.result_type.size_bytes();
        if !(rs == 2 || rs == 4) {
            return bad(format!("result type {} is not 16 or 32 bits wide", config.result_type));
        }
        if self.k_step % config.k != 0 {
            return bad(format!(
                "k_step {} is not a multiple of the config's k {}",
                self.k_step, config.k
            ));
        }
        let g = self.geometry(config);
        for (name, len) in [("BM", g.bm), ("BN", g.bn), ("BK", g.bk)] {
            if (len * es) % VECTOR_BYTES != 0 {
                return bad(format!(
                    "{name} = {len} elements is not a multiple of {VECTOR_BYTES} bytes"
                ));
            }
        }
        if self.scope == KernelScope::Workgroup {
            if self.pad_bytes != 0 {
                return bad("workgroup-scope schemes have no padding".into());
            }
            return self.check_threads(&g, limits);
        }
        for (name, rows) in [("A", g.bm), ("B", g.bn)] {
            let vecs = rows * g.bk * es / VECTOR_BYTES;
            if vecs % g.threads != 0 {
                return bad(format!(
                    "the {name} tile ({rows}x{} = {vecs} vectors of {VECTOR_BYTES} bytes) does not divide over {} invocations",
                    g.bk, g.threads
                ));
            }
        }
        // The edge epilogue hands each invocation whole 32-bit words of a fragment.
        if (config.m * config.n * rs / 4) % self.subgroup_size != 0 {
            return bad(format!(
                "a {}x{} fragment of {} does not divide into 32-bit words over a subgroup of {}",
                config.m, config.n, config.result_type, self.subgroup_size
            ));
        }
        for (what, run) in [("m", config.m * es), ("n", config.n * es), ("k", config.k * es)] {
            if shared_unit(run).is_none() {
                return bad(format!(
                    "fragment {what} extent of {run} bytes cannot be addressed 4-byte aligned"
                ));
            }
        }
        self.check_threads(&g, limits)?;
        if limits.max_shared_memory != 0 && g.shared_bytes > limits.max_shared_memory {
            return bad(format!(
                "{} bytes of shared memory exceed the device's {}",
                g.shared_bytes, limits.max_shared_memory
            ));
        }
        Ok(())
    }

    fn check_threads(&self, g: &TileGeometry, limits: &DeviceLimits) -> Result<()> {
        if limits.max_workgroup_invocations != 0
            && (g.threads > limits.max_workgroup_invocations || g.threads > limits.max_workgroup_size[0])
        {
            return Err(Error::InvalidTileScheme(format!(
                "{} invocations exceed the device's limit of {}",
                g.threads,
                limits.max_workgroup_invocations.min(limits.max_workgroup_size[0])
            )));
        }
        Ok(())
    }

    /// [`TileScheme::check`] against the device's limits, and for workgroup scope, against what
    /// `VK_NV_cooperative_matrix2` offers there: an entry of the config's types whose
    /// granularities divide the tile and whose workgroup size is the scheme's.
    pub fn check_device(&self, config: &GPUSubgroupMatrixConfig, info: &DeviceInfo) -> Result<()> {
        self.check(config, &info.limits)?;
        if self.scope == KernelScope::Subgroup {
            return Ok(());
        }
        let cm2 = match &info.cooperative_matrix2 {
            Some(c) if c.usable() => c,
            _ => {
                return Err(Error::Unsupported(format!(
                    "workgroup-scope schemes need VK_NV_cooperative_matrix2 with cooperativeMatrixWorkgroupScope, \
                     cooperativeMatrixFlexibleDimensions and cooperativeMatrixTensorAddressing; {} {}",
                    info.name,
                    match &info.cooperative_matrix2 {
                        None => "does not offer the extension".to_string(),
                        Some(c) => format!(
                            "offers workgroup scope {}, flexible dimensions {}, tensor addressing {}",
                            c.workgroup_scope, c.flexible_dimensions, c.tensor_addressing
                        ),
                    }
                )))
            }
        };
        // The kernel reads A and B as arrays of their element type; the device enables 8- and
        // 16-bit storage only where it has them.
        let storage = match config.component_type.size_bytes() {
            1 => Some(("storageBuffer8BitAccess", info.features.storage_buffer_8bit_access)),
            2 => Some(("storageBuffer16BitAccess", info.features.storage_buffer_16bit_access)),
            _ => None,
        };
        if let Some((feature, false)) = storage {
            return Err(Error::Unsupported(format!(
                "workgroup-scope schemes for {} -> {} read {}-bit arrays, which needs {feature}; {} lacks it",
                config.component_type,
                config.result_type,
                8 * config.component_type.size_bytes(),
                info.name
            )));
        }
        let g = self.geometry(config);
        let entries = cm2.workgroup_entries(config);
        let fits = |&(mg, ng, kg, inv): &(u32, u32, u32, u32)| {
            inv == g.threads && g.bm % mg == 0 && g.bn % ng == 0 && g.bk % kg == 0
        };
        if !entries.iter().any(fits) {
            let offered: Vec<String> = entries
                .iter()
                .map(|(mg, ng, kg, inv)| format!("multiples of {mg}x{ng}x{kg} with {inv} invocations"))
                .collect();
            return Err(Error::InvalidTileScheme(format!(
                "a {}x{}x{} workgroup-scope tile with {} invocations is not offered for {} -> {} (offered: {})",
                g.bm,
                g.bn,
                g.bk,
                g.threads,
                config.component_type,
                config.result_type,
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join("; ")
                }
            )));
        }
        let largest = g.bm.max(g.bn).max(g.bk);
        if largest > cm2.flexible_dimensions_max_dimension {
            return Err(Error::InvalidTileScheme(format!(
                "a workgroup-scope matrix dimension of {largest} exceeds the device's {}",
                cm2.flexible_dimensions_max_dimension
            )));
        }
        if cm2.workgroup_scope_max_workgroup_size != 0 && g.threads > cm2.workgroup_scope_max_workgroup_size {
            return Err(Error::InvalidTileScheme(format!(
                "{} invocations exceed the device's workgroup-scope limit of {}",
                g.threads, cm2.workgroup_scope_max_workgroup_size
            )));
        }
        Ok(())
    }

    /// A short name, e.g. `sg2x4_fr4x2_k32_s32`, or `wg_t256_fr8x16_k32` for a workgroup-scope
    /// scheme (256 invocations, a tile of 8x16 fragments).
    pub fn name(&self) -> String {
        if self.scope == KernelScope::Workgroup {
            // The split into subgroups means nothing to a workgroup-scope kernel: name the
            // workgroup size and the tile in fragments.
            return format!(
                "wg_t{}_fr{}x{}_k{}{}{}",
                self.sg_m * self.sg_n * self.subgroup_size,
                self.sg_m * self.fr_m,
                self.sg_n * self.fr_n,
                self.k_step,
                if self.stages > 1 {
                    format!("_u{}", self.stages)
                } else {
                    String::new()
                },
                if self.raster_group > 0 {
                    format!("_g{}", self.raster_group)
                } else {
                    String::new()
                }
            );
        }
        format!(
            "sg{}x{}_fr{}x{}_k{}_s{}{}",
            self.sg_m,
            self.sg_n,
            self.fr_m,
            self.fr_n,
            self.k_step,
            self.subgroup_size,
            if self.stages == 2 { "_d2" } else { "" }
        ) + &if self.raster_group > 0 {
            format!("_g{}", self.raster_group)
        } else {
            String::new()
        }
    }
}

/// The widest unit (16, 8 or 4 bytes) that addresses every fragment start whose offsets are
/// multiples of `run` bytes, or `None` if `run` is not a multiple of 4. Cooperative-matrix loads
/// need starts aligned to min(16 bytes, one row), which this gives for power-of-two runs.
pub fn shared_unit(run: u32) -> Option<u32> {
    [16, 8, 4].into_iter().find(|u| run % u == 0)
}

/// The schemes vk-sgmat tries for `config`, best first, before filtering by the device. CPU
/// drivers get only the small scheme: lavapipe compiles large unrolled kernels slowly.
pub fn candidate_schemes(
    config: &GPUSubgroupMatrixConfig,
    limits: &DeviceLimits,
    subgroup_size: u32,
    cpu_device: bool,
) -> Vec<TileScheme> {
    let es = config.component_type.size_bytes();
    // (subgroups, fragments per subgroup, k_step in fragments of k). The GPU order is measured
    // with `vk-sgmat tune` on the H200 (docs/performance.md): 4 subgroups of 4x4 fragments
    // (128x128 tiles, two fragments of K per stage) first, then the other schemes that led there.
    // CPU drivers take one small scheme with 64 bytes of K per stage.
    type Shape = ((u32, u32), (u32, u32), u32);
    let cpu_k = (64 / es).max(config.k).div_ceil(config.k);
    let gpu: [Shape; 10] = [
        ((2, 2), (4, 4), 2),
        ((1, 4), (8, 2), 2),
        ((2, 4), (4, 4), 2),
        ((2, 4), (4, 2), 1),
        ((2, 4), (2, 2), 2),
        ((2, 2), (4, 2), 2),
        ((2, 2), (2, 2), 2),
        ((1, 2), (2, 2), 2),
        ((1, 1), (2, 2), 2),
        ((1, 1), (1, 1), 1),
    ];
    let cpu: [Shape; 3] = [
        ((2, 2), (2, 2), cpu_k),
        ((2, 2), (1, 1), cpu_k),
        ((1, 1), (1, 1), cpu_k),
    ];
    // 16-bit accumulators leave room for 256x256 tiles (8 subgroups of 8x4 fragments): half the
    // global traffic per multiply of 128x128, measured fastest for f16 -> f16 on the H200.
    let wide: [Shape; 1] = [((2, 4), (8, 4), 2)];
    // 8-bit inputs: 4 subgroups of 8x2 fragments measured fastest (autotuner on the H200).
    let tall: [Shape; 1] = [((1, 4), (8, 2), 2)];
    let gpu: Vec<Shape> = if config.result_type.size_bytes() == 2 {
        wide.iter().chain(&gpu).copied().collect()
    } else if es == 1 {
        tall.iter().chain(&gpu).copied().collect()
    } else {
        gpu.to_vec()
    };
    let shapes: &[Shape] = if cpu_device { &cpu } else { &gpu };
    let mut out = Vec::new();
    for &(sg, fr, kf) in shapes {
        // Fall back to deeper stages when a fragment's K is under 16 bytes.
        for ks in [kf * config.k, 2 * kf * config.k, 4 * kf * config.k] {
            if let Ok(s) = TileScheme::new(config, limits, subgroup_size, sg, fr, ks) {
                if !out.contains(&s) {
                    out.push(s);
                }
                break;
            }
        }
    }
    out
}

/// A wider set of schemes for the autotuner and `vk-sgmat tune`: 2 to 8 subgroups, workgroup tiles
/// from 64 to 256 on a side, 4 to 16 accumulator fragments per subgroup (32 for 16-bit results), one
/// to four fragment-k multiples per stage (32 to 128 bytes of row), single or double-buffered,
/// with and without grouped raster; every one valid on the device. CPU devices get
/// [`candidate_schemes`] only.
pub fn tuning_candidates(
    config: &GPUSubgroupMatrixConfig,
    limits: &DeviceLimits,
    subgroup_size: u32,
    cpu_device: bool,
) -> Vec<TileScheme> {
    let mut out = candidate_schemes(config, limits, subgroup_size, cpu_device);
    if cpu_device {
        return out;
    }
    let es = config.component_type.size_bytes();
    let sgs = [(2, 4), (4, 2), (2, 2), (1, 4), (4, 1), (2, 1), (1, 2)];
    let mut frs = vec![(2, 2), (4, 2), (2, 4), (4, 4), (8, 2), (2, 8), (8, 1), (1, 8)];
    // 16-bit accumulators take half the registers: up to 32 fragments per subgroup fit (256x256
    // tiles with 8 subgroups, like NVIDIA's sample's fastest f16 kernels).
    if config.result_type.size_bytes() == 2 {
        frs.extend([(8, 4), (4, 8)]);
    }
    let mut k_steps: Vec<u32> = [config.k, 2 * config.k, 3 * config.k, 4 * config.k]
        .into_iter()
        .filter(|&k| k * es >= 32 && k * es <= 128)
        .collect();
    if k_steps.is_empty() {
        k_steps.push(config.k);
    }
    for &(sm, sn) in &sgs {
        for &(fm, fn_) in &frs {
            let (bm, bn) = (sm * fm * config.m, sn * fn_ * config.n);
            if !(64..=256).contains(&bm) || !(64..=256).contains(&bn) {
                continue;
            }
            for &ks in &k_steps {
                for stages in [1, 2] {
                    let s = TileScheme::new(config, limits, subgroup_size, (sm, sn), (fm, fn_), ks)
                        .and_then(|s| s.with_stages(stages, config, limits));
                    if let Ok(s) = s {
                        for s in [s, s.with_raster_group(8)] {
                            if !out.contains(&s) {
                                out.push(s);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Workgroup-scope schemes (see [`KernelScope::Workgroup`]) the device offers for `config`,
/// largest workgroup first, then largest tile: tiles of 64 to 256 on a side, for each workgroup
/// size the device lists, each with (K step, steps per loop iteration) of (64 bytes, 4),
/// (64 bytes, 2) and (128 bytes, 2): on the H200, 256 bytes of K per iteration in 64-byte steps
/// measured fastest for every tile (docs/performance.md). A tile keeps at most 512 bytes of
/// accumulator per invocation (128x256 f32 over 256 invocations): more does not fit in
/// registers. Empty where the device has no usable `VK_NV_cooperative_matrix2`.
pub fn workgroup_candidates(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    workgroup_schemes(config, info, subgroup_size, &[(64, 4), (64, 2), (128, 2)])
}

/// PCI vendor id of NVIDIA.
const VENDOR_NVIDIA: u32 = 0x10de;

/// The workgroup-scope schemes taken by default, ahead of the subgroup-scope ones: those measured
/// faster than every subgroup-scope scheme on the H200 (docs/performance.md), largest tile first:
/// for 16-bit results 256x256 tiles with 256 invocations, then 128x128 with 128; for f32 results
/// 128x128 with 128 invocations; each in 64-byte K steps, four per loop iteration. Then, for
/// grids too small for those, 64x64 tiles with 128 invocations and two steps per iteration
/// (1024x1024x1024 f16->f32: 21.3 us, against 25.3 for the best subgroup-scope tile). Only on
/// NVIDIA, where they were measured; elsewhere the autotuner decides.
pub fn preferred_workgroup_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    if info.vendor_id != VENDOR_NVIDIA || !config.component_type.is_float() {
        return Vec::new();
    }
    // (tile rows, tile columns, invocations, K steps per loop iteration)
    let wanted: &[(u32, u32, u32, u32)] = match config.result_type {
        ComponentType::F16 => &[(256, 256, 256, 4), (128, 128, 128, 4), (64, 64, 128, 2)],
        ComponentType::F32 => &[(128, 128, 128, 4), (64, 64, 128, 2)],
        _ => &[],
    };
    let es = config.component_type.size_bytes();
    let candidates = workgroup_candidates(config, info, subgroup_size);
    wanted
        .iter()
        .filter_map(|&(bm, bn, threads, stages)| {
            candidates.iter().copied().find(|s| {
                let g = s.geometry(config);
                (g.bm, g.bn, g.threads) == (bm, bn, threads) && g.bk * es == 64 && s.stages == stages
            })
        })
        .collect()
}

/// Whether a `bm x bn` tile is at most twice an `m x n` problem in each direction (so at most half
/// of a tile's rows or columns are wasted): the size rule of both the heuristic and the autotuner.
pub fn not_oversized(bm: usize, bn: usize, m: usize, n: usize) -> bool {
    bm <= 2 * m.max(1) && bn <= 2 * n.max(1)
}

/// The scheme for problems too small for any candidate to fill the GPU: 2 subgroups of 2x2
/// fragments (32x64 with 16x16 fragments) where `subgroup_scope` has it, else its last
/// (smallest) scheme.
pub fn small_problem_scheme(subgroup_scope: &[TileScheme]) -> Option<TileScheme> {
    subgroup_scope
        .iter()
        .find(|s| s.scope == KernelScope::Subgroup && (s.sg_m, s.sg_n, s.fr_m, s.fr_n) == (1, 2, 2, 2))
        .or(subgroup_scope.last())
        .copied()
}

/// The default scheme for an `m x n` output from `candidates` (best first), `small` being
/// [`small_problem_scheme`]'s pick. Every choice has a tile at most twice the problem in each
/// direction ([`not_oversized`]). On GPUs: the first candidate with at least 2x2 fragments per
/// subgroup whose grid puts about 1024 subgroups to work; where none does, `small`: on the H200 its 32x64 tile ran fastest from
/// 64x64x64 to 512x512x512 (4.8 us of GPU time at 64^3, against 11.6 for a 128x128 tile),
/// where latency, not throughput, decides. CPU drivers take the first candidate that fits.
/// Failing all that, the last candidate.
pub fn pick_scheme(
    candidates: &[TileScheme],
    small: Option<TileScheme>,
    config: &GPUSubgroupMatrixConfig,
    (m, n): (usize, usize),
    cpu_device: bool,
) -> Option<TileScheme> {
    const FILL_SUBGROUPS: usize = 1024;
    let fits = |s: &&TileScheme| {
        let g = s.geometry(config);
        not_oversized(g.bm as usize, g.bn as usize, m, n)
    };
    let fills = |s: &&TileScheme| {
        let g = s.geometry(config);
        let tiles = m.div_ceil(g.bm as usize) * n.div_ceil(g.bn as usize);
        tiles * (s.sg_m * s.sg_n) as usize >= FILL_SUBGROUPS
    };
    let first_fit = candidates.iter().find(fits);
    let chosen = if cpu_device {
        first_fit
    } else {
        // At least 2x2 fragments per subgroup: single-fragment subgroups fill any grid but
        // ran slower than `small` (512x512x512: 18.3 against 21.9 TFLOP/s).
        candidates
            .iter()
            .filter(fits)
            .filter(|s| s.fr_m * s.fr_n >= 4)
            .find(fills)
            .or(small.as_ref().filter(fits))
            .or(first_fit)
    };
    chosen.or(candidates.last()).copied()
}

/// [`workgroup_candidates`] and more, for `vk-sgmat tune`: K steps of 32 to 128 bytes, 1 to 8 of
/// them per loop iteration, and grouped raster.
pub fn workgroup_tuning_candidates(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    let mut out = workgroup_candidates(config, info, subgroup_size);
    let mut steps = Vec::new();
    for k_bytes in [32, 64, 128] {
        for stages in [1, 2, 4, 8] {
            steps.push((k_bytes, stages));
        }
    }
    for s in workgroup_schemes(config, info, subgroup_size, &steps) {
        for s in [s, s.with_raster_group(8)] {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// Workgroup-scope schemes for every listed (K step in bytes, steps per iteration).
fn workgroup_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
    steps: &[(u32, u32)],
) -> Vec<TileScheme> {
    let Some(cm2) = &info.cooperative_matrix2 else {
        return Vec::new();
    };
    let es = config.component_type.size_bytes();
    let rs = config.result_type.size_bytes();
    let tiles = [
        (256, 256),
        (128, 256),
        (256, 128),
        (128, 128),
        (64, 128),
        (128, 64),
        (64, 64),
    ];
    let mut entries = cm2.workgroup_entries(config);
    entries.sort_by_key(|&(_, _, _, invocations)| std::cmp::Reverse(invocations));
    let mut out = Vec::new();
    for (_, _, _, invocations) in entries {
        let subgroups = invocations / subgroup_size;
        if subgroups == 0 || invocations % subgroup_size != 0 || !subgroups.is_power_of_two() {
            continue;
        }
        for &(bm, bn) in &tiles {
            if bm * bn * rs > 512 * invocations {
                continue;
            }
            // Any split of the subgroups that divides the tile names it: the kernel only uses
            // the tile and the workgroup size.
            let split = (0..=subgroups.trailing_zeros())
                .map(|i| (subgroups >> i, 1 << i))
                .find(|&(sm, sn)| bm % (sm * config.m) == 0 && bn % (sn * config.n) == 0);
            let Some((sm, sn)) = split else { continue };
            let fr = (bm / (sm * config.m), bn / (sn * config.n));
            for &(k_bytes, stages) in steps {
                let bk = (k_bytes / es).next_multiple_of(config.k);
                if let Ok(s) = TileScheme::workgroup(config, info, subgroup_size, (sm, sn), fr, (bk, stages)) {
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

/// A GEMM's shape: C (m x n) = A (m x k) * B (k x n), with device leading dimensions in elements.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// A's storage order.
    pub a_layout: Layout,
    /// B's storage order.
    pub b_layout: Layout,
    /// A's leading dimension (elements; a multiple of 16 bytes).
    pub lda: usize,
    /// B's leading dimension.
    pub ldb: usize,
    /// C's leading dimension (C is row-major).
    pub ldc: usize,
    /// Bytes per A/B element.
    pub ab_bytes: usize,
    /// Bytes per C element.
    pub c_bytes: usize,
}

/// A window of a buffer bound for one pass.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Byte offset of the binding (a multiple of minStorageBufferOffsetAlignment).
    pub bind_offset: u64,
    /// Bytes bound.
    pub bind_range: u64,
    /// Offset of the operand's first element from the binding, in bytes.
    pub start: u64,
}

/// One dispatch: the sub-GEMM C[m0.., n0..] (+)= A[m0.., k0..] * B[k0.., n0..].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pass {
    /// First row of C.
    pub m0: usize,
    /// First column of C.
    pub n0: usize,
    /// First k.
    pub k0: usize,
    /// Rows in this pass.
    pub m: usize,
    /// Columns in this pass.
    pub n: usize,
    /// K in this pass.
    pub k: usize,
    /// Workgroups along x (N) and y (M).
    pub groups: [u32; 2],
    /// Whether this pass adds to C (a K chunk after the first) instead of applying the caller's beta.
    pub accumulate: bool,
    /// A's binding.
    pub a: Window,
    /// B's binding.
    pub b: Window,
    /// C's binding.
    pub c: Window,
}

/// The limits [`plan`] respects.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DispatchLimits {
    /// `maxComputeWorkGroupCount[0]` and `[1]`.
    pub max_groups: [u32; 2],
    /// maxStorageBufferRange in bytes.
    pub max_range: u64,
    /// minStorageBufferOffsetAlignment in bytes.
    pub offset_alignment: u64,
}

impl DispatchLimits {
    /// The device's limits.
    pub fn from_device(l: &DeviceLimits) -> Self {
        Self {
            max_groups: [l.max_workgroup_count[0], l.max_workgroup_count[1]],
            max_range: u64::from(l.max_storage_buffer_range),
            offset_alignment: l.min_storage_buffer_offset_alignment.max(1),
        }
    }
}

/// Bytes a kernel reads or writes from an operand stored `layout` with leading dimension `ld`,
/// starting at (outer0, inner0), covering `outer x inner` elements (inner rounded up to whole
/// vectors, as the kernel loads them).
fn span(outer0: usize, inner0: usize, outer: usize, inner: usize, ld: usize, es: usize, vec: bool) -> (u64, u64) {
    let start = (outer0 * ld + inner0) * es;
    let inner_bytes = if vec {
        (inner * es).next_multiple_of(VECTOR_BYTES as usize)
    } else {
        inner * es
    };
    let len = (outer - 1) * ld * es + inner_bytes;
    (start as u64, len as u64)
}

fn window(start: u64, len: u64, limits: &DispatchLimits) -> Window {
    let bind_offset = start - start % limits.offset_alignment;
    Window {
        bind_offset,
        bind_range: start - bind_offset + len,
        start: start - bind_offset,
    }
}

/// Splits `problem` into passes whose workgroup counts and buffer windows fit `limits`. Bands along
/// M and N are multiples of the workgroup tile and K chunks multiples of `k_step`, so every pass
/// starts 16-byte aligned. Passes along K after the first accumulate into C.
pub fn plan(problem: &Problem, geometry: &TileGeometry, limits: &DispatchLimits) -> Result<Vec<Pass>> {
    let (bm, bn, bk) = (geometry.bm as usize, geometry.bn as usize, geometry.bk as usize);
    let p = problem;
    let fits = |mb: usize, nb: usize, kb: usize| -> bool {
        if mb.div_ceil(bm) > limits.max_groups[1] as usize || nb.div_ceil(bn) > limits.max_groups[0] as usize {
            return false;
        }
        let slack = limits.offset_alignment - 1;
        let a = match p.a_layout {
            Layout::RowMajor => span(0, 0, mb, kb, p.lda, p.ab_bytes, true),
            Layout::ColMajor => span(0, 0, kb, mb, p.lda, p.ab_bytes, true),
        };
        let b = match p.b_layout {
            Layout::RowMajor => span(0, 0, kb, nb, p.ldb, p.ab_bytes, true),
            Layout::ColMajor => span(0, 0, nb, kb, p.ldb, p.ab_bytes, true),
        };
        let c = span(0, 0, mb, nb, p.ldc, p.c_bytes, false);
        [a.1, b.1, c.1].iter().all(|&len| len + slack <= limits.max_range)
    };
    // Start from the whole problem and halve the dimension that hurts most until a band fits.
    let (mut mb, mut nb, mut kb) = (p.m, p.n, p.k);
    let round = |v: usize, t: usize| v.div_ceil(t).max(1) * t;
    while !fits(mb.min(p.m), nb.min(p.n), kb.min(p.k)) {
        let can_m = mb > bm;
        let can_n = nb > bn;
        let can_k = kb > bk;
        if !(can_m || can_n || can_k) {
            return Err(Error::TooLarge(format!(
                "even one {bm}x{bn}x{bk} tile of this problem (lda={}, ldb={}, ldc={}) needs a buffer window larger than the device's maxStorageBufferRange of {} bytes",
                p.lda, p.ldb, p.ldc, limits.max_range
            )));
        }
        // Prefer splitting M/N (no extra K passes); split K last.
        if can_m && (mb >= nb || !can_n) {
            mb = round(mb / 2, bm);
        } else if can_n {
            nb = round(nb / 2, bn);
        } else {
            kb = round(kb / 2, bk);
        }
    }
    let mut passes = Vec::new();
    for m0 in (0..p.m).step_by(mb) {
        let m = mb.min(p.m - m0);
        for n0 in (0..p.n).step_by(nb) {
            let n = nb.min(p.n - n0);
            for k0 in (0..p.k).step_by(kb) {
                let k = kb.min(p.k - k0);
                let (a0, alen) = match p.a_layout {
                    Layout::RowMajor => span(m0, k0, m, k, p.lda, p.ab_bytes, true),
                    Layout::ColMajor => span(k0, m0, k, m, p.lda, p.ab_bytes, true),
                };
                let (b0, blen) = match p.b_layout {
                    Layout::RowMajor => span(k0, n0, k, n, p.ldb, p.ab_bytes, true),
                    Layout::ColMajor => span(n0, k0, n, k, p.ldb, p.ab_bytes, true),
                };
                let (c0, clen) = span(m0, n0, m, n, p.ldc, p.c_bytes, false);
                passes.push(Pass {
                    m0,
                    n0,
                    k0,
                    m,
                    n,
                    k,
                    groups: [n.div_ceil(bn) as u32, m.div_ceil(bm) as u32],
                    accumulate: k0 > 0,
                    a: window(a0, alen, limits),
                    b: window(b0, blen, limits),
                    c: window(c0, clen, limits),
                });
            }
        }
    }
    Ok(passes)
}

/// How many K slices to run concurrently (split-K) for a problem whose grid has `tiles`
/// workgroups of `subgroups` subgroups: enough to bring the GPU to about `target_subgroups`
/// subgroups in flight, at most 16, each slice at least 256 deep in K. CPU drivers never split.
pub fn choose_split_k(tiles: usize, subgroups: usize, k: usize, cpu_device: bool) -> u32 {
    const TARGET_SUBGROUPS: usize = 1024;
    if cpu_device || k < 512 {
        return 1;
    }
    let in_flight = tiles * subgroups;
    let want = TARGET_SUBGROUPS.div_ceil(in_flight.max(1));
    want.min(16).min(k / 256).max(1) as u32
}

/// Passes for split-K: `splits` concurrent slices of K (multiples of `k_step`), each writing the
/// whole M x N partial product to its own slice of a scratch buffer laid out like C (`ldc`),
/// `slice_bytes` apart. `None` when a slice's windows would not fit the limits (plan instead).
pub fn plan_split_k(
    problem: &Problem,
    geometry: &TileGeometry,
    limits: &DispatchLimits,
    splits: u32,
    slice_bytes: u64,
) -> Option<Vec<Pass>> {
    let p = problem;
    let (bm, bn, bk) = (geometry.bm as usize, geometry.bn as usize, geometry.bk as usize);
    let groups = [p.n.div_ceil(bn), p.m.div_ceil(bm)];
    if groups[0] > limits.max_groups[0] as usize || groups[1] > limits.max_groups[1] as usize {
        return None;
    }
    let kc = p.k.div_ceil(splits as usize).next_multiple_of(bk);
    let mut passes = Vec::new();
    for (s, k0) in (0..p.k).step_by(kc).enumerate() {
        let k = kc.min(p.k - k0);
        let (a0, alen) = match p.a_layout {
            Layout::RowMajor => span(0, k0, p.m, k, p.lda, p.ab_bytes, true),
            Layout::ColMajor => span(k0, 0, k, p.m, p.lda, p.ab_bytes, true),
        };
        let (b0, blen) = match p.b_layout {
            Layout::RowMajor => span(k0, 0, k, p.n, p.ldb, p.ab_bytes, true),
            Layout::ColMajor => span(0, k0, p.n, k, p.ldb, p.ab_bytes, true),
        };
        let (_, clen) = span(0, 0, p.m, p.n, p.ldc, p.c_bytes, false);
        let windows = [
            window(a0, alen, limits),
            window(b0, blen, limits),
            window(s as u64 * slice_bytes, clen, limits),
        ];
        if windows.iter().any(|w| w.bind_range > limits.max_range) {
            return None;
        }
        passes.push(Pass {
            m0: 0,
            n0: 0,
            k0,
            m: p.m,
            n: p.n,
            k,
            groups: [groups[0] as u32, groups[1] as u32],
            accumulate: false,
            a: windows[0],
            b: windows[1],
            c: windows[2],
        });
    }
    Some(passes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ComponentType::*;

    fn cfg(m: u32, n: u32, k: u32, ab: crate::ComponentType, r: crate::ComponentType) -> GPUSubgroupMatrixConfig {
        GPUSubgroupMatrixConfig {
            component_type: ab,
            result_type: r,
            m,
            n,
            k,
        }
    }

    fn h200_limits() -> DeviceLimits {
        DeviceLimits {
            subgroup_size: 32,
            min_subgroup_size: 32,
            max_subgroup_size: 32,
            required_subgroup_size_compute: true,
            max_shared_memory: 49152,
            max_workgroup_invocations: 1024,
            max_workgroup_size: [1024, 1024, 64],
            max_workgroup_count: [2147483647, 65535, 65535],
            max_storage_buffer_range: u32::MAX,
            min_storage_buffer_offset_alignment: 16,
            max_push_constants_size: 256,
            max_memory_allocation_size: u64::MAX,
            timestamp_period: 1.0,
        }
    }

    fn lavapipe_limits() -> DeviceLimits {
        DeviceLimits {
            subgroup_size: 8,
            min_subgroup_size: 8,
            max_subgroup_size: 8,
            max_shared_memory: 65536,
            max_workgroup_invocations: 1024,
            max_workgroup_size: [1024, 1024, 1024],
            max_workgroup_count: [65535, 65535, 65535],
            max_storage_buffer_range: 1 << 31,
            min_storage_buffer_offset_alignment: 16,
            ..h200_limits()
        }
    }

    #[test]
    fn h200_large_scheme() {
        let c = cfg(16, 16, 16, F16, F32);
        let s = TileScheme::new(&c, &h200_limits(), 32, (2, 2), (4, 4), 32).unwrap();
        let g = s.geometry(&c);
        assert_eq!((g.bm, g.bn, g.bk, g.threads), (128, 128, 32, 128));
        assert!(g.shared_bytes <= 49152, "{}", g.shared_bytes);
        assert_eq!(candidate_schemes(&c, &h200_limits(), 32, false)[0], s);
    }

    #[test]
    fn every_known_config_has_a_scheme() {
        for c in [
            cfg(8, 8, 8, F16, F16),
            cfg(8, 8, 8, F16, F32),
            cfg(8, 8, 8, U8, U32),
            cfg(8, 8, 8, I8, I32),
        ] {
            let v = candidate_schemes(&c, &lavapipe_limits(), 8, true);
            assert!(!v.is_empty(), "{c}");
            let g = v[0].geometry(&c);
            assert_eq!((g.bm, g.bn), (32, 32), "{c}");
        }
        for c in [
            cfg(16, 16, 16, F16, F32),
            cfg(16, 8, 16, F16, F16),
            cfg(16, 8, 8, F16, F32),
            cfg(16, 16, 32, I8, I32),
            cfg(16, 8, 32, U8, U32),
            cfg(16, 16, 16, Bf16, F32),
        ] {
            assert!(!candidate_schemes(&c, &h200_limits(), 32, false).is_empty(), "{c}");
        }
    }

    #[test]
    fn tuning_candidates_are_valid_and_varied() {
        let c = cfg(16, 16, 16, F16, F32);
        let l = h200_limits();
        let v = tuning_candidates(&c, &l, 32, false);
        assert!(v.len() > 20, "{}", v.len());
        assert!(v.iter().all(|s| s.check(&c, &l).is_ok()));
        assert!(v.iter().any(|s| s.stages == 2));
        assert_eq!(
            tuning_candidates(&c, &lavapipe_limits(), 8, true),
            candidate_schemes(&c, &lavapipe_limits(), 8, true)
        );
    }

    #[test]
    fn rejections_say_why() {
        let c = cfg(16, 16, 16, F16, F32);
        let l = h200_limits();
        let e = |r: Result<TileScheme>| r.unwrap_err().to_string();
        assert!(e(TileScheme::new(&c, &l, 32, (2, 4), (4, 2), 24)).contains("multiple of the config's k"));
        assert!(e(TileScheme::new(&c, &l, 16, (2, 4), (4, 2), 32)).contains("outside the device's range"));
        assert!(e(TileScheme::new(&c, &l, 32, (4, 4), (4, 4), 64)).contains("shared memory"));
        assert!(e(TileScheme::new(&c, &l, 32, (8, 8), (1, 1), 16)).contains("invocations"));
        assert!(e(TileScheme::new(&c, &l, 32, (4, 4), (1, 1), 16)).contains("does not divide"));
        let i8c = cfg(16, 16, 32, I8, I8);
        assert!(e(TileScheme::new(&i8c, &l, 32, (2, 2), (2, 2), 64)).contains("16 or 32 bits"));
    }

    /// The H200's coopmat2 facts for f16 -> f32 and f16 -> f16 as its driver reports them (`vk-sgmat info`,
    /// docs/devices/h200-info.txt), with the dimension cap lowered to test it.
    fn h200_with_cm2() -> crate::device::DeviceInfo {
        use crate::config::{CooperativeMatrix2, FlexibleDimensions, MatrixScope, RawComponent};
        let entry = |(mg, ng), inv, scope| FlexibleDimensions {
            m_granularity: mg,
            n_granularity: ng,
            k_granularity: 16,
            a_type: RawComponent::Known(F16),
            b_type: RawComponent::Known(F16),
            c_type: RawComponent::Known(F32),
            result_type: RawComponent::Known(F32),
            saturating_accumulation: false,
            scope,
            workgroup_invocations: inv,
        };
        let cm2 = CooperativeMatrix2 {
            workgroup_scope: true,
            flexible_dimensions: true,
            tensor_addressing: true,
            workgroup_scope_max_workgroup_size: 256,
            flexible_dimensions_max_dimension: 256,
            workgroup_scope_reserved_shared_memory: 8192,
            flexible: [F32, F16]
                .into_iter()
                .flat_map(|r| {
                    let typed = move |mut e: FlexibleDimensions| {
                        e.c_type = RawComponent::Known(r);
                        e.result_type = RawComponent::Known(r);
                        e
                    };
                    [
                        entry((16, 16), 0, MatrixScope::Subgroup),
                        entry((16, 16), 32, MatrixScope::Workgroup),
                        entry((16, 16), 64, MatrixScope::Workgroup),
                        entry((32, 16), 128, MatrixScope::Workgroup),
                        entry((32, 32), 256, MatrixScope::Workgroup),
                    ]
                    .map(typed)
                })
                .collect(),
            ..Default::default()
        };
        let mut info = crate::device::test_device(h200_limits(), Some(cm2));
        info.vendor_id = VENDOR_NVIDIA;
        info.features.storage_buffer_8bit_access = true;
        info.features.storage_buffer_16bit_access = true;
        info
    }

    #[test]
    fn default_scheme_fills_the_gpu_or_takes_the_small_tile() {
        let c = cfg(16, 16, 16, F16, F32);
        let info = h200_with_cm2();
        let sg = candidate_schemes(&c, &info.limits, 32, false);
        let mut all = preferred_workgroup_schemes(&c, &info, 32);
        all.extend(sg.iter().copied());
        let small = small_problem_scheme(&sg);
        let pick = |m, n| pick_scheme(&all, small, &c, (m, n), false).unwrap().name();
        // The sizes measured on the H200 (docs/performance.md, "Small problems").
        assert_eq!(pick(64, 64), "sg1x2_fr2x2_k32_s32");
        assert_eq!(pick(512, 512), "sg1x2_fr2x2_k32_s32");
        assert_eq!(pick(16, 4096), "sg1x2_fr2x2_k32_s32");
        assert_eq!(pick(1024, 1024), "wg_t128_fr4x4_k32_u2");
        assert_eq!(pick(2048, 2048), "wg_t128_fr8x8_k32_u4");
        assert_eq!(pick(4096, 11008), "wg_t128_fr8x8_k32_u4");
        // Without the extension: the largest subgroup-scope tile whose grid fills the GPU.
        let plain = crate::device::test_device(h200_limits(), None);
        assert!(preferred_workgroup_schemes(&c, &plain, 32).is_empty());
        let pick = |m, n| pick_scheme(&sg, small, &c, (m, n), false).unwrap();
        assert_eq!(pick(4096, 4096).name(), "sg2x2_fr4x4_k32_s32");
        let g = pick(1024, 1024).geometry(&c);
        assert_eq!((g.bm, g.bn, g.threads), (64, 128, 256));
        // A tile is never more than twice the problem; one that is, is the last resort only.
        let tiny = cfg(16, 16, 16, F16, F32);
        let only_big = [sg[0]];
        assert_eq!(pick_scheme(&only_big, None, &tiny, (8, 8), false), Some(sg[0]));
        // CPU drivers: the first candidate that fits, whatever its grid.
        let lp = candidate_schemes(&cfg(8, 8, 8, F16, F32), &lavapipe_limits(), 8, true);
        let lp_small = small_problem_scheme(&lp);
        let p = pick_scheme(&lp, lp_small, &cfg(8, 8, 8, F16, F32), (64, 64), true).unwrap();
        assert_eq!(p, lp[0]);
    }

    #[test]
    fn measured_workgroup_schemes_lead_on_nvidia_only() {
        let c = cfg(16, 16, 16, F16, F32);
        let mut info = h200_with_cm2();
        let names: Vec<String> = preferred_workgroup_schemes(&c, &info, 32)
            .iter()
            .map(|s| s.name())
            .collect();
        assert_eq!(names, ["wg_t128_fr8x8_k32_u4", "wg_t128_fr4x4_k32_u2"]);
        let names: Vec<String> = preferred_workgroup_schemes(&cfg(16, 16, 16, F16, F16), &info, 32)
            .iter()
            .map(|s| s.name())
            .collect();
        assert_eq!(
            names,
            ["wg_t256_fr16x16_k32_u4", "wg_t128_fr8x8_k32_u4", "wg_t128_fr4x4_k32_u2"]
        );
        // Integer configs keep the subgroup-scope default (a tie on the H200).
        assert!(preferred_workgroup_schemes(&cfg(16, 16, 32, I8, I32), &info, 32).is_empty());
        info.vendor_id = 0x1002;
        assert!(preferred_workgroup_schemes(&c, &info, 32).is_empty());
    }

    #[test]
    fn workgroup_schemes_follow_the_device() {
        let c = cfg(16, 16, 16, F16, F32);
        let info = h200_with_cm2();
        let v = workgroup_candidates(&c, &info, 32);
        assert!(v
            .iter()
            .all(|s| s.scope == KernelScope::Workgroup && s.check_device(&c, &info).is_ok()));
        let g = v[0].geometry(&c);
        assert_eq!((g.bm, g.bn, g.bk, g.threads, g.shared_bytes), (128, 256, 32, 256, 0));
        assert_eq!(v[0].name(), "wg_t256_fr8x16_k32_u4");
        // Largest workgroups first; no more than 512 bytes of accumulator per invocation (one
        // 32-invocation workgroup may take 64x64, not 128x256).
        let threads: Vec<u32> = v.iter().map(|s| s.geometry(&c).threads).collect();
        assert!(threads.windows(2).all(|w| w[0] >= w[1]), "{threads:?}");
        assert_eq!(threads.iter().filter(|&&t| t == 256).count(), 6 * 3);
        assert!(v.iter().all(|s| {
            let g = s.geometry(&c);
            g.bm * g.bn * 4 <= 512 * g.threads
        }));
        let last = v.last().unwrap().geometry(&c);
        assert_eq!((last.bm, last.bn, last.threads), (64, 64, 32));

        let e = |r: Result<TileScheme>| r.unwrap_err().to_string();
        // No extension, or an extension without workgroup scope: the error says what is missing.
        let plain = crate::device::test_device(h200_limits(), None);
        assert!(workgroup_candidates(&c, &plain, 32).is_empty());
        let msg = e(TileScheme::workgroup(&c, &plain, 32, (1, 8), (8, 2), (32, 1)));
        assert!(
            msg.contains("VK_NV_cooperative_matrix2") && msg.contains("does not offer"),
            "{msg}"
        );
        // 8- and 16-bit operands need 8- and 16-bit storage, whatever the device lists.
        let i8c = cfg(16, 16, 32, I8, I32);
        let mut no8 = info.clone();
        no8.features.storage_buffer_8bit_access = false;
        let msg = e(TileScheme::workgroup(&i8c, &no8, 32, (1, 8), (8, 2), (64, 1)));
        assert!(msg.contains("storageBuffer8BitAccess"), "{msg}");
        let mut no16 = info.clone();
        no16.features.storage_buffer_16bit_access = false;
        let msg = e(TileScheme::workgroup(&c, &no16, 32, (1, 8), (8, 2), (32, 1)));
        assert!(msg.contains("storageBuffer16BitAccess"), "{msg}");
        // Types the device lists no workgroup-scope entry for.
        assert!(workgroup_candidates(&i8c, &info, 32).is_empty());
        let msg = e(TileScheme::workgroup(&i8c, &info, 32, (1, 8), (8, 2), (64, 1)));
        assert!(msg.contains("not offered") && msg.contains("none"), "{msg}");
        // A workgroup size with no entry, a tile off the granularity, a dimension too large.
        let msg = e(TileScheme::workgroup(&c, &info, 32, (1, 3), (8, 2), (32, 1)));
        assert!(
            msg.contains("96 invocations") && msg.contains("256 invocations"),
            "{msg}"
        );
        let cn8 = cfg(16, 8, 16, F16, F32);
        assert!(e(TileScheme::workgroup(&cn8, &info, 32, (8, 1), (1, 1), (32, 1))).contains("not offered"));
        assert!(e(TileScheme::workgroup(&c, &info, 32, (1, 8), (32, 2), (32, 1))).contains("exceeds"));
    }

    fn problem(m: usize, n: usize, k: usize, a: Layout, b: Layout) -> Problem {
        let ld = |outer_inner: (usize, usize)| outer_inner.1.next_multiple_of(8);
        Problem {
            m,
            n,
            k,
            a_layout: a,
            b_layout: b,
            lda: ld(a.outer_inner(m, k)),
            ldb: ld(b.outer_inner(k, n)),
            ldc: n.next_multiple_of(4),
            ab_bytes: 2,
            c_bytes: 4,
        }
    }

    fn geom() -> TileGeometry {
        TileGeometry {
            bm: 32,
            bn: 32,
            bk: 16,
            threads: 32,
            shared_bytes: 0,
        }
    }

    /// Every output element is covered exactly once per K range, and K is covered exactly once.
    fn assert_covers(p: &Problem, passes: &[Pass], limits: &DispatchLimits) {
        let mut hits = vec![0usize; p.m * p.n];
        for pass in passes {
            assert!(pass.groups[0] <= limits.max_groups[0] && pass.groups[1] <= limits.max_groups[1]);
            for w in [pass.a, pass.b, pass.c] {
                assert!(w.bind_range <= limits.max_range, "{w:?}");
                assert_eq!(w.bind_offset % limits.offset_alignment, 0);
                assert_eq!(w.start % 16, 0, "operand start must stay 16-byte aligned");
            }
            for r in pass.m0..pass.m0 + pass.m {
                for c in pass.n0..pass.n0 + pass.n {
                    hits[r * p.n + c] += pass.k;
                }
            }
            assert_eq!(pass.accumulate, pass.k0 > 0);
        }
        assert!(hits.iter().all(|&h| h == p.k), "every output must see all of K once");
    }

    #[test]
    fn one_pass_when_it_fits() {
        let p = problem(257, 129, 65, Layout::RowMajor, Layout::ColMajor);
        let l = DispatchLimits::from_device(&lavapipe_limits());
        let passes = plan(&p, &geom(), &l).unwrap();
        assert_eq!(passes.len(), 1);
        assert_eq!(passes[0].groups, [5, 9]);
        assert_covers(&p, &passes, &l);
    }

    #[test]
    fn splits_for_workgroup_count() {
        let p = problem(300, 700, 5, Layout::RowMajor, Layout::RowMajor);
        let l = DispatchLimits {
            max_groups: [4, 3],
            max_range: u64::MAX,
            offset_alignment: 64,
        };
        let passes = plan(&p, &geom(), &l).unwrap();
        assert!(passes.len() > 1);
        assert_covers(&p, &passes, &l);
    }

    #[test]
    fn splits_for_buffer_range_in_every_layout() {
        for a in [Layout::RowMajor, Layout::ColMajor] {
            for b in [Layout::RowMajor, Layout::ColMajor] {
                let p = problem(200, 150, 333, a, b);
                let l = DispatchLimits {
                    max_groups: [65535; 2],
                    max_range: 24 << 10,
                    offset_alignment: 256,
                };
                let passes = plan(&p, &geom(), &l).unwrap();
                assert!(passes.len() > 1, "{a:?}{b:?}");
                assert_covers(&p, &passes, &l);
            }
        }
    }

    #[test]
    fn k_splits_accumulate() {
        // Column-major A with a long K: only K chunks can shrink A's window.
        let p = problem(32, 32, 4000, Layout::ColMajor, Layout::RowMajor);
        let l = DispatchLimits {
            max_groups: [65535; 2],
            max_range: 32 << 10,
            offset_alignment: 16,
        };
        let passes = plan(&p, &geom(), &l).unwrap();
        assert!(passes.iter().filter(|p| p.accumulate).count() >= 1);
        assert_covers(&p, &passes, &l);
    }

    #[test]
    fn split_k_heuristic_and_plan() {
        // 16x4096x4096 with 32x32 tiles of one subgroup: 128 subgroups, so 8 slices of 512.
        assert_eq!(choose_split_k(128, 1, 4096, false), 8);
        assert_eq!(choose_split_k(1024, 4, 4096, false), 1, "a full GPU needs no split");
        assert_eq!(choose_split_k(1, 1, 700, false), 2, "slices stay at least 256 deep");
        assert_eq!(choose_split_k(1, 1, 100_000, true), 1, "never on CPU drivers");
        let p = problem(16, 4096, 4096, Layout::RowMajor, Layout::ColMajor);
        let l = DispatchLimits {
            max_groups: [65535; 2],
            max_range: u64::MAX,
            offset_alignment: 256,
        };
        let slice = (p.m * p.ldc * p.c_bytes) as u64;
        let passes = plan_split_k(&p, &geom(), &l, 8, slice).unwrap();
        assert_eq!(passes.len(), 8);
        assert_eq!(passes.iter().map(|x| x.k).sum::<usize>(), 4096);
        assert!(passes
            .iter()
            .all(|x| x.k0 % 16 == 0 && !x.accumulate && x.c.start % 16 == 0));
        assert_eq!(passes[3].c.bind_offset + passes[3].c.start, 3 * slice);
        // Uneven K: the last slice is shorter and K is still covered once.
        let p = problem(16, 64, 1000, Layout::ColMajor, Layout::RowMajor);
        let passes = plan_split_k(&p, &geom(), &l, 3, 1 << 20).unwrap();
        assert_eq!(passes.iter().map(|x| x.k).sum::<usize>(), 1000);
    }

    #[test]
    fn impossible_window_is_an_error() {
        let mut p = problem(64, 64, 64, Layout::RowMajor, Layout::RowMajor);
        p.lda = 1 << 20;
        let l = DispatchLimits {
            max_groups: [65535; 2],
            max_range: 1 << 20,
            offset_alignment: 16,
        };
        assert!(matches!(plan(&p, &geom(), &l), Err(Error::TooLarge(_))));
    }
}
