//! Choosing a tile scheme for a problem on this context: the tuning file's winner, else the
//! default pick over the config's [`SchemeLists`] (built once per config and context); and the
//! converting paths' own choices (the accurate split, its planes, subgroup scope alone).

use super::context::Context;
use crate::config::GPUSubgroupMatrixConfig;
use crate::error::{Error, Result};
use crate::kernel::Load;
use crate::tiling::{
    candidate_schemes, pick_scheme, preferred_planes_schemes, workgroup_candidates, KernelScope, Layout, SchemeLists,
    TileScheme, TuneCache, TuneKey,
};
use std::sync::Arc;

impl Context {
    /// The scheme of the accurate split done first ([`Load::Planes`]): the first of
    /// [`preferred_planes_schemes`] whose tile the problem fills (any, for a small problem).
    pub(crate) fn choose_planes_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n): (usize, usize),
    ) -> Result<TileScheme> {
        if !self.takes_workgroup_scope(config) {
            return Err(Error::Unsupported(format!(
                "ComputeMode::Accurate with convert_first: Some(true) splits f32 operands into f16 \
                 planes that only the workgroup-scope kernel reads, and this device has no \
                 workgroup-scope kernel for {config} (VK_NV_cooperative_matrix2 workgroup scope \
                 and tensor addressing, on a GPU); use convert_first: None or Some(false), which \
                 split as the subgroup-scope kernel loads, with the same error bound"
            )));
        }
        let all = preferred_planes_schemes(config, self.device.info(), self.subgroup_size());
        let fills = |s: &&TileScheme| {
            let g = s.geometry(config);
            m.div_ceil(g.bm as usize) * n.div_ceil(g.bn as usize) >= 128
        };
        all.iter().find(fills).or(all.last()).copied().ok_or_else(|| {
            Error::InvalidTileScheme(format!(
                "no workgroup-scope scheme for the accurate split's planes of {config} here"
            ))
        })
    }

    /// Whether `scheme`'s shared memory fits with each operand tile stored twice (the accurate
    /// split's high and low parts).
    pub(crate) fn split_fits(&self, scheme: &TileScheme, config: &GPUSubgroupMatrixConfig) -> bool {
        2 * scheme.geometry(config).shared_bytes <= self.device.info().limits.max_shared_memory
    }

    /// [`Context::choose_scheme`] among the subgroup-scope schemes whose shared memory still fits
    /// with each operand's tile twice over (the accurate split's high and low parts).
    pub(crate) fn choose_split_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        m: usize,
        n: usize,
    ) -> Result<TileScheme> {
        let limits = &self.device.info().limits;
        // Measured best on the H100 (4096^3: 66 TFLOP/s, against 39 for the same tile with K
        // steps of 16 and 30 for 4x4 fragments per subgroup): 8 subgroups of 4x2 fragments,
        // K steps of 64 bytes. Taken where it fits and the problem fills it.
        let k_step = 64 / config.component_type.size_bytes();
        if let Ok(s) = TileScheme::new(config, limits, self.subgroup_size(), (2, 4), (4, 2), k_step) {
            let g = s.geometry(config);
            let fills = m.div_ceil(g.bm as usize) * n.div_ceil(g.bn as usize) >= 128;
            if !self.is_cpu() && fills && self.split_fits(&s, config) {
                return Ok(s);
            }
        }
        let (subgroup, small) = self.subgroup_schemes(config);
        let fits: Vec<TileScheme> = subgroup.into_iter().filter(|s| self.split_fits(s, config)).collect();
        // A K step's sums double the accumulators: at most 8 fragments per subgroup where
        // possible, so they stay in registers.
        // Then the longer K steps first: each step ends in f32 adds, and on the H100 128x128 tiles
        // of 8 subgroups ran 66 TFLOP/s with K steps of 32, 39 with 16 (4096^3).
        let mut lean: Vec<TileScheme> = fits.iter().copied().filter(|s| s.fr_m() * s.fr_n() <= 8).collect();
        lean.sort_by_key(|s| std::cmp::Reverse(s.k_step()));
        let fits = if lean.is_empty() { fits } else { lean };
        let small = small.filter(|s| fits.contains(s));
        pick_scheme(&fits, small, config, (m, n), 1, self.is_cpu())
            .ok_or_else(|| Error::InvalidTileScheme(format!("no tile scheme fits the accurate split of {config}")))
    }

    /// [`Context::choose_scheme`] among the subgroup-scope schemes alone.
    pub(crate) fn choose_subgroup_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n): (usize, usize),
        batch: usize,
    ) -> Result<TileScheme> {
        let (subgroup, small) = self.subgroup_schemes(config);
        pick_scheme(&subgroup, small, config, (m, n), batch, self.is_cpu()).ok_or_else(|| {
            Error::InvalidTileScheme(format!("no subgroup-scope tile scheme fits {config} on this device"))
        })
    }

    /// [`Context::choose_scheme`]'s candidates of subgroup scope (the converting kernels have no
    /// other), best first, with its small-problem scheme.
    fn subgroup_schemes(&self, config: &GPUSubgroupMatrixConfig) -> (Vec<TileScheme>, Option<TileScheme>) {
        let lists = self.scheme_lists(config);
        let subgroup = lists
            .ordered
            .iter()
            .copied()
            .filter(|s| s.scope() == KernelScope::Subgroup)
            .collect();
        (subgroup, lists.small)
    }

    /// The scheme for a problem: the autotuner's winner for its bucket where the tuning file
    /// (see [`ContextOptions::autotune`](crate::ContextOptions::autotune)) has one, else
    /// [`Context::choose_scheme`]'s. Never times anything: [`Context::tune`] does. Operands converted as loaded take the heuristic's
    /// subgroup-scope scheme (the workgroup-scope kernel does not convert). `narrow_c`: C is
    /// stored in a 16-bit type.
    pub(crate) fn scheme_for(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
        loads: [Load; 2],
        (batch, narrow_c): (usize, bool),
    ) -> Result<TileScheme> {
        if loads != [Load::Native; 2] {
            return self.choose_subgroup_scheme(config, (m, n), batch);
        }
        // Autotuning times single GEMMs: a batch takes the rule, over its whole grid.
        let (Some(cache), 1) = (&self.tune_cache, batch) else {
            return self.choose_layout_scheme(config, (m, n, k), layouts, (batch, narrow_c));
        };
        let key = TuneKey::new(config, layouts, (m, n, k));
        let known = lock_tuning(cache).get(&key, config, self.device_info());
        match known {
            Some(s) => Ok(s),
            None => self.choose_layout_scheme(config, (m, n, k), layouts, (batch, narrow_c)),
        }
    }

    /// Tile schemes valid on this device for `config`: the subgroup-scope ones, largest first,
    /// then the workgroup-scope ones where the device offers `VK_NV_cooperative_matrix2`.
    pub fn schemes(&self, config: &GPUSubgroupMatrixConfig) -> Vec<TileScheme> {
        let info = self.device.info();
        let mut out = candidate_schemes(config, &info.limits, self.subgroup_size(), self.is_cpu());
        out.extend(workgroup_candidates(config, info, self.subgroup_size()));
        out
    }

    /// The default scheme for an `m x n` output of a long K: [`pick_scheme`] over the
    /// measured-faster workgroup-scope schemes of [`preferred_long_k_schemes`](crate::tiling::preferred_long_k_schemes) and
    /// [`preferred_workgroup_schemes`](crate::tiling::preferred_workgroup_schemes), then the subgroup-scope ones of [`candidate_schemes`]
    /// (largest grid-filling tile first; a 32x64 tile for small problems).
    pub fn choose_scheme(&self, config: &GPUSubgroupMatrixConfig, m: usize, n: usize) -> Result<TileScheme> {
        self.choose_batch_scheme(config, (m, n), 1)
    }

    /// [`Context::choose_scheme`] for a batch of `batch` GEMMs in one grid.
    pub(crate) fn choose_batch_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n): (usize, usize),
        batch: usize,
    ) -> Result<TileScheme> {
        // K unknown: taken as long (a whole number of any loop iteration, many of them).
        const LONG_K: usize = 1 << 20;
        let layouts = (Layout::RowMajor, Layout::RowMajor);
        self.choose_layout_scheme(config, (m, n, LONG_K), layouts, (batch, false))
    }

    /// [`Context::choose_batch_scheme`] for an `m x n x k` GEMM with A and B stored as
    /// `layouts`: a row-major A with a column-major B (both K-contiguous) takes the deepest of
    /// [`preferred_k_contiguous_schemes`] that suits first (for f32 results also `tt`, and `nn`
    /// where M x N is at most 2048^2), else (int8, a shorter K) the deepest of
    /// [`preferred_k_contiguous_short_schemes`] that suits, then any layout
    /// [`preferred_long_k_schemes`](crate::tiling::preferred_long_k_schemes) and the other layouts [`preferred_deep_schemes`],
    /// where [`lead_suits`]: K at least four of every such scheme's loop iterations and, for
    /// 16-bit operands, a whole number of them or at least eight (their tiles run the one-step
    /// loop otherwise: 4096x4096x256 took 77 TFLOP/s with them, 95 without), and the problem at
    /// least the tile. A C stored in a
    /// 16-bit type (`narrow_c`) with a K of at most [`SHORT_K`] and row-major A and B takes
    /// [`preferred_short_k_schemes`] first.
    pub(crate) fn choose_layout_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        shape: (usize, usize, usize),
        layouts: (Layout, Layout),
        batch: (usize, bool),
    ) -> Result<TileScheme> {
        self.scheme_lists(config)
            .choose(config, shape, layouts, batch, self.is_cpu())
    }

    /// [`Context::choose_scheme`]'s candidates for `config`, built once per context.
    pub(crate) fn scheme_lists(&self, config: &GPUSubgroupMatrixConfig) -> Arc<SchemeLists> {
        let mut map = self.scheme_lists.lock().unwrap_or_else(|e| e.into_inner());
        let lists = map.entry(*config).or_insert_with(|| {
            Arc::new(SchemeLists::new(
                config,
                self.device.info(),
                self.subgroup_size(),
                self.is_cpu(),
            ))
        });
        lists.clone()
    }
}

/// The tuning file's table, locked (a poisoned lock still holds a valid table).
pub(crate) fn lock_tuning(cache: &std::sync::Mutex<TuneCache>) -> std::sync::MutexGuard<'_, TuneCache> {
    cache.lock().unwrap_or_else(|e| e.into_inner())
}
