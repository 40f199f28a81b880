//! The schemes the default choice picks from for one config, best first ([`SchemeLists`]):
//! built once per config and device from the measured preferences ([`super::preferred`]) and
//! the candidates ([`super::candidates`]), then consulted per problem. Plain data: the API's
//! `Context` keeps one per config.

use super::{
    candidate_schemes, k_whole, lead_fits, lead_suits, on_grouped_walk, pick_scheme, preferred_deep_schemes,
    preferred_k_contiguous_schemes, preferred_k_contiguous_short_schemes, preferred_long_k_schemes,
    preferred_nn_in_place_schemes, preferred_nn_untransposed_schemes, preferred_short_k_schemes,
    preferred_workgroup_schemes, small_problem_scheme, workgroup_tuning_candidates, Layout, TileScheme,
    MID_GRID_SCHEMES, SHORT_K,
};
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::device::DeviceInfo;
use crate::error::{Error, Result};

/// The schemes [`Context::choose_scheme`](crate::Context::choose_scheme) picks from for one config, best first.
pub(crate) struct SchemeLists {
    /// The measured-faster workgroup-scope schemes, then the subgroup-scope ones.
    pub(crate) ordered: Vec<TileScheme>,
    /// For problems no candidate's grid fills: 2 subgroups of 2x2 fragments (32x64 with 16x16
    /// fragments), else the smallest subgroup-scope scheme.
    pub(crate) small: Option<TileScheme>,
    /// Lists taken instead of `ordered` where their leading schemes suit the problem, first
    /// match first: the K-contiguous leads (deepest loop iterations first), then the long-K
    /// lead, then the deep-iteration lead of the other layouts.
    pub(crate) leads: Vec<Lead>,
    /// Taken instead of `ordered` for a 16-bit C, a K of at most [`SHORT_K`] and row-major A
    /// and B, where its leading tile fits the problem.
    pub(crate) short_k: Lead,
    /// Taken first for `nn` where one suits, which then reads A in place
    /// ([`Self::keeps_in_place`]): over 2048^2 up to 4096^2 of C, and from 8192^2.
    pub(crate) nn_in_place: [Lead; 2],
    /// The schemes of [`MID_GRID_SCHEMES`] this device has, for 16-bit floats into f32 or a
    /// 16-bit C on a GPU (else none): found once among the tuning candidates, which takes
    /// about a millisecond, not at every GEMM that
    /// [`mid_grid_choice`](crate::tiling::mid_grid_choice) sends to them. Measured into f32
    /// first; into f16 the default took 1.4-3.5x their time at 128 tokens and up to 1.7x at 512
    /// (H200, `nt`, as streams, docs/perf/h200-48-6.txt, two rounds alike: 128x4096x11008 224.0
    /// -> 69.5 us, 128x22016x4096 168.7 -> 125.7, 512x4096x14336 343.7 -> 201.0; no shape
    /// slower). bf16 -> bf16 has no matrix-unit config there (h200-48-7.txt, unchanged).
    pub(crate) mid_grid: Vec<TileScheme>,
}

/// Schemes measured faster under a condition, taken first where it holds ([`lead_suits`]).
pub(crate) struct Lead {
    /// The leading schemes, then the context's `ordered` list.
    pub(crate) schemes: Vec<TileScheme>,
    /// How many of `schemes` lead.
    pub(crate) lead: usize,
    /// The layouts of A and B it is for.
    pub(crate) layouts: LeadLayouts,
    /// Also taken where K is a whole number of at least two of its loop iterations
    /// ([`k_whole`]), not only where [`lead_suits`].
    pub(crate) two_whole: bool,
    /// Taken only where M x N is over `mn.0` and at most `mn.1`.
    pub(crate) mn: (usize, usize),
}

/// The largest M x N for which `nn` takes the `nt` leads: measured at 2048^3 on the H200, where
/// the 256x128 tile ran `nn` at 294.0-297.6 TFLOP/s against 272.1-274.5 for the 128x128 default;
/// at 4096^3 (without the copy the plan makes there) it lost 1-3% (perf/h200-deep-4.txt). `nn`
/// walks it grouped (2048^3, `tune --warm 1`: 302.97-303.83 against 293.05-294.66 in rows;
/// perf/h200-z-3.txt). `tt` takes them at every size, as `nt` does ([`LeadLayouts::BColumnMajor`]).
const KC_IN_PLACE_MAX_MN: usize = 2048 * 2048;

/// The M x N over which the `nt` leads for f32 results walk their grid in groups of tile rows
/// ([`crate::tiling::RASTER_128`]); up to it, in rows. H200, f16 -> f32, `tune --warm 1`,
/// TFLOP/s grouped against rows: 4096^3 294.4-294.6 against 287.5-288.4, 4096x11008x4096
/// 291.4-293.8 against 270.0-274.7 (perf/h200-y-2.txt), 2048x4096x4096 297.3 against 294.4 and
/// 4096x2048x4096 297.0 against 297.5; but 3072^3 223.5 against 230.1 (perf/h200-y-3.txt) and
/// 2048^3 (128 tiles, one wave) 302.3-305.4 against 307.8-309.3. int8 loses grouped (4096^3
/// 538.5 TOPS against 574.2) and keeps its rows.
const KC_GROUPED_MIN_MN: usize = 3072 * 3072;

/// The largest M x N for which `nn` reads A in place on [`preferred_nn_in_place_schemes`]
/// instead of copying it into `tn` order (over [`KC_IN_PLACE_MAX_MN`]; measured there).
const NN_IN_PLACE_MAX_MN: usize = 4096 * 4096;

/// The smallest M x N from which `nn` reads A in place on [`preferred_nn_untransposed_schemes`]
/// instead of copying it into `tn` order (measured at 8192^2 and 4096x11008; see there).
const NN_UNTRANSPOSED_MIN_MN: usize = 8192 * 8192;

/// A row-major A with a column-major B: both contiguous along K (`nt`).
const K_CONTIGUOUS: (Layout, Layout) = (Layout::RowMajor, Layout::ColMajor);

/// The layouts of A and B a [`Lead`] is taken for.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum LeadLayouts {
    /// Any.
    Any,
    /// Exactly these (A's, B's).
    Only(Layout, Layout),
    /// Any but both K-contiguous.
    NotKContiguous,
    /// B column-major (`nt` and `tt`): the tile computed transposed then reads B^T, its left
    /// operand, in place and K-contiguous. With sizes built into the kernel `tt` runs the `nt`
    /// leads in place faster than after a copy of B into `tn` order (H100, f16 -> f32, TFLOP/s,
    /// three passes, perf/h100-28-3.txt: 4096^3 303.2-319.7 against 287.4-291.0, 8192^3
    /// 306.8-339.1 against 291.2-305.0, 4096x11008x4096 302.5-310.4 against 278.2-283.7).
    BColumnMajor,
}

impl Lead {
    /// Whether this lead is taken for an `m x n x k` problem with A and B stored as `layouts`.
    fn suits(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> bool {
        let layouts = match self.layouts {
            LeadLayouts::Any => true,
            LeadLayouts::Only(a, b) => layouts == (a, b),
            LeadLayouts::NotKContiguous => layouts != K_CONTIGUOUS,
            LeadLayouts::BColumnMajor => layouts.1 == Layout::ColMajor,
        };
        let lead = &self.schemes[..self.lead];
        layouts
            && (self.mn.0 + 1..=self.mn.1).contains(&m.saturating_mul(n))
            && (lead_suits(lead, config, (m, n, k))
                || (self.two_whole && lead_fits(lead, config, (m, n)) && k_whole(lead, config, k, 2)))
    }
}

impl SchemeLists {
    /// The lists for `config` on a device described by `info` with subgroups of `sg`.
    pub(crate) fn new(config: &GPUSubgroupMatrixConfig, info: &DeviceInfo, sg: u32, cpu: bool) -> Self {
        let subgroup_scope = candidate_schemes(config, &info.limits, sg, cpu);
        let small = small_problem_scheme(&subgroup_scope);
        let mut ordered = preferred_workgroup_schemes(config, info, sg);
        ordered.extend(subgroup_scope);
        let lead = |mut schemes: Vec<TileScheme>, layouts, two_whole| {
            let lead = schemes.len();
            schemes.extend(&ordered);
            Lead {
                schemes,
                lead,
                layouts,
                two_whole,
                mn: (0, usize::MAX),
            }
        };
        use LeadLayouts::{Any, BColumnMajor, NotKContiguous, Only};
        let row = Layout::RowMajor;
        let kc = Only(K_CONTIGUOUS.0, K_CONTIGUOUS.1);
        // The deepest K-contiguous lead (sixteen steps) also from two whole iterations; for
        // f32 results taken for `nt` and `tt`, each on the grouped walk over grids larger than
        // `KC_GROUPED_MIN_MN`, and for `nn` (grouped) on grids up to `KC_IN_PLACE_MAX_MN`.
        let k_contiguous = preferred_k_contiguous_schemes(config, info, sg);
        let f32_results = config.result_type == ComponentType::F32;
        let b_col = if f32_results { BColumnMajor } else { kc };
        let grouped = |l: &[TileScheme]| l.iter().copied().map(on_grouped_walk).collect::<Vec<_>>();
        let mut leads: Vec<Lead> = Vec::new();
        for (i, l) in k_contiguous.iter().enumerate() {
            if f32_results {
                leads.push(Lead {
                    mn: (KC_GROUPED_MIN_MN, usize::MAX),
                    ..lead(grouped(l), b_col, i == 0)
                });
            }
            leads.push(lead(l.clone(), b_col, i == 0));
        }
        if f32_results {
            for (i, l) in k_contiguous.iter().enumerate() {
                leads.push(Lead {
                    mn: (0, KC_IN_PLACE_MAX_MN),
                    ..lead(grouped(l), Only(row, row), i == 0)
                });
            }
        }
        leads.extend(
            preferred_k_contiguous_short_schemes(config, info, sg)
                .into_iter()
                .map(|short| lead(short, kc, false)),
        );
        leads.push(lead(preferred_long_k_schemes(config, info, sg), Any, false));
        leads.push(lead(preferred_deep_schemes(config, info, sg), NotKContiguous, true));
        let short_k = lead(preferred_short_k_schemes(config, info, sg), Any, false);
        let nn_in_place = [
            Lead {
                mn: (KC_IN_PLACE_MAX_MN, NN_IN_PLACE_MAX_MN),
                ..lead(preferred_nn_in_place_schemes(config, info, sg), Only(row, row), true)
            },
            Lead {
                mn: (NN_UNTRANSPOSED_MIN_MN - 1, usize::MAX),
                ..lead(
                    preferred_nn_untransposed_schemes(config, info, sg),
                    Only(row, row),
                    true,
                )
            },
        ];
        let sixteen = matches!(config.component_type, ComponentType::F16 | ComponentType::Bf16);
        let mid_grid = if sixteen && !cpu {
            let all = workgroup_tuning_candidates(config, info, sg);
            MID_GRID_SCHEMES
                .iter()
                .filter_map(|name| all.iter().find(|s| s.name() == *name).copied())
                .collect()
        } else {
            Vec::new()
        };
        SchemeLists {
            ordered,
            small,
            leads,
            short_k,
            nn_in_place,
            mid_grid,
        }
    }

    /// Whether an `m x n x k` problem with A and B stored as `layouts` reads its operands in
    /// place where a copy would otherwise pay ([`crate::plan::relayout_pays`]): `nn` where
    /// [`preferred_nn_in_place_schemes`] or [`preferred_nn_untransposed_schemes`] suit, `tt`
    /// where the `nt` leads do.
    pub(crate) fn keeps_in_place(
        &self,
        config: &GPUSubgroupMatrixConfig,
        shape: (usize, usize, usize),
        layouts: (Layout, Layout),
    ) -> bool {
        let tt = layouts == (Layout::ColMajor, Layout::ColMajor);
        self.nn_in_place.iter().any(|l| l.suits(config, shape, layouts))
            || tt
                && self
                    .leads
                    .iter()
                    .any(|l| l.layouts == LeadLayouts::BColumnMajor && l.suits(config, shape, layouts))
    }

    /// The layout-aware choice (`Context::choose_layout_scheme`) over these lists (`cpu`: a CPU driver's device).
    pub(crate) fn choose(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n, k): (usize, usize, usize),
        layouts: (Layout, Layout),
        (batch, narrow_c): (usize, bool),
        cpu: bool,
    ) -> Result<TileScheme> {
        // Measured in `nn` only, and slower in `nt` (preferred_short_k_schemes).
        let row_major = layouts == (Layout::RowMajor, Layout::RowMajor);
        let short_k = &self.short_k;
        let short =
            (narrow_c && row_major && k <= SHORT_K && lead_fits(&short_k.schemes[..short_k.lead], config, (m, n)))
                .then_some(short_k);
        let list = short
            .or_else(|| {
                self.nn_in_place
                    .iter()
                    .chain(&self.leads)
                    .find(|l| l.suits(config, (m, n, k), layouts))
            })
            .map_or(&self.ordered, |l| &l.schemes);
        pick_scheme(list, self.small, config, (m, n), batch, cpu)
            .ok_or_else(|| Error::InvalidTileScheme(format!("no tile scheme fits {config} on this device")))
    }

    /// [`SchemeLists::choose`] without the leads: the device's default order (its 128x128 tile
    /// first where the device has the workgroup-scope kernel), for work the leads' taller tiles
    /// or special loops do not suit.
    pub(crate) fn choose_default(
        &self,
        config: &GPUSubgroupMatrixConfig,
        (m, n): (usize, usize),
        batch: usize,
        cpu: bool,
    ) -> Result<TileScheme> {
        pick_scheme(&self.ordered, self.small, config, (m, n), batch, cpu)
            .ok_or_else(|| Error::InvalidTileScheme(format!("no tile scheme fits {config} on this device")))
    }
}

#[cfg(test)]
#[path = "lists_tests.rs"]
mod tests;
