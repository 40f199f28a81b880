//! Which operands a GEMM copies before its kernel runs: f32 ones rounded first
//! ([`GemmOptions::convert_first`]), and 16-bit or 8-bit ones copied into the storage order the
//! workgroup-scope kernels read fastest ([`GemmOptions::relayout`]).

use super::context::Context;
use super::options::GemmOptions;
use crate::config::GPUSubgroupMatrixConfig;
use crate::error::{Error, Result};
use crate::plan::{conversion_pays, fast_order, relayout_pays};
use crate::tiling::{KernelScope, Layout};

impl Context {
    /// Whether a GEMM of this size on `config` rounds its f32 operands first by default (see
    /// [`GemmOptions::convert_first`]): where the device has workgroup-scope kernels for the
    /// config (which cannot convert as they load) and the faster GEMM repays the pass
    /// ([`conversion_pays`]).
    pub fn converts_first(&self, config: &GPUSubgroupMatrixConfig, (m, n, _k): (usize, usize, usize)) -> bool {
        self.takes_workgroup_scope(config) && conversion_pays(m, n)
    }

    /// Which operands of a GEMM of 16-bit or 8-bit operands of this size, stored `layouts`, are
    /// copied into the other storage order first by default (see [`GemmOptions::relayout`]):
    /// where the device has workgroup-scope kernels for `config`, it is not a CPU, and
    /// [`relayout_pays`] holds, but not where the default scheme reads the operands in place
    /// faster (`nn` of f32 results on grids up to 4096^2). (A lone operand converted first from
    /// f32 is also transposed wherever the GEMM takes a workgroup-scope scheme, since its pass
    /// runs anyway.)
    pub fn relayouts(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> [bool; 2] {
        if !self.takes_workgroup_scope(config) {
            return [false; 2];
        }
        self.relayout_pays_here(config, (m, n, k), layouts)
    }

    /// [`relayout_pays`], but none where the default scheme reads the operands in place
    /// ([`SchemeLists::keeps_in_place`](super::schemes::SchemeLists::keeps_in_place)).
    fn relayout_pays_here(
        &self,
        config: &GPUSubgroupMatrixConfig,
        shape: (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> [bool; 2] {
        let pays = relayout_pays((config.component_type, config.result_type), layouts, shape);
        if pays.contains(&true) && self.scheme_lists(config).keeps_in_place(config, shape, layouts) {
            return [false; 2];
        }
        pays
    }

    /// Whether the copies first pay off here at all: the device has workgroup-scope schemes for
    /// `config`, by default or taken first where they suit (which read [`fast_order`] fastest),
    /// and is not a CPU.
    pub(super) fn takes_workgroup_scope(&self, config: &GPUSubgroupMatrixConfig) -> bool {
        let lists = self.scheme_lists(config);
        let leads = lists.leads.iter().flat_map(|l| &l.schemes[..l.lead]);
        !self.is_cpu()
            && lists
                .ordered
                .iter()
                .chain(leads)
                .any(|s| s.scope() == KernelScope::Workgroup)
    }

    /// The operands [`Context::plan_fused`] copies transposed: with `relayout` on, those stored
    /// in the other order than [`fast_order`]'s; by default those [`Context::relayouts`] names
    /// (16-bit ones all or none, 8-bit ones each on its own), or a lone one whose converting
    /// pass runs anyway (`free`).
    /// `copyable`: which operands the GEMM loads as 16-bit or 8-bit ones.
    pub(super) fn relayout_for(
        &self,
        options: &GemmOptions,
        (config, shape, layouts): (&GPUSubgroupMatrixConfig, (usize, usize, usize), (Layout, Layout)),
        (copyable, free): ([bool; 2], [bool; 2]),
        batch: usize,
    ) -> Result<[bool; 2]> {
        let fast = fast_order(config.component_type);
        let other = [layouts.0 != fast.0, layouts.1 != fast.1];
        match options.relayout {
            Some(false) => Ok([false; 2]),
            Some(true) => {
                for (j, name) in ["A", "B"].into_iter().enumerate() {
                    if other[j] && !copyable[j] {
                        return Err(Error::Unsupported(format!(
                            "relayout: {name} is not a 16-bit or 8-bit operand (nor an f32 one converted first), and only those are copied transposed; use relayout: None or Some(false)"
                        )));
                    }
                }
                Ok(other)
            }
            None if batch > 1 || options.scheme.is_some() => Ok([false; 2]),
            None => {
                if !self.takes_workgroup_scope(config) || (0..2).any(|j| other[j] && !copyable[j]) {
                    return Ok([false; 2]);
                }
                // A converting pass runs anyway and transposes at about its cost: one such
                // copy pays wherever the GEMM runs the workgroup-scope kernel (f32 fast 4096^3
                // nn 243.1 -> 261.2 TFLOP/s, tt 236.0 -> 262.8), two did not (nt 257.4 -> 253.8).
                let one_free = other.iter().filter(|&&o| o).count() == 1 && (0..2).all(|j| !other[j] || free[j]);
                // `relayout_pays` decides the rest: 16-bit copies all or none (one alone from `nt`
                // gives `nn` or `tt`, slower than both), 8-bit ones each on its own.
                Ok(if one_free {
                    other
                } else {
                    self.relayout_pays_here(config, shape, layouts)
                })
            }
        }
    }
}
