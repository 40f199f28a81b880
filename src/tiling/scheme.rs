//! [`TileScheme`]: how one workgroup tiles its block of C, checked against a config and a device.

use super::{KernelScope, VECTOR_BYTES};
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::{DeviceInfo, DeviceLimits};
use crate::error::Result;
use serde::{Deserialize, Serialize};

/// Bounds every scheme obeys whatever the device (the device's own limits are tighter). They keep
/// every derived size far from 32-bit overflow, so no scheme can wrap an extent to a small or
/// zero value: a scheme read from an autotune file or built from arbitrary fields is either
/// within them or refused.
pub mod bounds {
    /// Largest subgroup size (Vulkan's limit).
    pub const MAX_SUBGROUP_SIZE: u32 = 128;
    /// Largest workgroup (invocations).
    pub const MAX_INVOCATIONS: u32 = 4096;
    /// Most accumulator fragments per subgroup along M or N.
    pub const MAX_FRAGMENTS: u32 = 256;
    /// Largest fragment extent of a config (M, N or K).
    pub const MAX_FRAGMENT_EXTENT: u32 = 256;
    /// Largest workgroup tile along M or N, in elements.
    pub const MAX_TILE: u32 = 4096;
    /// Largest K step, in elements.
    pub const MAX_K_STEP: u32 = 4096;
    /// Largest shared-memory row skew, in bytes.
    pub const MAX_PAD_BYTES: u32 = 256;
    /// Largest raster group: the kernel multiplies it by the grid width in 32-bit arithmetic.
    pub const MAX_RASTER_GROUP: u32 = 16;
    /// Most K steps per loop iteration of a workgroup-scope kernel (its inner loop, which the
    /// driver unrolls).
    pub const MAX_WORKGROUP_STAGES: u32 = 32;
}

/// How one workgroup tiles its block of C: `sg_m x sg_n` subgroups, each owning `fr_m x fr_n`
/// accumulator fragments, stepping through K `k_step` at a time.
///
/// Fields are private: every scheme comes from a checked constructor ([`TileScheme::new`],
/// [`TileScheme::workgroup`], the `with_*` methods, or deserialisation, which applies the
/// device-independent [`bounds`]), so no scheme can make the kernel generator or the planner
/// overflow. A scheme is valid for the config and device it was checked against; every GEMM
/// checks it again ([`TileScheme::check_device`]) before use.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "SchemeFields", into = "SchemeFields")]
pub struct TileScheme {
    subgroup_size: u32,
    sg_m: u32,
    sg_n: u32,
    fr_m: u32,
    fr_n: u32,
    k_step: u32,
    pad_bytes: u32,
    stages: u32,
    raster_group: u32,
    scope: KernelScope,
    lookahead: u32,
    n_parts: u32,
    c_transposed: bool,
    right_first: bool,
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

/// The load lookahead a scheme of `scope` with `stages` takes unless told otherwise: every
/// load first for workgroup scope, none for subgroup scope (which has no lookahead).
fn default_lookahead(scope: KernelScope, stages: u32) -> u32 {
    match scope {
        KernelScope::Workgroup => stages.saturating_sub(1),
        KernelScope::Subgroup => 0,
    }
}

/// Saturates a size to 32 bits: anything that large is refused by the checks anyway.
fn sat(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl TileScheme {
    /// Builds a subgroup-scope scheme (16-byte row skew, single-buffered, row-by-row raster) and
    /// checks it against `config` and `limits`.
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
            lookahead: 0,
            n_parts: 1,
            c_transposed: false,
            right_first: false,
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
        steps: (u32, u32),
    ) -> Result<Self> {
        let s = Self::workgroup_for_limits(config, &info.limits, subgroup_size, sg, fr, steps)?;
        s.check_device(config, info)?;
        Ok(s)
    }

    /// A workgroup-scope scheme checked against `limits` only, not against the device's
    /// `VK_NV_cooperative_matrix2` list: for generating kernels without such a device (tests,
    /// tools). Every GEMM still checks the list ([`TileScheme::check_device`]) before use.
    pub fn workgroup_for_limits(
        config: &GPUSubgroupMatrixConfig,
        limits: &DeviceLimits,
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
            lookahead: default_lookahead(KernelScope::Workgroup, stages),
            n_parts: 1,
            c_transposed: false,
            right_first: false,
        };
        s.check(config, limits)?;
        Ok(s)
    }

    /// The same scheme with `stages` shared-memory buffers, checked again.
    pub fn with_stages(self, stages: u32, config: &GPUSubgroupMatrixConfig, limits: &DeviceLimits) -> Result<Self> {
        let s = Self {
            stages,
            lookahead: default_lookahead(self.scope, stages),
            ..self
        };
        s.check(config, limits)?;
        Ok(s)
    }

    /// The same scheme with a grouped workgroup raster (0 = off, at most
    /// [`bounds::MAX_RASTER_GROUP`]).
    pub fn with_raster_group(self, raster_group: u32) -> Result<Self> {
        let s = Self { raster_group, ..self };
        s.check_bounds()?;
        Ok(s)
    }

    /// Subgroup size the pipeline requires.
    pub fn subgroup_size(&self) -> u32 {
        self.subgroup_size
    }

    /// Subgroups along M.
    pub fn sg_m(&self) -> u32 {
        self.sg_m
    }

    /// Subgroups along N.
    pub fn sg_n(&self) -> u32 {
        self.sg_n
    }

    /// Subgroups per workgroup.
    pub fn subgroups(&self) -> u32 {
        self.sg_m * self.sg_n
    }

    /// Accumulator fragments per subgroup along M.
    pub fn fr_m(&self) -> u32 {
        self.fr_m
    }

    /// Accumulator fragments per subgroup along N.
    pub fn fr_n(&self) -> u32 {
        self.fr_n
    }

    /// K consumed per shared-memory stage (a multiple of the config's k).
    pub fn k_step(&self) -> u32 {
        self.k_step
    }

    /// Skew added to each shared-memory row, in bytes (breaks power-of-two strides; a multiple
    /// of 16 so every fragment start stays 16-byte aligned; 0 for workgroup scope).
    pub fn pad_bytes(&self) -> u32 {
        self.pad_bytes
    }

    /// Shared-memory stages: 1 (two barriers per K step) or 2 (double-buffered, one barrier).
    /// For workgroup scope: K steps per loop iteration (1 to 8), all loads first.
    pub fn stages(&self) -> u32 {
        self.stages
    }

    /// For workgroup scope: how many K steps ahead of its multiplies an iteration's loads are
    /// issued, 0 (each step's loads right before its multiply) to `stages - 1` (every load
    /// first, the default). At 0 the iteration is emitted as an inner loop of `stages` steps
    /// with an unroll hint, which the driver pipelines better than the same steps unrolled in
    /// the kernel. 0 for subgroup scope.
    pub fn lookahead(&self) -> u32 {
        self.lookahead
    }

    /// The same workgroup-scope scheme with its loads issued `lookahead` K steps ahead of their
    /// multiplies (see [`TileScheme::lookahead`]); refused for subgroup scope or beyond
    /// `stages - 1`.
    pub fn with_lookahead(self, lookahead: u32) -> Result<Self> {
        let s = Self { lookahead, ..self };
        s.check_bounds()?;
        Ok(s)
    }

    /// For workgroup scope: how many accumulators side by side along N cover the tile (1, 2 or
    /// 4), each `BN / n_parts` wide, sharing each K step's slice of A. 1 for subgroup scope.
    pub fn n_parts(&self) -> u32 {
        self.n_parts
    }

    /// The same workgroup-scope scheme with its tile held as `n_parts` accumulators along N
    /// (see [`TileScheme::n_parts`]), checked again for `config` and `limits`.
    pub fn with_n_parts(self, n_parts: u32, config: &GPUSubgroupMatrixConfig, limits: &DeviceLimits) -> Result<Self> {
        let s = Self { n_parts, ..self };
        s.check(config, limits)?;
        Ok(s)
    }

    /// For workgroup scope: whether the kernel computes its tile of C as the transpose
    /// `(B^T A^T)^T`, the roles of A and B swapped, and stores it through a transposing tensor
    /// view. Same tile of C, same result; NVIDIA's driver stores an accumulator 4-8% faster that
    /// way (docs/perf/JOURNAL.md). Not with N parts. Always false for subgroup scope.
    pub fn c_transposed(&self) -> bool {
        self.c_transposed
    }

    /// The same workgroup-scope scheme computing and storing its tile transposed (see
    /// [`TileScheme::c_transposed`]), checked again for `config` and `limits`.
    pub fn with_c_transposed(
        self,
        c_transposed: bool,
        config: &GPUSubgroupMatrixConfig,
        limits: &DeviceLimits,
    ) -> Result<Self> {
        let s = Self { c_transposed, ..self };
        s.check(config, limits)?;
        Ok(s)
    }

    /// For workgroup scope: whether each K step loads its right operand (B, or A^T when the tile
    /// is computed transposed) before its left one. The same loads in the other order; NVIDIA's
    /// driver schedules them differently (docs/perf/JOURNAL.md, "Deeper iterations"). Always false
    /// for subgroup scope.
    pub fn right_first(&self) -> bool {
        self.right_first
    }

    /// The same workgroup-scope scheme loading each step's right operand first (see
    /// [`TileScheme::right_first`]).
    pub fn with_right_first(self, right_first: bool) -> Result<Self> {
        let s = Self { right_first, ..self };
        s.check_bounds()?;
        Ok(s)
    }

    /// The accumulator's (rows, columns): `(BM, BN / n_parts)`, or `(BN, BM)` when the tile is
    /// computed transposed.
    pub fn accumulator_shape(&self, config: &GPUSubgroupMatrixConfig) -> (u32, u32) {
        let g = self.geometry(config);
        if self.c_transposed {
            (g.bn, g.bm)
        } else {
            (g.bm, g.bn / self.n_parts.max(1))
        }
    }

    /// Workgroup raster: 0 walks tiles row by row; G > 0 walks groups of G tile rows column by
    /// column, so consecutive workgroups share A rows and B columns in L2.
    pub fn raster_group(&self) -> u32 {
        self.raster_group
    }

    /// Subgroup-scope (the tiled kernel) or workgroup-scope matrices. With workgroup scope the
    /// workgroup tile is still `sg_m * fr_m * m` by `sg_n * fr_n * n` with
    /// `sg_m * sg_n * subgroup_size` invocations, but one matrix covers it, `k_step` is its K
    /// extent, and padding and stages do not apply.
    pub fn scope(&self) -> KernelScope {
        self.scope
    }

    /// Sizes derived for `config` (each saturating at `u32::MAX`; [`TileScheme::check`] refuses
    /// anything near that).
    pub fn geometry(&self, config: &GPUSubgroupMatrixConfig) -> TileGeometry {
        // Saturating: a config's fragment extents are arbitrary public fields.
        let mul = |xs: &[u32]| xs.iter().fold(1u64, |acc, &x| acc.saturating_mul(u64::from(x)));
        let bm = mul(&[self.sg_m, self.fr_m, config.m]);
        let bn = mul(&[self.sg_n, self.fr_n, config.n]);
        let bk = u64::from(self.k_step);
        let threads = mul(&[self.sg_m, self.sg_n, self.subgroup_size]);
        let geometry = |shared_bytes| TileGeometry {
            bm: sat(bm),
            bn: sat(bn),
            bk: sat(bk),
            threads: sat(threads),
            shared_bytes: sat(shared_bytes),
        };
        if self.scope == KernelScope::Workgroup {
            // The driver stages operands in shared memory it reserves itself.
            return geometry(0);
        }
        let es = u64::from(config.component_type.size_bytes());
        let pad = u64::from(self.pad_bytes);
        // Either orientation of each operand occupies the same bytes up to the skew; take the
        // larger so a scheme that fits one layout fits all.
        let operand = |rows: u64| {
            let row_major = rows.saturating_mul(bk * es + pad);
            let col_major = bk.saturating_mul(rows.saturating_mul(es).saturating_add(pad));
            row_major.max(col_major).saturating_mul(u64::from(self.stages))
        };
        let (a, b) = (operand(bm), operand(bn));
        // The epilogue's staging tiles overlay the larger operand array (see kernel::gemm).
        let stage = mul(&[
            self.sg_m,
            self.sg_n,
            config.m,
            config.n,
            config.result_type.size_bytes(),
        ]);
        geometry(a.saturating_add(b).saturating_add(stage.saturating_sub(a.max(b))))
    }

    /// A short name, e.g. `sg2x4_fr4x2_k32_s32`, or `wg_t256_fr8x16_k32` for a workgroup-scope
    /// scheme (256 invocations, a tile of 8x16 fragments).
    pub fn name(&self) -> String {
        if self.scope == KernelScope::Workgroup {
            // The split into subgroups means nothing to a workgroup-scope kernel: name the
            // workgroup size and the tile in fragments.
            return format!(
                "wg_t{}_fr{}x{}_k{}{}{}{}{}{}{}",
                self.sg_m * self.sg_n * self.subgroup_size,
                self.sg_m * self.fr_m,
                self.sg_n * self.fr_n,
                self.k_step,
                if self.stages > 1 {
                    format!("_u{}", self.stages)
                } else {
                    String::new()
                },
                // Only where it differs from the default, so older names stay valid.
                if self.lookahead + 1 < self.stages {
                    format!("_a{}", self.lookahead)
                } else {
                    String::new()
                },
                if self.n_parts > 1 {
                    format!("_p{}", self.n_parts)
                } else {
                    String::new()
                },
                if self.raster_group > 0 {
                    format!("_g{}", self.raster_group)
                } else {
                    String::new()
                },
                if self.right_first { "_rf" } else { "" },
                if self.c_transposed { "_ct" } else { "" }
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

#[path = "scheme_device.rs"]
mod device;

#[path = "scheme_checks.rs"]
mod checks;

#[path = "scheme_fields.rs"]
mod fields;
use fields::SchemeFields;

#[cfg(test)]
#[path = "scheme_tests.rs"]
mod tests;
