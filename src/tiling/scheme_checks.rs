//! [`TileScheme::check_bounds`] and [`TileScheme::check`]: the rules every scheme obeys, alone
//! and for a config on a device's limits (the device's matrix offer is `scheme_device.rs`).

use super::bounds::*;
use super::{shared_unit, TileGeometry, TileScheme};
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::DeviceLimits;
use crate::error::{Error, Result};
use crate::tiling::{KernelScope, VECTOR_BYTES};

impl TileScheme {
    /// The device- and config-independent [`bounds`](super::bounds); the error says which one failed.
    pub fn check_bounds(&self) -> Result<()> {
        let fields = [
            ("subgroup size", self.subgroup_size),
            ("sg_m", self.sg_m),
            ("sg_n", self.sg_n),
            ("fr_m", self.fr_m),
            ("fr_n", self.fr_n),
            ("k_step", self.k_step),
        ];
        if let Some((name, _)) = fields.iter().find(|f| f.1 == 0) {
            return bad(format!("{name} must be at least 1"));
        }
        if !self.subgroup_size.is_power_of_two() || self.subgroup_size > MAX_SUBGROUP_SIZE {
            return bad(format!(
                "subgroup size {} is not a power of two up to {MAX_SUBGROUP_SIZE}",
                self.subgroup_size
            ));
        }
        let threads = u64::from(self.sg_m)
            .saturating_mul(u64::from(self.sg_n))
            .saturating_mul(u64::from(self.subgroup_size));
        if threads > u64::from(MAX_INVOCATIONS) {
            return bad(format!(
                "{} x {} subgroups of {} make {threads} invocations; at most {MAX_INVOCATIONS}",
                self.sg_m, self.sg_n, self.subgroup_size
            ));
        }
        if self.fr_m > MAX_FRAGMENTS || self.fr_n > MAX_FRAGMENTS {
            return bad(format!(
                "{} x {} fragments per subgroup; at most {MAX_FRAGMENTS} each way",
                self.fr_m, self.fr_n
            ));
        }
        if self.k_step > MAX_K_STEP {
            return bad(format!("k_step {} exceeds {MAX_K_STEP}", self.k_step));
        }
        let max_stages = match self.scope {
            KernelScope::Subgroup => 2,
            KernelScope::Workgroup => MAX_WORKGROUP_STAGES,
        };
        if !(1..=max_stages).contains(&self.stages) {
            return bad(format!("stages must be 1 to {max_stages}, not {}", self.stages));
        }
        match self.scope {
            KernelScope::Workgroup if self.pad_bytes != 0 => {
                return bad("workgroup-scope schemes have no padding".into())
            }
            _ if self.pad_bytes % VECTOR_BYTES != 0 || self.pad_bytes > MAX_PAD_BYTES => {
                return bad(format!(
                "pad_bytes {} must be a multiple of {VECTOR_BYTES} up to {MAX_PAD_BYTES} (rows stay 16-byte aligned)",
                self.pad_bytes
            ))
            }
            _ => {}
        }
        if self.raster_group > MAX_RASTER_GROUP {
            return bad(format!("raster group {} exceeds {MAX_RASTER_GROUP}", self.raster_group));
        }
        match self.scope {
            KernelScope::Subgroup if self.lookahead != 0 => {
                return bad("subgroup-scope schemes have no load lookahead".into())
            }
            KernelScope::Subgroup if self.n_parts != 1 => {
                return bad("subgroup-scope schemes have one accumulator grid, no N parts".into())
            }
            KernelScope::Workgroup if ![1, 2, 4].contains(&self.n_parts) => {
                return bad(format!("N parts must be 1, 2 or 4, not {}", self.n_parts))
            }
            KernelScope::Subgroup if self.c_transposed => {
                return bad("subgroup-scope schemes store C as it is, not transposed".into())
            }
            KernelScope::Subgroup if self.right_first => {
                return bad("subgroup-scope schemes have no load order to choose".into())
            }
            KernelScope::Workgroup if self.c_transposed && self.n_parts != 1 => {
                return bad("a tile computed transposed is one accumulator, not N parts".into())
            }
            KernelScope::Workgroup if self.lookahead >= self.stages => {
                return bad(format!(
                    "load lookahead {} must be below the {} K steps per iteration",
                    self.lookahead, self.stages
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// Checks the scheme for `config` on a device with `limits` (zero limits are not checked);
    /// the error says which rule failed.
    pub fn check(&self, config: &GPUSubgroupMatrixConfig, limits: &DeviceLimits) -> Result<()> {
        self.check_bounds()?;
        self.check_config(config, limits)?;
        let g = self.geometry(config);
        self.check_tile(&g, config)?;
        if self.scope == KernelScope::Workgroup {
            self.check_workgroup_parts(&g, config)?;
            return self.check_threads(&g, limits);
        }
        self.check_subgroup_tile(&g, config)?;
        self.check_threads(&g, limits)?;
        if limits.max_shared_memory != 0 && g.shared_bytes > limits.max_shared_memory {
            return bad(format!(
                "{} bytes of shared memory exceed the device's {}",
                g.shared_bytes, limits.max_shared_memory
            ));
        }
        Ok(())
    }

    /// The config's fragment and types, and the subgroup size, against what the kernels take
    /// and the device allows; K's step a whole number of fragments.
    fn check_config(&self, config: &GPUSubgroupMatrixConfig, limits: &DeviceLimits) -> Result<()> {
        if [config.m, config.n, config.k]
            .iter()
            .any(|&e| e == 0 || e > MAX_FRAGMENT_EXTENT)
        {
            return bad(format!(
                "fragment shape {}x{}x{} is outside 1..={MAX_FRAGMENT_EXTENT}",
                config.m, config.n, config.k
            ));
        }
        if limits.max_subgroup_size != 0
            && (self.subgroup_size < limits.min_subgroup_size || self.subgroup_size > limits.max_subgroup_size)
        {
            return bad(format!(
                "subgroup size {} outside the device's range {}..={}",
                self.subgroup_size, limits.min_subgroup_size, limits.max_subgroup_size
            ));
        }
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
        Ok(())
    }

    /// The tile's sides: at most [`MAX_TILE`], each whole 16-byte vectors.
    fn check_tile(&self, g: &TileGeometry, config: &GPUSubgroupMatrixConfig) -> Result<()> {
        let es = config.component_type.size_bytes();
        if g.bm > MAX_TILE || g.bn > MAX_TILE {
            return bad(format!("a {}x{} tile exceeds {MAX_TILE} on a side", g.bm, g.bn));
        }
        for (name, len) in [("BM", g.bm), ("BN", g.bn), ("BK", g.bk)] {
            if (len * es) % VECTOR_BYTES != 0 {
                return bad(format!(
                    "{name} = {len} elements is not a multiple of {VECTOR_BYTES} bytes"
                ));
            }
        }
        Ok(())
    }

    /// A workgroup-scope tile: BN in `n_parts` parts of whole fragments and vectors, and
    /// whole fragments transposed where C is.
    fn check_workgroup_parts(&self, g: &TileGeometry, config: &GPUSubgroupMatrixConfig) -> Result<()> {
        let es = config.component_type.size_bytes();
        let part = g.bn / self.n_parts;
        if g.bn % self.n_parts != 0 || part % config.n != 0 || (part * es) % VECTOR_BYTES != 0 {
            return bad(format!(
                "BN = {} does not split into {} parts of whole {}-column fragments and 16-byte rows",
                g.bn, self.n_parts, config.n
            ));
        }
        if self.c_transposed && (g.bn % config.m != 0 || g.bm % config.n != 0) {
            return bad(format!(
                "the {}x{} tile transposed is not whole {}x{} fragments",
                g.bm, g.bn, config.m, config.n
            ));
        }
        Ok(())
    }

    /// A subgroup-scope tile: A's and B's tiles divide over the invocations in vectors, a
    /// fragment's words over a subgroup, and each fragment extent is addressable in words.
    fn check_subgroup_tile(&self, g: &TileGeometry, config: &GPUSubgroupMatrixConfig) -> Result<()> {
        let (es, rs) = (config.component_type.size_bytes(), config.result_type.size_bytes());
        for (name, rows) in [("A", g.bm), ("B", g.bn)] {
            let vecs = u64::from(rows) * u64::from(g.bk) * u64::from(es) / u64::from(VECTOR_BYTES);
            if vecs % u64::from(g.threads) != 0 {
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
        Ok(())
    }

    /// The workgroup's invocations within the device's limits.
    fn check_threads(&self, g: &TileGeometry, limits: &DeviceLimits) -> Result<()> {
        if limits.max_workgroup_invocations != 0
            && (g.threads > limits.max_workgroup_invocations || g.threads > limits.max_workgroup_size[0])
        {
            return bad(format!(
                "{} invocations exceed the device's limit of {}",
                g.threads,
                limits.max_workgroup_invocations.min(limits.max_workgroup_size[0])
            ));
        }
        Ok(())
    }
}

/// A [`Error::InvalidTileScheme`] saying `msg`.
fn bad(msg: String) -> Result<()> {
    Err(Error::InvalidTileScheme(msg))
}
