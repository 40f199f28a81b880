//! [`TileScheme`]: how one workgroup tiles its block of C, checked against a config and a device.

use super::{KernelScope, VECTOR_BYTES};
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::{DeviceInfo, DeviceLimits};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ComponentType::*;
    use crate::tiling::candidate_schemes;
    use crate::tiling::test_support::{cfg, h200_limits};

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
}
