//! The schemes worth trying on a device, best first, and the default choice per problem.

use super::{KernelScope, TileScheme};
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::{DeviceInfo, DeviceLimits};

/// The schemes vk-sgmat tries for `config`, best first, before filtering by the device. CPU
/// drivers get only the small scheme: lavapipe compiles large unrolled kernels slowly.
pub fn candidate_schemes(
    config: &GPUSubgroupMatrixConfig,
    limits: &DeviceLimits,
    subgroup_size: u32,
    cpu_device: bool,
) -> Vec<TileScheme> {
    let es = config.component_type.size_bytes();
    // (subgroups, fragments per subgroup, k_step in fragments of k). The GPU order is measured
    // with `vk-sgmat tune` on the H200 (docs/perf/JOURNAL.md): 4 subgroups of 4x4 fragments
    // (128x128 tiles, two fragments of K per stage) first, then the other schemes that led there.
    // CPU drivers take one small scheme with 64 bytes of K per stage.
    type Shape = ((u32, u32), (u32, u32), u32);
    let cpu_k = (64 / es).max(config.k).div_ceil(config.k);
    let gpu: [Shape; 10] = [
        ((2, 2), (4, 4), 2),
        ((1, 4), (8, 2), 2),
        ((2, 4), (4, 4), 2),
        ((2, 4), (4, 2), 1),
        ((2, 4), (2, 2), 2),
        ((2, 2), (4, 2), 2),
        ((2, 2), (2, 2), 2),
        ((1, 2), (2, 2), 2),
        ((1, 1), (2, 2), 2),
        ((1, 1), (1, 1), 1),
    ];
    let cpu: [Shape; 3] = [
        ((2, 2), (2, 2), cpu_k),
        ((2, 2), (1, 1), cpu_k),
        ((1, 1), (1, 1), cpu_k),
    ];
    // 16-bit accumulators leave room for 256x256 tiles (8 subgroups of 8x4 fragments): half the
    // global traffic per multiply of 128x128, measured fastest for f16 -> f16 on the H200.
    let wide: [Shape; 1] = [((2, 4), (8, 4), 2)];
    // 8-bit inputs: 4 subgroups of 8x2 fragments measured fastest (autotuner on the H200).
    let tall: [Shape; 1] = [((1, 4), (8, 2), 2)];
    let gpu: Vec<Shape> = if config.result_type.size_bytes() == 2 {
        wide.iter().chain(&gpu).copied().collect()
    } else if es == 1 {
        tall.iter().chain(&gpu).copied().collect()
    } else {
        gpu.to_vec()
    };
    let shapes: &[Shape] = if cpu_device { &cpu } else { &gpu };
    let mut out = Vec::new();
    for &(sg, fr, kf) in shapes {
        // Fall back to deeper stages when a fragment's K is under 16 bytes.
        for ks in [kf * config.k, 2 * kf * config.k, 4 * kf * config.k] {
            if let Ok(s) = TileScheme::new(config, limits, subgroup_size, sg, fr, ks) {
                if !out.contains(&s) {
                    out.push(s);
                }
                break;
            }
        }
    }
    out
}

/// A wider set of schemes for the autotuner and `vk-sgmat tune`: 2 to 8 subgroups, workgroup tiles
/// from 64 to 256 on a side, 4 to 16 accumulator fragments per subgroup (32 for 16-bit results), one
/// to four fragment-k multiples per stage (32 to 128 bytes of row), single or double-buffered,
/// with and without grouped raster; every one valid on the device. CPU devices get
/// [`candidate_schemes`] only.
pub fn tuning_candidates(
    config: &GPUSubgroupMatrixConfig,
    limits: &DeviceLimits,
    subgroup_size: u32,
    cpu_device: bool,
) -> Vec<TileScheme> {
    let mut out = candidate_schemes(config, limits, subgroup_size, cpu_device);
    if cpu_device {
        return out;
    }
    let es = config.component_type.size_bytes();
    let sgs = [(2, 4), (4, 2), (2, 2), (1, 4), (4, 1), (2, 1), (1, 2)];
    let mut frs = vec![(2, 2), (4, 2), (2, 4), (4, 4), (8, 2), (2, 8), (8, 1), (1, 8)];
    // 16-bit accumulators take half the registers: up to 32 fragments per subgroup fit (256x256
    // tiles with 8 subgroups, like NVIDIA's sample's fastest f16 kernels).
    if config.result_type.size_bytes() == 2 {
        frs.extend([(8, 4), (4, 8)]);
    }
    let mut k_steps: Vec<u32> = [config.k, 2 * config.k, 3 * config.k, 4 * config.k]
        .into_iter()
        .filter(|&k| k * es >= 32 && k * es <= 128)
        .collect();
    if k_steps.is_empty() {
        k_steps.push(config.k);
    }
    for &(sm, sn) in &sgs {
        for &(fm, fn_) in &frs {
            let (bm, bn) = (sm * fm * config.m, sn * fn_ * config.n);
            if !(64..=256).contains(&bm) || !(64..=256).contains(&bn) {
                continue;
            }
            for &ks in &k_steps {
                for stages in [1, 2] {
                    let s = TileScheme::new(config, limits, subgroup_size, (sm, sn), (fm, fn_), ks)
                        .and_then(|s| s.with_stages(stages, config, limits));
                    if let Ok(s) = s {
                        for s in std::iter::once(s).chain(s.with_raster_group(8)) {
                            if !out.contains(&s) {
                                out.push(s);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// Workgroup-scope schemes (see [`KernelScope::Workgroup`]) the device offers for `config`,
/// largest workgroup first, then largest tile: tiles of 64 to 256 on a side, for each workgroup
/// size the device lists, each with (K step, steps per loop iteration) of (64 bytes, 4),
/// (64 bytes, 2), (128 bytes, 2) and (128 bytes, 8, each loaded just before its multiply): on
/// the H200, 256 bytes of K per iteration in 64-byte steps measured fastest for every tile
/// (docs/perf/JOURNAL.md). A tile keeps at most 512 bytes of accumulator per invocation (128x256
/// f32 over 256 invocations): more does not fit in registers. Empty where the device has no
/// usable `VK_NV_cooperative_matrix2`.
pub fn workgroup_candidates(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    // Eight steps per iteration are taken step by step (each loaded just before its
    // multiply, ggml-vulkan's loop, as an inner loop the driver unrolls): eight 64-byte steps
    // are the fastest 128x128 loop in every layout, eight 128-byte steps the fastest 128x256
    // one when both operands are K-contiguous (`nt`). H200: perf/h200-nested-loop.txt.
    // Sixteen steps per iteration, computed transposed with each step's right operand loaded
    // first, are 3-10% faster again for the 256-invocation tiles and the 128x128 one on long K
    // (perf/h200-deep-2.txt); they are listed in that form only.
    let steps = [(64, 4), (64, 2), (128, 2), (128, 8), (64, 8), (128, 16), (64, 16)];
    let mut out = Vec::new();
    for s in workgroup_schemes(config, info, subgroup_size, &steps) {
        let looped = s.stages() >= 8;
        let s = if looped { s.with_lookahead(0).unwrap_or(s) } else { s };
        // Each tile also computed transposed, which NVIDIA's driver stores faster; the looped
        // 128x128 tile also with the grouped raster it takes by default.
        let grouped = (looped && is_square_128(&s, config)).then(|| s.with_raster_group(RASTER_128));
        for s in std::iter::once(s).chain(grouped.and_then(|g| g.ok())) {
            let t = transposed_on(&s, config, info);
            let right_first = t.filter(|_| looped).and_then(|t| t.with_right_first(true).ok());
            if s.stages() <= 8 {
                out.extend(std::iter::once(s).chain(t));
            }
            out.extend(right_first);
        }
    }
    out
}

/// The raster group of the default 128x128 workgroup-scope tile: groups of 8 tile rows walked
/// column by column. H200, f16 -> f32, `tn` (where `nn` and `tt` run after their copy), TFLOP/s
/// against the row-by-row walk in the same call: 4096^3 309.2 / 305.0, 8192^3 315.9 / 308.7,
/// 4096x11008x4096 301.0 / 290.0, 2048^3 308.6 / 305.9; `nn` 4096^3 281.9 / 279.8
/// (perf/h200-int8-k1024-2.txt; perf/h200-raster-2.txt alike). Groups of 4 or 16 gained less.
/// The `nt` leads of f32 results walk large grids so too (`api::schemes`).
pub const RASTER_128: u32 = 8;

/// `s` on the grouped walk, [`RASTER_128`] tile rows at a time (`s` itself where it cannot
/// take one).
pub fn on_grouped_walk(s: TileScheme) -> TileScheme {
    s.with_raster_group(RASTER_128).unwrap_or(s)
}

/// Whether a scheme's tile is 128x128, the tile [`RASTER_128`] applies to.
pub(super) fn is_square_128(s: &TileScheme, config: &GPUSubgroupMatrixConfig) -> bool {
    let g = s.geometry(config);
    (g.bm, g.bn) == (128, 128)
}

/// The tile of the kernel without matrix units ([`crate::kernel::Load::Simt`] and
/// [`crate::kernel::Load::Widen`]): one 8x8 block of C per invocation, 128x128 (256
/// invocations) on GPUs, 64x64 on CPU drivers, smaller where the device's limits or subgroup
/// size need it; K steps of 16. The first of [`simt_schemes`].
pub fn simt_scheme(limits: &DeviceLimits, subgroup_size: u32, cpu_device: bool) -> Option<TileScheme> {
    simt_schemes(limits, subgroup_size, cpu_device).into_iter().next()
}

/// Every tile [`simt_scheme`] could take here, largest first: a problem whose rows do not fit
/// the device's buffer windows at the first takes the next.
pub fn simt_schemes(limits: &DeviceLimits, subgroup_size: u32, cpu_device: bool) -> Vec<TileScheme> {
    let config = crate::config::SIMT_CONFIG;
    let tiles: &[u32] = if cpu_device { &[64, 32, 16] } else { &[128, 64, 32, 16] };
    let mut out = Vec::new();
    for &tile in tiles {
        let threads = (tile / 8) * (tile / 8);
        if threads % subgroup_size != 0 {
            continue;
        }
        let subgroups = threads / subgroup_size;
        // Subgroups arranged as squarely as the tile divides.
        let scheme = (1..=subgroups)
            .filter(|d| subgroups % d == 0)
            .filter_map(|sg_m| {
                let sg_n = subgroups / sg_m;
                if sg_m > sg_n || tile % (sg_m * 8) != 0 || tile % (sg_n * 8) != 0 {
                    return None;
                }
                let fr = (tile / (sg_m * 8), tile / (sg_n * 8));
                TileScheme::new(&config, limits, subgroup_size, (sg_m, sg_n), fr, 16).ok()
            })
            .next();
        out.extend(scheme);
    }
    out
}

/// Whether a `bm x bn` tile is at most twice an `m x n` problem in each direction (so at most half
/// of a tile's rows or columns are wasted): the size rule of both the heuristic and the autotuner.
pub fn not_oversized(bm: usize, bn: usize, m: usize, n: usize) -> bool {
    bm <= 2 * m.max(1) && bn <= 2 * n.max(1)
}

/// The scheme for problems too small for any candidate to fill the GPU: 2 subgroups of 2x2
/// fragments (32x64 with 16x16 fragments) where `subgroup_scope` has it, else its last
/// (smallest) scheme.
pub fn small_problem_scheme(subgroup_scope: &[TileScheme]) -> Option<TileScheme> {
    subgroup_scope
        .iter()
        .find(|s| s.scope() == KernelScope::Subgroup && (s.sg_m(), s.sg_n(), s.fr_m(), s.fr_n()) == (1, 2, 2, 2))
        .or(subgroup_scope.last())
        .copied()
}

/// The default scheme for an `m x n` output (`batch` of them, one grid) from `candidates` (best
/// first), `small` being [`small_problem_scheme`]'s pick. Every choice has a tile at most twice
/// the problem in each direction ([`not_oversized`]). On GPUs: the first candidate with at least
/// 2x2 fragments per subgroup whose grid (every entry's tiles) puts about 1024 subgroups to work; where none does, `small`: on the H200 its 32x64 tile ran fastest from
/// 64x64x64 to 512x512x512 (4.8 us of GPU time at 64^3, against 11.6 for a 128x128 tile),
/// where latency, not throughput, decides. CPU drivers take the first candidate that fits.
/// Failing all that, the last candidate.
pub fn pick_scheme(
    candidates: &[TileScheme],
    small: Option<TileScheme>,
    config: &GPUSubgroupMatrixConfig,
    (m, n): (usize, usize),
    batch: usize,
    cpu_device: bool,
) -> Option<TileScheme> {
    const FILL_SUBGROUPS: usize = 1024;
    let fits = |s: &&TileScheme| {
        let g = s.geometry(config);
        not_oversized(g.bm as usize, g.bn as usize, m, n)
    };
    let fills = |s: &&TileScheme| {
        let g = s.geometry(config);
        let tiles = m.div_ceil(g.bm as usize) * n.div_ceil(g.bn as usize) * batch.max(1);
        tiles * (s.sg_m() * s.sg_n()) as usize >= FILL_SUBGROUPS
    };
    let first_fit = candidates.iter().find(fits);
    let chosen = if cpu_device {
        first_fit
    } else {
        // At least 2x2 fragments per subgroup: single-fragment subgroups fill any grid but
        // ran slower than `small` (512x512x512: 18.3 against 21.9 TFLOP/s).
        candidates
            .iter()
            .filter(fits)
            .filter(|s| s.fr_m() * s.fr_n() >= 4)
            .find(fills)
            .or(small.as_ref().filter(fits))
            .or(first_fit)
    };
    chosen.or(candidates.last()).copied()
}

/// [`workgroup_candidates`] and more, for `vk-sgmat tune`: K steps of 32 to 128 bytes, 1 to 8 of
/// them per loop iteration, loads issued 0 or 1 steps ahead of their multiplies as well as all
/// first, tiles 256 or more wide held as two accumulators (loads all first or one step ahead),
/// grouped raster, and each single accumulator also computed transposed.
pub fn workgroup_tuning_candidates(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    let mut out = workgroup_candidates(config, info, subgroup_size);
    let mut steps = Vec::new();
    for k_bytes in [32, 64, 128] {
        for stages in [1, 2, 4, 8] {
            steps.push((k_bytes, stages));
        }
    }
    // Deeper iterations, step by step only (loads issued first would keep 16 or 32 steps of
    // operands live), computed transposed, each also on the grouped walk. (Iterations as deep
    // in fewer, larger loads, 256-byte steps, ran 4-5x slower on the H200: perf/h200-y-2.txt.)
    let deep: Vec<(u32, u32)> = [64, 128]
        .into_iter()
        .flat_map(|k_bytes| [16, 32].map(|stages| (k_bytes, stages)))
        .collect();
    for s in workgroup_schemes(config, info, subgroup_size, &deep) {
        let Ok(s) = s.with_lookahead(0) else { continue };
        let grouped = s.with_raster_group(RASTER_128).ok();
        for s in std::iter::once(s).chain(grouped) {
            for s in std::iter::once(s).chain(transposed_on(&s, config, info)) {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
    }
    for s in workgroup_schemes(config, info, subgroup_size, &steps) {
        let ahead = (0..s.lookahead().min(2)).filter_map(|a| s.with_lookahead(a).ok());
        let halves = s
            .with_n_parts(2, config, &info.limits)
            .ok()
            .filter(|h| h.geometry(config).bn >= 256 && h.check_device(config, info).is_ok());
        let halves_ahead = halves.and_then(|h| h.with_lookahead(1).ok());
        let singles: Vec<TileScheme> = std::iter::once(s).chain(s.with_raster_group(8)).chain(ahead).collect();
        // Each single-accumulator variant also computed transposed.
        let transposed: Vec<TileScheme> = singles.iter().filter_map(|t| transposed_on(t, config, info)).collect();
        for s in singles.into_iter().chain(transposed).chain(halves).chain(halves_ahead) {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    // The looped forms also with each step's right operand loaded first, computed transposed or
    // not (`nn` in place reads fastest on an untransposed 128x256 tile: perf/h100-28-2.txt).
    let right_first: Vec<TileScheme> = out
        .iter()
        .filter(|s| s.lookahead() == 0 && s.stages() >= 8)
        .filter_map(|s| s.with_right_first(true).ok())
        .collect();
    for s in right_first {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// `s` computed transposed, where the device offers its transposed accumulator.
fn transposed_on(s: &TileScheme, config: &GPUSubgroupMatrixConfig, info: &DeviceInfo) -> Option<TileScheme> {
    s.with_c_transposed(true, config, &info.limits)
        .ok()
        .filter(|t| t.check_device(config, info).is_ok())
}

/// Workgroup-scope schemes for every listed (K step in bytes, steps per iteration).
fn workgroup_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
    steps: &[(u32, u32)],
) -> Vec<TileScheme> {
    let Some(cm2) = &info.cooperative_matrix2 else {
        return Vec::new();
    };
    let es = config.component_type.size_bytes();
    let rs = config.result_type.size_bytes();
    let tiles = [
        (256, 256),
        (128, 256),
        (256, 128),
        (128, 128),
        (64, 128),
        (128, 64),
        (64, 64),
    ];
    let mut entries = cm2.workgroup_entries(config);
    entries.sort_by_key(|&(_, _, _, invocations)| std::cmp::Reverse(invocations));
    let mut out = Vec::new();
    for (_, _, _, invocations) in entries {
        let subgroups = invocations / subgroup_size;
        if subgroups == 0 || invocations % subgroup_size != 0 || !subgroups.is_power_of_two() {
            continue;
        }
        for &(bm, bn) in &tiles {
            if bm * bn * rs > 512 * invocations {
                continue;
            }
            // Any split of the subgroups that divides the tile names it: the kernel only uses
            // the tile and the workgroup size.
            let split = (0..=subgroups.trailing_zeros())
                .map(|i| (subgroups >> i, 1 << i))
                .find(|&(sm, sn)| bm % (sm * config.m) == 0 && bn % (sn * config.n) == 0);
            let Some((sm, sn)) = split else { continue };
            let fr = (bm / (sm * config.m), bn / (sn * config.n));
            for &(k_bytes, stages) in steps {
                let bk = (k_bytes / es).next_multiple_of(config.k);
                if let Ok(s) = TileScheme::workgroup(config, info, subgroup_size, (sm, sn), fr, (bk, stages)) {
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "candidates_tests.rs"]
mod tests;
