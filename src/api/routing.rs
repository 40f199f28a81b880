//! Which kernel path serves a GEMM's element types and mode on this device, and the tile
//! schemes of the converting paths (f32 rounded or split as loaded).

use super::context::Context;
use super::options::GemmOptions;
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::kernel::{Load, SIMT_CONFIG};
use crate::plan::{route, Route};
use crate::tiling::{pick_scheme, KernelScope, TileScheme};

impl Context {
    /// How a GEMM of these element types (A, B, C) runs under `options` on this device: the
    /// route (see [`route`](crate::plan::route)) with its fallbacks applied (the accurate split
    /// becomes the exact kernel without an f16 -> f32 config), and the config it uses
    /// ([`SIMT_CONFIG`] for the exact kernel).
    pub fn route_for(
        &self,
        [ta, tb, tc]: [ComponentType; 3],
        options: &GemmOptions,
    ) -> Result<(Route, GPUSubgroupMatrixConfig)> {
        let mut route = route(ta, tb, options.compute)?;
        if route.loads == [Load::Split; 2] {
            match self.choose_config(ComponentType::F16, tc, options.shape) {
                Ok(config) if tc == ComponentType::F32 => return Ok((route, config)),
                // No f16 -> f32 config for the split: the exact kernel keeps f32 accuracy.
                _ => route.loads = [Load::Simt; 2],
            }
        }
        if route.loads != [Load::Simt; 2] {
            return Ok((route, self.choose_config(route.component, tc, options.shape)?));
        }
        if tc != ComponentType::F32 {
            return Err(Error::Unsupported(format!(
                "f32 x f32 -> {tc} in {} mode: the f32 kernel writes f32 results (the fast modes write {tc})",
                options.compute.name()
            )));
        }
        Ok((route, SIMT_CONFIG))
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
        pick_scheme(&fits, small, config, (m, n), self.is_cpu())
            .ok_or_else(|| Error::InvalidTileScheme(format!("no tile scheme fits the accurate split of {config}")))
    }

    /// [`Context::choose_scheme`] among the subgroup-scope schemes alone.
    pub(crate) fn choose_subgroup_scheme(
        &self,
        config: &GPUSubgroupMatrixConfig,
        m: usize,
        n: usize,
    ) -> Result<TileScheme> {
        let (subgroup, small) = self.subgroup_schemes(config);
        pick_scheme(&subgroup, small, config, (m, n), self.is_cpu()).ok_or_else(|| {
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
}
