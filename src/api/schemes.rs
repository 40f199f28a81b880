//! Choosing a tile scheme: the device's valid schemes, and the default pick over the schemes
//! measured faster (built once per config and context).

use super::context::Context;
use crate::config::GPUSubgroupMatrixConfig;
use crate::error::{Error, Result};
use crate::tiling::{
    candidate_schemes, k_suits, pick_scheme, preferred_k_contiguous_schemes, preferred_workgroup_schemes,
    small_problem_scheme, workgroup_candidates, Layout, TileScheme,
};
use std::sync::Arc;

/// The schemes [`Context::choose_scheme`] picks from for one config, best first.
pub(crate) struct SchemeLists {
    /// The measured-faster workgroup-scope schemes, then the subgroup-scope ones.
    pub(crate) ordered: Vec<TileScheme>,
    /// For problems no candidate's grid fills: 2 subgroups of 2x2 fragments (32x64 with 16x16
    /// fragments), else the smallest subgroup-scope scheme.
    pub(crate) small: Option<TileScheme>,
    /// The schemes measured faster when both operands are K-contiguous, then `ordered`; the
    /// first `k_lead` are those schemes.
    pub(crate) k_contiguous: Vec<TileScheme>,
    pub(crate) k_lead: usize,
}

impl Context {
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
        self.choose_batch_scheme(config, (m, n), 1)
    }

    /// [`Context::choose_scheme`] for a batch of `batch` GEMMs in one grid.
    pub(crate) fn choose_batch_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n): (usize, usize),
        batch: usize,
    ) -> Result<TileScheme> {
        self.choose_layout_scheme(config, (m, n, 0), (Layout::RowMajor, Layout::RowMajor), batch)
    }

    /// [`Context::choose_batch_scheme`] for an `m x n x k` GEMM with A and B stored as
    /// `layouts`: a row-major A with a column-major B (both K-contiguous) takes
    /// [`preferred_k_contiguous_schemes`] first where K is at least four of every such
    /// scheme's loop iterations and a whole number of them (their tiles run the one-step loop
    /// otherwise: 4096x4096x256 took 77 TFLOP/s with them, 95 without).
    pub(crate) fn choose_layout_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
        batch: usize,
    ) -> Result<TileScheme> {
        let lists = self.scheme_lists(config);
        let lead = &lists.k_contiguous[..lists.k_lead];
        let k_first = layouts == (Layout::RowMajor, Layout::ColMajor) && k_suits(lead, config, k);
        let list = if k_first { &lists.k_contiguous } else { &lists.ordered };
        pick_scheme(list, lists.small, config, (m, n), batch, self.is_cpu())
            .ok_or_else(|| Error::InvalidTileScheme(format!("no tile scheme fits {config} on this device")))
    }

    /// [`Context::choose_scheme`]'s candidates for `config`, built once per context.
    pub(crate) fn scheme_lists(&self, config: &GPUSubgroupMatrixConfig) -> Arc<SchemeLists> {
        let mut map = self.scheme_lists.lock().unwrap_or_else(|e| e.into_inner());
        let lists = map.entry(*config).or_insert_with(|| {
            let info = self.device.info();
            let sg = self.subgroup_size();
            let subgroup_scope = candidate_schemes(config, &info.limits, sg, self.is_cpu());
            let small = small_problem_scheme(&subgroup_scope);
            let mut ordered = preferred_workgroup_schemes(config, info, sg);
            ordered.extend(subgroup_scope);
            let mut k_contiguous = preferred_k_contiguous_schemes(config, info, sg);
            let k_lead = k_contiguous.len();
            k_contiguous.extend(&ordered);
            Arc::new(SchemeLists {
                ordered,
                small,
                k_contiguous,
                k_lead,
            })
        });
        lists.clone()
    }
}
