//! The schemes worth trying on a device, best first, and the default choice per problem.

use super::{KernelScope, TileScheme};
use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
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
    // with `vk-sgmat tune` on the H200 (docs/performance.md): 4 subgroups of 4x4 fragments
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
/// (docs/performance.md). A tile keeps at most 512 bytes of accumulator per invocation (128x256
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
    let steps = [(64, 4), (64, 2), (128, 2), (128, 8), (64, 8)];
    let mut out = Vec::new();
    for s in workgroup_schemes(config, info, subgroup_size, &steps) {
        let s = if s.stages() == 8 {
            s.with_lookahead(0).unwrap_or(s)
        } else {
            s
        };
        // Each tile also computed transposed, which NVIDIA's driver stores faster; the looped
        // 128x128 tile also with the grouped raster it takes by default.
        let grouped = (s.stages() == 8 && is_square_128(&s, config)).then(|| s.with_raster_group(RASTER_128));
        for s in std::iter::once(s).chain(grouped.and_then(|g| g.ok())) {
            out.extend(std::iter::once(s).chain(transposed_on(&s, config, info)));
        }
    }
    out
}

/// The raster group of the default 128x128 workgroup-scope tile: groups of 8 tile rows walked
/// column by column. H200, f16 -> f32, `tn` (where `nn` and `tt` run after their copy), TFLOP/s
/// against the row-by-row walk in the same call: 4096^3 309.2 / 305.0, 8192^3 315.9 / 308.7,
/// 4096x11008x4096 301.0 / 290.0, 2048^3 308.6 / 305.9; `nn` 4096^3 281.9 / 279.8
/// (perf/h200-int8-k1024-2.txt; perf/h200-raster-2.txt alike). Groups of 4 or 16 gained less.
pub const RASTER_128: u32 = 8;

/// Whether a scheme's tile is 128x128, the tile [`RASTER_128`] applies to.
fn is_square_128(s: &TileScheme, config: &GPUSubgroupMatrixConfig) -> bool {
    let g = s.geometry(config);
    (g.bm, g.bn) == (128, 128)
}

/// PCI vendor id of NVIDIA.
pub(crate) const VENDOR_NVIDIA: u32 = 0x10de;

/// A preferred workgroup-scope scheme: (tile rows, tile columns, invocations, K step bytes, K
/// steps per loop iteration, computed transposed).
type Wanted = (u32, u32, u32, u32, u32, bool);

/// The workgroup-scope schemes taken by default, ahead of the subgroup-scope ones: those measured
/// faster than every subgroup-scope scheme on the H200 (docs/performance.md): 128x128 tiles with
/// 128 invocations in eight 64-byte K steps per loop iteration taken step by step (3-8% faster
/// than four steps loaded first, in every layout measured), then, for grids too small for those,
/// 64x64 tiles with 128 invocations and two 128-byte steps per iteration (1024x1024x1024
/// f16->f32: 16.1 us in `nn` and `nt`, against 19.4 and 21.5 for 64-byte steps and 18.3 for
/// ggml-vulkan in the same call, docs/perf/h200-small-1.txt; 25.3 for the best subgroup-scope
/// tile). Each is computed transposed: 4096^3 f16->f32 128x128 3.6-6.5% faster in every layout,
/// 69% at K = 256; 1024^3 64x64 11-14%. The 128x128 tile walks its grid in groups of 8 tile rows
/// ([`RASTER_128`]).
/// f16 results take [`preferred_long_k_schemes`] first where those suit. Only on NVIDIA, where
/// they were measured; elsewhere the autotuner decides.
pub fn preferred_workgroup_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    let wanted: &[Wanted] = match config.result_type {
        ComponentType::F16 | ComponentType::F32 => &[(128, 128, 128, 64, 8, true), (64, 64, 128, 128, 2, true)],
        _ => &[],
    };
    preferred(config, info, subgroup_size, wanted)
        .into_iter()
        .map(|s| {
            if is_square_128(&s, config) {
                s.with_raster_group(RASTER_128).unwrap_or(s)
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
        ComponentType::F16 => &[(256, 256, 256, 64, 8, true)],
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
    preferred(config, info, subgroup_size, &[(64, 64, 128, 64, 2, true)])
}

/// The longest K for which a 16-bit C takes [`preferred_short_k_schemes`] first.
pub const SHORT_K: usize = 128;

/// The workgroup-scope schemes taken first when A is row-major and B column-major (`nt`: both
/// K-contiguous, the layout of model weights): for f32 results 256x128 tiles computed transposed
/// (a 128x256 accumulator of C^T) with 256 invocations in eight 128-byte steps taken step by step
/// (ggml-vulkan's accumulator and loop; on the H200 4096^3 281 TFLOP/s against 255 for the
/// 128x128 default, and slower in the other layouts). For i8 -> i32 and u8 -> u32 the same tile
/// and loop (128-byte steps of 128 elements): 4096^3 535 TOPS against 302 for the
/// subgroup-scope default, 0.66 of cuBLAS's int8 TN kernel in the same call. Only on NVIDIA.
pub fn preferred_k_contiguous_schemes(
    config: &GPUSubgroupMatrixConfig,
    info: &DeviceInfo,
    subgroup_size: u32,
) -> Vec<TileScheme> {
    // u8 runs as fast as i8 (533.7 TOPS against 311.3 for the subgroup-scope default;
    // perf/h200-int8-layouts-1.txt).
    let wanted: &[Wanted] = if int8_16x16(config) {
        // Then 64x64 tiles where the 256x128 ones are too few to fill the GPU (1024x1024x4096:
        // 321.5 TOPS against 289.3, and 188.5 for the subgroup-scope default).
        &[(256, 128, 256, 128, 8, true), (64, 64, 128, 128, 2, true)]
    } else if config.result_type == ComponentType::F32 {
        &[(256, 128, 256, 128, 8, true)]
    } else {
        &[]
    };
    preferred(config, info, subgroup_size, wanted)
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
        &[(128, 128, 128, 64, 8, true), (64, 64, 128, 128, 2, true)],
        &[(128, 128, 128, 64, 4, true), (64, 64, 128, 128, 2, true)],
        &[(128, 128, 128, 64, 2, true), (64, 64, 128, 64, 2, true)],
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
            (128, 256, 256, 64, 8, true),
            (128, 128, 256, 64, 8, true),
            (64, 64, 128, 64, 2, true),
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
        .filter_map(|&(bm, bn, threads, k_bytes, stages, transposed)| {
            candidates.iter().copied().find(|s| {
                let g = s.geometry(config);
                (g.bm, g.bn, g.threads) == (bm, bn, threads)
                    && g.bk * es == k_bytes
                    && s.stages() == stages
                    && s.c_transposed() == transposed
            })
        })
        .collect()
}

/// The tile of the f32 kernel without matrix units ([`crate::kernel::Load::Simt`]): one 8x8
/// block of C per invocation, 128x128 (256 invocations) on GPUs, 64x64 on CPU drivers, smaller
/// where the device's limits or subgroup size need it; K steps of 16.
pub fn simt_scheme(limits: &DeviceLimits, subgroup_size: u32, cpu_device: bool) -> Option<TileScheme> {
    let config = crate::kernel::SIMT_CONFIG;
    let tiles: &[u32] = if cpu_device { &[64, 32] } else { &[128, 64, 32] };
    for &tile in tiles {
        let threads = (tile / 8) * (tile / 8);
        if threads % subgroup_size != 0 {
            continue;
        }
        let subgroups = threads / subgroup_size;
        // Subgroups arranged as squarely as the tile divides.
        for sg_m in (1..=subgroups).filter(|d| subgroups % d == 0) {
            let sg_n = subgroups / sg_m;
            if sg_m > sg_n || tile % (sg_m * 8) != 0 || tile % (sg_n * 8) != 0 {
                continue;
            }
            let fr = (tile / (sg_m * 8), tile / (sg_n * 8));
            if let Ok(s) = TileScheme::new(&config, limits, subgroup_size, (sg_m, sg_n), fr, 16) {
                return Some(s);
            }
        }
    }
    None
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
