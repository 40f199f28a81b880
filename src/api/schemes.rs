//! Choosing a tile scheme for a problem on this context: the tuning file's winner, else the
//! default pick over the config's [`SchemeLists`] (built once per config and context).

use super::context::Context;
use crate::config::GPUSubgroupMatrixConfig;
use crate::error::Result;
use crate::kernel::Load;
use crate::tiling::{candidate_schemes, workgroup_candidates, Layout, SchemeLists, TileScheme, TuneCache, TuneKey};
use std::sync::Arc;

impl Context {
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
    /// measured-faster workgroup-scope schemes of [`preferred_long_k_schemes`] and
    /// [`preferred_workgroup_schemes`], then the subgroup-scope ones of [`candidate_schemes`]
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
    /// [`preferred_long_k_schemes`] and the other layouts [`preferred_deep_schemes`],
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
