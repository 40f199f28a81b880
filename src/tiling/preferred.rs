//! The workgroup-scope schemes taken by default on NVIDIA, measured faster there
//! (docs/perf/JOURNAL.md), and the conditions under which each list leads.

use super::candidates::{is_square_128, on_grouped_walk, workgroup_candidates};
use super::TileScheme;
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::device::DeviceInfo;

/// PCI vendor id of NVIDIA.
pub(crate) const VENDOR_NVIDIA: u32 = 0x10de;

/// A preferred workgroup-scope scheme: (tile rows, tile columns, invocations, K step bytes, K
/// steps per loop iteration, computed transposed, each step's right operand loaded first).
type Wanted = (u32, u32, u32, u32, u32, bool, bool);

/// The workgroup-scope schemes taken by default, ahead of the subgroup-scope ones: those measured
/// faster than every subgroup-scope scheme on the H200 (docs/perf/JOURNAL.md): 128x128 tiles with
/// 128 invocations in eight 64-byte K steps per loop iteration taken step by step (3-8% faster
/// than four steps loaded first, in every layout measured), then, for grids too small for those,
/// 64x64 tiles with 128 invocations and two 128-byte steps per iteration (1024x1024x1024
/// f16->f32: 16.1 us in `nn` and `nt`, against 19.4 and 21.5 for 64-byte steps and 18.3 for
/// ggml-vulkan in the same call, docs/perf/h200-small-1.txt; 25.3 for the best subgroup-scope
/// tile). Each is computed transposed: 4096^3 f16->f32 128x128 3.6-6.5% faster in every layout,
/// 69% at K = 256; 1024^3 64x64 11-14%. The 128x128 tile walks its grid in groups of 8 tile rows
/// ([`super::RASTER_128`]).
/// f16 results take [`preferred_long_k_schemes`] first where those suit. Only on NVIDIA, where
/// they were measured; elsewhere the autotuner decides.
pub fn preferred_workgroup_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    let wanted: &[Wanted] = match config.result_type {
        ComponentType::F16 | ComponentType::F32 => {
            &[(128, 128, 128, 64, 8, true, false), (64, 64, 128, 128, 2, true, false)]
        }
        _ => &[],
    };
    preferred(config, info, subgroup_size, wanted)
        .into_iter()
        .map(|s| {
            if is_square_128(&s, config) {
                on_grouped_walk(s)
            } else {
                s
            }
        })
        .collect()
}

/// The workgroup-scope schemes taken first, in every layout, where K is long and the problem
/// covers the tile ([`lead_suits`]): for 16-bit results 256x256 tiles computed transposed, with
/// 256 invocations, eight 64-byte steps per iteration (4096^3 f16->f16 on the H200: 366 TFLOP/s
/// `nn`, 337 `nt`, against 278 and 246 for 128x128). At K = 128 or N = 128 the 128x128 tile is
/// faster (32768x1024x128: 81 against 73; 65536x128x2048: 207-213 against 101-105). Only on
/// NVIDIA.
pub fn preferred_long_k_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    let wanted: &[Wanted] = match config.result_type {
        ComponentType::F16 => &[(256, 256, 256, 64, 8, true, false)],
        _ => &[],
    };
    preferred(config, info, subgroup_size, wanted)
}

/// The workgroup-scope schemes taken first where C is stored in a 16-bit type, K is at most
/// [`SHORT_K`] and A and B are row-major (attention's `P V`, batched): 64x64 tiles computed
/// transposed, with 128 invocations and two 64-byte steps. There the store of a 16-bit C
/// dominates, and more, smaller tiles store it faster: on the H200, 32 x 1024x1024x128 f32 sums
/// cast to f16 0.093 ms against 0.108 for 128x128 (f16 sums: 0.090 against 0.102), 256 x
/// 1024x1024x128 0.651 against 0.690 (two calls). With B column-major (`nt`) they are slower (32 x
/// 2048x2048x128: 0.384 against 0.355), and an f32 C is not helped (32768x1024x128: 99.9 TFLOP/s
/// against 107.5). Only on NVIDIA. (docs/perf/h200-bfused-2.txt, h200-bfused-3.txt)
pub fn preferred_short_k_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    preferred(config, info, subgroup_size, &[(64, 64, 128, 64, 2, true, false)])
}

/// The longest K for which a 16-bit C takes [`preferred_short_k_schemes`] first.
pub const SHORT_K: usize = 128;

/// The workgroup-scope leads when A is row-major and B column-major (`nt`: both K-contiguous,
/// the layout of model weights), deepest loop iterations first, each taken where K suits it
/// ([`lead_suits`], or a whole number of at least two of its iterations): 256x128 tiles computed
/// transposed (a 128x256 accumulator of C^T) with 256 invocations, in sixteen then eight
/// 128-byte steps taken step by step, each step's right operand (A^T) loaded first. H200, f32
/// results, TFLOP/s against eight steps left first (ggml-vulkan's accumulator and loop, the
/// lead until now): 2048^3 309.4 against 280.6, 4096^3 293.4 against 281.8, 8192^3 299.8
/// against 287.3 (perf/h200-deep-2.txt; eight steps right first 303.0, 289.3, 292.9). For i8 ->
/// i32 and u8 -> u32 the same tile in 128-element steps, sixteen of them right first (4096^3
/// 577.8 TOPS against 533.8 for eight), then eight left first, each with a 64x64 tile where the
/// 256x128 ones are too few to fill the GPU (1024x1024x4096: 321.5 TOPS against 289.3, and 188.5
/// for the subgroup-scope default). Only on NVIDIA.
pub fn preferred_k_contiguous_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<Vec<TileScheme>> {
    // u8 runs as fast as i8 (533.7 TOPS against 311.3 for the subgroup-scope default;
    // perf/h200-int8-layouts-1.txt).
    let leads: &[&[Wanted]] = if int8_16x16(config) {
        &[
            &[(256, 128, 256, 128, 16, true, true), (64, 64, 128, 128, 2, true, false)],
            &[(256, 128, 256, 128, 8, true, false), (64, 64, 128, 128, 2, true, false)],
        ]
    } else if config.result_type == ComponentType::F32 {
        &[
            &[(256, 128, 256, 128, 16, true, true)],
            &[(256, 128, 256, 128, 8, true, true)],
        ]
    } else {
        &[]
    };
    leads
        .iter()
        .map(|wanted| preferred(config, info, subgroup_size, wanted))
        .filter(|lead| !lead.is_empty())
        .collect()
}

/// The workgroup-scope lead for f32 results in the layouts other than `nt`, taken where K suits
/// it ([`lead_suits`], or a whole number of at least two of its iterations): the 128x128 default
/// tile in sixteen 64-byte steps per iteration instead of eight, each step's right operand loaded
/// first, on the grouped walk. H200, `tn` (where `nn` and `tt` run after their copy), TFLOP/s
/// against the default: 4096^3 302.7 against 293.9, 8192^3 314.7 against 307.0, 2048^3 307.5
/// against 309.4; `nn` in place at 4096^3 276.6 against 266.5 (perf/h200-deep-2.txt). In `nt`
/// the 128x128 tile loses with sixteen steps (250.5 against 255; perf/h200-deep-1.txt). Only on
/// NVIDIA.
pub fn preferred_deep_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    grouped_for_f32(config, info, subgroup_size, (128, 128, 128, 64, 16, true, true))
}

/// The workgroup-scope lead for f32 results with A and B row-major (`nn`) read in place, on
/// grids over 2048^2 up to 4096^2 (`api::schemes`), where it beats a copy of A into `tn` order:
/// the 128x256 tile computed transposed with 256 invocations, in sixteen 128-byte steps right
/// first, on the grouped walk. H200, f16 -> f32, `bench`, TFLOP/s by own timestamps / as a
/// stream against the copy and the 128x128 lead (perf/h200-z-5.txt): 4096x4096x2048 286.4 /
/// 285.8 against 277.5 / 279.9, 4096^3 292.2 / 295.6 against 286.7 / 292.6 (h200-z-4.txt: 295.4
/// and 292.1 / 295.6 and 293.0 against 291.9 and 283.7 / 295.3 and 292.5); but 4096x8192x4096
/// 289.7 / 294.7 against 284.6 / 295.5, 8192x4096x4096 289.5 / 294.4 against 290.3 / 296.7 and
/// 4096x11008x4096 288.9 / 290.2 against 291.4 / 301.0. `tt` gains less (4096^3 289.7 / 290.9
/// against 287.4 / 292.2) and keeps its copy. Only on NVIDIA.
pub fn preferred_nn_in_place_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    grouped_for_f32(config, info, subgroup_size, (128, 256, 256, 128, 16, true, true))
}

/// The workgroup-scope lead for f32 results with A and B row-major (`nn`) read in place on grids
/// of at least 8192^2: [`preferred_nn_in_place_schemes`]' tile not computed transposed, each
/// step's operands in order, on the grouped walk. Its left operand is then A, K-contiguous, as
/// the `nt` and `tt` leads' is. With sizes built into the kernel, H100, f16 -> f32, TFLOP/s,
/// two calls of three passes each (perf/h100-28-3.txt, h100-28-4.txt): 8192^3 295.5-328.0
/// against 290.3-305.7 after a copy of A into `tn` order; but 4096x11008x4096 280.1-285.6
/// against 292.8-299.8, and 4096^3 287.4-295.0 against 275.1-308.4 for the transposed tile in
/// place. Only on NVIDIA.
pub fn preferred_nn_untransposed_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    preferred_nn_in_place_schemes(config, info, subgroup_size)
        .into_iter()
        .filter_map(|s| {
            s.with_c_transposed(false, config, &info.limits)
                .and_then(|s| s.with_right_first(false))
                .ok()
                .filter(|s| s.check_device(config, info).is_ok())
        })
        .collect()
}

/// The candidate matching `wanted` on the grouped walk, for f32 results only.
fn grouped_for_f32(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
    wanted: Wanted,
) -> Vec<TileScheme> {
    if config.result_type != ComponentType::F32 {
        return Vec::new();
    }
    preferred(config, info, subgroup_size, &[wanted])
        .into_iter()
        .map(on_grouped_walk)
        .collect()
}

/// The workgroup-scope leads for int8 with both operands K-contiguous where K is too short for
/// [`preferred_k_contiguous_schemes`] (under four of their 1024-deep iterations), each taken where
/// K is at least four of its loop iterations ([`k_suits`]), the deepest first: a 128x128 tile
/// computed transposed with 128 invocations, then a 64x64 one for grids it cannot fill, in
/// 512-deep iterations (eight 64-deep steps: K from 2048), 256-deep (four: K from 1024) and
/// 128-deep ones (two: K from 512). H200, i8 `nt`, TOPS against the subgroup-scope default:
/// 4096x4096x4000 454.1 against 308.3 (the 256x128 tile 426.0; perf/h200-int8-k-1.txt);
/// 4096x4096x1024 394.6 against 230.8, 4096x4096x512 297.9 against 170.3, 1024x1024x1024
/// (64x64) 200.3 against 120.7 (perf/h200-int8-k1024-2.txt; every tile in -1.txt). Only on
/// NVIDIA; empty for other configs.
pub fn preferred_k_contiguous_short_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<Vec<TileScheme>> {
    if !int8_16x16(config) {
        return Vec::new();
    }
    let leads: [&[Wanted]; 3] = [
        &[(128, 128, 128, 64, 8, true, false), (64, 64, 128, 128, 2, true, false)],
        &[(128, 128, 128, 64, 4, true, false), (64, 64, 128, 128, 2, true, false)],
        &[(128, 128, 128, 64, 2, true, false), (64, 64, 128, 64, 2, true, false)],
    ];
    leads
        .into_iter()
        .map(|wanted| preferred(config, info, subgroup_size, wanted))
        .filter(|lead| !lead.is_empty())
        .collect()
}

/// i8 -> i32 or u8 -> u32 on 16x16 fragments, the int8 configs whose workgroup-scope tiles were
/// measured fast (on 16x8x32 every one ran at 64-146 TOPS, perf/h200-ct10.txt).
fn int8_16x16(config: &GPUSubgroupMatrixConfig) -> bool {
    matches!(
        (config.component_type, config.result_type, config.m, config.n),
        (ComponentType::I8, ComponentType::I32, 16, 16) | (ComponentType::U8, ComponentType::U32, 16, 16)
    )
}

/// The workgroup-scope schemes of the accurate split done first ([`crate::kernel::Load::Planes`]),
/// best first: 128x256 tiles computed transposed over 256 invocations in eight 32-deep K steps
/// per iteration (H200, 4096^3: 66.5 TFLOP/s at an error of 1.9e-8, against 51-53 for 128x128
/// tiles and 59.7 at 9.5e-9 for four steps per iteration: each iteration's partial sum grows
/// with its steps; perf/h200-planes-tiles.txt), then 128x128 ones and 64x64 for small grids.
/// Only on NVIDIA, for f16 -> f32 configs.
pub fn preferred_planes_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    let f16_f32 = (config.component_type, config.result_type) == (ComponentType::F16, ComponentType::F32);
    let wanted: &[Wanted] = if f16_f32 {
        &[
            (128, 256, 256, 64, 8, true, false),
            (128, 128, 256, 64, 8, true, false),
            (64, 64, 128, 64, 2, true, false),
        ]
    } else {
        &[]
    };
    preferred(config, info, subgroup_size, wanted)
}

/// Whether K suits every scheme of `schemes`: at least four of its loop iterations
/// (`stages * BK`) and, for 16-bit operands, a whole number of them or at least eight. The
/// schemes taken first are taken only then: their tiles otherwise run their K in the one-step
/// tail loop (4096x4096x256 on the H200: 77 TFLOP/s with them, 95 without), and for f16 a tail
/// costs more than the lead gains on a short K (4096x4096x4000 `nt`, 7.8 iterations: the
/// 128x128 default 258.2 against 251.7 for the 256x128 lead), but not from eight iterations
/// (4096x4096x5000 253.1 against 239.2, 4096x4096x11008 290.1 against 257.5;
/// perf/h200-f16-k-1.txt). 8-bit operands need no whole number: i8 `nt` 4096x4096x11008 548.7
/// TOPS on the 256x128 lead against 315.9 for the subgroup-scope default, 4096x4096x4000 454.1
/// on the 128x128 tile against 308.3 (perf/h200-int8-k-1.txt).
pub fn k_suits(schemes: &[TileScheme], config: &GPUSubgroupMatrixConfig, k: usize) -> bool {
    let bytes = config.component_type.size_bytes();
    schemes.iter().all(|s| {
        let per_iteration = (s.stages() * s.geometry(config).bk) as usize;
        let tail_ok = bytes == 1 || k >= 8 * per_iteration || k % per_iteration == 0;
        k >= 4 * per_iteration && tail_ok
    })
}

/// Whether K is a whole number of at least `at_least` loop iterations (`stages * BK`) of every
/// scheme of `schemes`: then they run no tail. The sixteen-step leads are taken so from two
/// iterations (2048^3 `nt` on two 1024-deep iterations: 309.4 TFLOP/s against 303.0 on four of
/// 512; perf/h200-deep-2.txt).
pub fn k_whole(schemes: &[TileScheme], config: &GPUSubgroupMatrixConfig, k: usize, at_least: usize) -> bool {
    schemes.iter().all(|s| {
        let per_iteration = (s.stages() * s.geometry(config).bk) as usize;
        k >= at_least * per_iteration && k % per_iteration == 0
    })
}

/// Whether a list of schemes taken first suits an `m x n x k` problem: it has schemes, K suits
/// them ([`k_suits`]) and every tile lies within the problem (a 256-wide tile on N = 128 wastes
/// half of itself: 65536x128x2048 f16->f16 ran at half the 128x128 tile's speed).
pub fn lead_suits(lead: &[TileScheme], config: &GPUSubgroupMatrixConfig, (m, n, k): (usize, usize, usize)) -> bool {
    lead_fits(lead, config, (m, n)) && k_suits(lead, config, k)
}

/// Whether a list of schemes taken first has schemes and every one's tile lies within an
/// `m x n` problem.
pub fn lead_fits(lead: &[TileScheme], config: &GPUSubgroupMatrixConfig, (m, n): (usize, usize)) -> bool {
    !lead.is_empty()
        && lead.iter().all(|s| {
            let g = s.geometry(config);
            g.bm as usize <= m && g.bn as usize <= n
        })
}

/// The candidates matching `wanted`, in its order; none off NVIDIA.
fn preferred(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
    wanted: &[Wanted],
) -> Vec<TileScheme> {
    if info.vendor_id != VENDOR_NVIDIA {
        return Vec::new();
    }
    let es = config.component_type.size_bytes();
    let candidates = workgroup_candidates(config, info, subgroup_size);
    wanted
        .iter()
        .filter_map(|&(bm, bn, threads, k_bytes, stages, transposed, right_first)| {
            candidates.iter().copied().find(|s| {
                let g = s.geometry(config);
                (g.bm, g.bn, g.threads) == (bm, bn, threads)
                    && g.bk * es == k_bytes
                    && s.stages() == stages
                    && s.c_transposed() == transposed
                    && s.right_first() == right_first
                    && s.raster_group() == 0
            })
        })
        .collect()
}

/// A measured choice for grids of up to two waves of the 128x128 tile: f16 or bf16 operands,
/// f32 results, `nt` (weights `N x K`), K long enough for split-K to pay. The default heuristic
/// took a subgroup-scope split-K kernel, or the 64x64 tile (whose grid fills the GPU by its
/// subgroup count where the 128x128 one's does not), there.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MidGrid {
    /// The workgroup-scope scheme, by name.
    pub scheme: &'static str,
    /// K slices (split-K).
    pub splits: u32,
}

/// Below this many 128x128 tiles of C, the 64x64 tile in two K slices; from it up to
/// [`MID_GRID_TILES`], the 128x128 tile in two K slices (H200, f16 -> f32 `nt`,
/// docs/perf/h200-29-8.txt, as streams: 128x4096x4096 84.8 -> 37.3 us, 128x4096x11008 219.9
/// -> 85.7, 128x12288x4096 122.0 -> 88.0, 512x4096x4096 100.1 -> 84.4, 512x4096x11008 266.8 ->
/// 198.0; four slices were within 10% or slower in each). From [`WIDE_GRID_MIN_ROWS`] rows,
/// below this many tiles, the 128x128 tile in more slices where they pay: eight from
/// [`EIGHT_SLICES_MIN_K`], four where the 64x64 tiles would fill a wave alone (H100, as streams,
/// docs/perf/h100-34-6.txt: 128x4096x11008 87.1 -> 79.0 us, 128x4096x14336 110.0 -> 97.2,
/// 128x6144x4096 63.1 -> 54.1; 128x4096x4096 stays, 39.4 against 40.6 in eight).
pub const SMALL_GRID_TILES: usize = 64;
/// K from which small grids of at least [`WIDE_GRID_MIN_ROWS`] rows take eight K slices.
pub const EIGHT_SLICES_MIN_K: usize = 8192;
/// About one wave of an H200's or H100's 132 SMs, in tiles.
pub const MID_GRID_TILES: usize = 132;
/// From [`MID_GRID_TILES`] up to this many 128x128 tiles (one to two waves), with at least
/// [`WIDE_GRID_MIN_ROWS`] rows, the 128x128 tile unsplit: the default took the 64x64 tile there
/// (H100, docs/perf/h100-34-4.txt, as streams: 128x22016x4096 182.8 -> 148.4 us,
/// 128x28672x4096 240.3 -> 165.5, 512x6144x4096 154.3 -> 138.7; two or three K slices were
/// slower). From here on the 128x128 tile's own grid fills the GPU by the default's rule.
pub const WIDE_GRID_TILES: usize = 256;
/// The fewest rows [`WIDE_GRID_TILES`]' choice was measured at (128 tokens); fewer rows waste
/// most of a 128-row tile.
pub const WIDE_GRID_MIN_ROWS: usize = 128;
/// K from which the choice holds (measured at 4096 to 14336).
pub const MID_GRID_MIN_K: usize = 2048;
/// From this many rows, grids under two waves of 128x128 tiles take the 256-invocation
/// 256x128 tile instead: in two K slices under one wave, unsplit from one to two (H200, as
/// streams, docs/perf/h200-34-8.txt: 512x4096x4096 85.3 -> 78.5 us, 512x4096x11008 196.1 ->
/// 177.5, 512x4096x14336 249.1 -> 215.5, 512x6144x4096 141.1 -> 114.6; the 128x256 tile and
/// three slices of the 128x128 one were slower). Measured at 512 rows only.
pub const LARGE_TILE_MIN_ROWS: usize = 512;
/// Rows that one wave or two of 128x128 tiles take on the 128x256 tile instead, unsplit: one
/// tile row of 128 (H200, f16 -> f32 `nt`, as streams, docs/perf/h200-48-4.txt: 128x22016x4096
/// 145.6 -> 125.0 us, 128x28672x4096 152.6 -> 131.2, where ggml-vulkan took 140.0 and 143.0;
/// on the grids under one wave it ran two to five times slower, split or not; as the planner
/// chose it, twice against the binary before, h200-48-5.txt: 145.4 -> 123.3, 153.0 -> 130.9).
pub const WIDE_TILE_ROWS: usize = 128;
/// The schemes [`mid_grid_choice`] names: the 64x64 tile, the 128x128 one, the 256x128 one,
/// the 128x256 one.
pub const MID_GRID_SCHEMES: [&str; 4] = [
    "wg_t128_fr4x4_k64_u2_ct",
    "wg_t128_fr8x8_k32_u8_a0_g8_ct",
    "wg_t256_fr16x8_k64_u16_a0_rf_ct",
    "wg_t256_fr8x16_k64_u16_a0_rf_ct",
];

/// The choice for an `m x n x k` GEMM whose grid of 128x128 tiles is under two waves, if any.
/// The table was measured with the tokens as M; a GEMM with fewer than 128 columns (the
/// weights as A, `w x^T`, a few tokens) is looked up as its transpose, whose rows those are,
/// since its columns would leave most of the table's 128-wide tiles empty. H200, f16 -> f32
/// `nt`, us, as streams, as it was against so (docs/perf/h200-48-3.txt, two rounds alike):
/// 22016x16x4096 249.9 -> 177.4, 22016x64x4096 251.8 -> 121.9, 14336x64x4096 156.1 -> 130.6;
/// with 128 columns the 256x128 tile stays (22016x128x4096 124.8 against 143.7 so,
/// 14336x128x4096 85.6 against 92.9).
pub fn mid_grid_choice((m, n, k): (usize, usize, usize)) -> Option<MidGrid> {
    let (m, n) = if n < WIDE_GRID_MIN_ROWS && n < m {
        (n, m)
    } else {
        (m, n)
    };
    let tiles = m.div_ceil(128) * n.div_ceil(128);
    if k < MID_GRID_MIN_K || m <= 16 {
        return None;
    }
    let small_tiles = m.div_ceil(64) * n.div_ceil(64);
    let (scheme, splits) = if tiles < SMALL_GRID_TILES {
        if m < WIDE_GRID_MIN_ROWS {
            (0, 2)
        } else if k >= EIGHT_SLICES_MIN_K {
            (1, 8)
        } else if small_tiles >= MID_GRID_TILES {
            (1, 4)
        } else {
            (0, 2)
        }
    } else if tiles < MID_GRID_TILES {
        (if m >= LARGE_TILE_MIN_ROWS { 2 } else { 1 }, 2)
    } else if tiles < WIDE_GRID_TILES && m >= WIDE_GRID_MIN_ROWS {
        let scheme = match m {
            _ if m >= LARGE_TILE_MIN_ROWS => 2,
            WIDE_TILE_ROWS => 3,
            _ => 1,
        };
        (scheme, 1)
    } else {
        return None;
    };
    Some(MidGrid {
        scheme: MID_GRID_SCHEMES[scheme],
        splits,
    })
}

#[cfg(test)]
mod mid_grid_tests {
    use super::*;

    #[test]
    fn grids_under_two_waves_on_long_k_take_the_measured_tile_and_split() {
        let small = mid_grid_choice((128, 4096, 4096)).unwrap();
        assert_eq!((small.scheme, small.splits), ("wg_t128_fr4x4_k64_u2_ct", 2));
        let mid = mid_grid_choice((256, 4096, 11008)).unwrap();
        assert_eq!((mid.scheme, mid.splits), ("wg_t128_fr8x8_k32_u8_a0_g8_ct", 2));
        assert_eq!(mid_grid_choice((128, 12288, 4096)), Some(mid));
        // From 512 rows, the 256x128 tile.
        let large = mid_grid_choice((512, 4096, 11008)).unwrap();
        assert_eq!((large.scheme, large.splits), ("wg_t256_fr16x8_k64_u16_a0_rf_ct", 2));
        let large_wide = mid_grid_choice((512, 6144, 4096)).unwrap();
        assert_eq!(
            (large_wide.scheme, large_wide.splits),
            ("wg_t256_fr16x8_k64_u16_a0_rf_ct", 1)
        );
        assert_eq!(
            mid_grid_choice((512, 22016, 4096)),
            None,
            "two waves or more: the default"
        );
        // Small grids from 128 rows: eight slices of the 128x128 tile on a long K, four where
        // 64x64 tiles would fill a wave alone.
        let long = mid_grid_choice((128, 4096, 14336)).unwrap();
        assert_eq!((long.scheme, long.splits), ("wg_t128_fr8x8_k32_u8_a0_g8_ct", 8));
        let filled = mid_grid_choice((128, 6144, 4096)).unwrap();
        assert_eq!((filled.scheme, filled.splits), ("wg_t128_fr8x8_k32_u8_a0_g8_ct", 4));
        let fewer_rows = mid_grid_choice((64, 4096, 14336)).unwrap();
        assert_eq!((fewer_rows.scheme, fewer_rows.splits), ("wg_t128_fr4x4_k64_u2_ct", 2));
        // One to two waves of the 128x128 tile: one tile row of 128 on the 128x256 tile, more
        // rows on the 128x128 one, unsplit.
        for shape in [(128, 22016, 4096), (128, 28672, 4096)] {
            let wide = mid_grid_choice(shape).unwrap();
            assert_eq!(
                (wide.scheme, wide.splits),
                ("wg_t256_fr8x16_k64_u16_a0_rf_ct", 1),
                "{shape:?}"
            );
        }
        let rows = mid_grid_choice((256, 9000, 4096)).unwrap();
        assert_eq!((rows.scheme, rows.splits), ("wg_t128_fr8x8_k32_u8_a0_g8_ct", 1));
        assert_eq!(mid_grid_choice((64, 22016, 4096)), None, "fewer rows: not measured");
        assert_eq!(
            mid_grid_choice((1024, 8192, 4096)),
            None,
            "256 tiles fill the GPU by the default's rule"
        );
        assert_eq!(mid_grid_choice((2048, 4096, 4096)), None);
        assert_eq!(mid_grid_choice((128, 4096, 1024)), None, "short K");
        assert_eq!(mid_grid_choice((8, 4096, 4096)), None, "decode's rows");
    }

    #[test]
    fn fewer_than_128_columns_are_looked_up_as_rows() {
        // The weights as A: their many rows do not make the 256x128 tile's rows.
        for (m, n) in [(22016, 16), (22016, 64), (14336, 64), (4096, 64)] {
            assert_eq!(mid_grid_choice((m, n, 4096)), mid_grid_choice((n, m, 4096)), "{m}x{n}");
        }
        assert_eq!(mid_grid_choice((22016, 64, 4096)), None);
        let few = mid_grid_choice((14336, 64, 4096)).unwrap();
        assert_eq!((few.scheme, few.splits), ("wg_t128_fr8x8_k32_u8_a0_g8_ct", 2));
        // From 128 columns, the table as measured: the 256x128 tile.
        let full = mid_grid_choice((22016, 128, 4096)).unwrap();
        assert_eq!((full.scheme, full.splits), ("wg_t256_fr16x8_k64_u16_a0_rf_ct", 1));
        let two = mid_grid_choice((14336, 128, 4096)).unwrap();
        assert_eq!((two.scheme, two.splits), ("wg_t256_fr16x8_k64_u16_a0_rf_ct", 2));
    }
}
