//! Property tests over arbitrary tile-scheme fields and problem sizes: every combination is a
//! typed error or a scheme and plan whose every invariant holds; never a panic.

use super::{device_problem, DispatchLimits, GemmPlan, Kernel, Operand, PlanRequest, SplitK};
use crate::config::ComponentType::*;
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::DeviceLimits;
use crate::error::Error;
use crate::kernel::Load;
use crate::tiling::test_support::{cfg, h200_limits, lavapipe_limits};
use crate::tiling::{KernelScope, Layout, TileScheme, VECTOR_BYTES};
use proptest::prelude::*;

/// Mostly values a real scheme has, sometimes anything at all.
fn field(small: impl Strategy<Value = u32> + 'static) -> BoxedStrategy<u32> {
    prop_oneof![9 => small, 1 => any::<u32>()].boxed()
}

fn configs() -> impl Strategy<Value = (GPUSubgroupMatrixConfig, DeviceLimits)> {
    prop_oneof![
        Just((cfg(16, 16, 16, F16, F32), h200_limits())),
        Just((cfg(16, 8, 16, F16, F16), h200_limits())),
        Just((cfg(16, 16, 32, I8, I32), h200_limits())),
        Just((cfg(8, 8, 8, F16, F32), lavapipe_limits())),
        Just((cfg(8, 8, 8, U8, U32), lavapipe_limits())),
        Just((cfg(16, 16, 16, F16, F32), DeviceLimits::default())),
    ]
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::RowMajor), Just(Layout::ColMajor)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn any_scheme_is_an_error_or_sound(
        // 0 stands for the device's own subgroup size.
        subgroup_size in field(prop_oneof![3 => Just(0u32), 1 => Just(8), 1 => Just(16), 1 => Just(32)]),
        sg_m in field(1u32..=2), sg_n in field(1u32..=4),
        fr_m in field(1u32..=4), fr_n in field(1u32..=4),
        k_step in field((1u32..=4).prop_map(|x| 16 * x)),
        pad_bytes in field(prop_oneof![Just(0u32), Just(16), Just(32), Just(8)]),
        stages in field(1u32..=2), raster_group in field(0u32..=8),
        workgroup in any::<bool>(),
        (config, limits) in configs(),
        (m, n, k) in (1usize..3000, 1usize..3000, 1usize..5000),
        (a_layout, b_layout) in (layout(), layout()),
        split in 1u32..6,
        f32_operands in (any::<bool>(), any::<bool>()),
        accurate in any::<bool>(),
        convert_first in any::<bool>(),
        relayout in (any::<bool>(), any::<bool>()),
    ) {
        let subgroup_size = match subgroup_size {
            0 if limits.subgroup_size == 0 => 32,
            0 => limits.subgroup_size,
            s => s,
        };
        let json = serde_json::json!({
            "subgroup_size": subgroup_size, "sg_m": sg_m, "sg_n": sg_n, "fr_m": fr_m, "fr_n": fr_n,
            "k_step": k_step, "pad_bytes": pad_bytes, "stages": stages, "raster_group": raster_group,
            "scope": if workgroup { "workgroup" } else { "subgroup" },
        });
        let Ok(scheme) = serde_json::from_value::<TileScheme>(json) else { return Ok(()) };
        match scheme.check(&config, &limits) {
            Err(e) => prop_assert!(matches!(e, Error::InvalidTileScheme(_)), "{e}"),
            Ok(()) => {
                let g = scheme.geometry(&config);
                let es = config.component_type.size_bytes();
                prop_assert!(g.bm >= config.m && g.bn >= config.n && g.bm <= 4096 && g.bn <= 4096);
                prop_assert_eq!(g.threads, sg_m * sg_n * subgroup_size);
                prop_assert_eq!((g.bm * es) % VECTOR_BYTES, 0);
                prop_assert_eq!(g.bk % config.k, 0);
                if limits.max_workgroup_invocations != 0 {
                    prop_assert!(g.threads <= limits.max_workgroup_invocations);
                    prop_assert!(g.shared_bytes <= limits.max_shared_memory);
                }
                if scheme.scope() == KernelScope::Subgroup {
                    prop_assert_eq!((g.bm * g.bk * es / VECTOR_BYTES) % g.threads, 0);
                    prop_assert_eq!(scheme.pad_bytes() % VECTOR_BYTES, 0);
                }
                let narrow = |f32_stored: bool| {
                    if f32_stored && config.component_type == F16 { Load::Round } else { Load::Native }
                };
                let splits = accurate && (config.component_type, config.result_type) == (F16, F32);
                let loads = if splits {
                    [Load::Split; 2]
                } else {
                    [narrow(f32_operands.0), narrow(f32_operands.1)]
                };
                let relayout = [relayout.0, relayout.1];
                check_plan(config, scheme, (m, n, k), (a_layout, b_layout), split, (loads, convert_first, relayout))?;
            }
        }
    }
}

/// A plan of a sound scheme covers the problem: GEMM dispatches tile M and N and sum to K.
fn check_plan(
    config: GPUSubgroupMatrixConfig,
    scheme: TileScheme,
    (m, n, k): (usize, usize, usize),
    layouts: (Layout, Layout),
    split: u32,
    (loads, convert_first, relayout): ([Load; 2], bool, [bool; 2]),
) -> Result<(), TestCaseError> {
    let ct = config.component_type;
    let sizes = (
        loads[0].storage_type(ct).size_bytes() as usize,
        loads[1].storage_type(ct).size_bytes() as usize,
        config.result_type.size_bytes() as usize,
    );
    let request = PlanRequest {
        specialize: false,
        problem: device_problem((m, n, k), layouts, sizes),
        config,
        scheme,
        loads,
        alpha: 2.0,
        beta: 0.0,
        split_k: SplitK::Slices(split),
        epilogue: Default::default(),
        convert_first,
        relayout,
    };
    let limits = DispatchLimits::from_device(&h200_limits());
    let planes = convert_first && loads == [Load::Split; 2];
    let flips = relayout.contains(&true);
    let converts = (convert_first && loads.contains(&Load::Round)) || (flips && !planes);
    let plan = match GemmPlan::new(&request, &limits) {
        Err(e) if refused_as_documented(&e, ct, scheme, (loads, convert_first, relayout))? => return Ok(()),
        other => other.map_err(|e| TestCaseError::fail(e.to_string()))?,
    };
    if planes {
        return check_planes(&plan, &config, scheme, k);
    }
    // Vectors in push constants count the stored type's 16-byte vectors (a copy's: 16 bits).
    let gemm0 = plan.gemm_dispatches().next().unwrap();
    if converts {
        check_copied(&plan, (loads, convert_first, relayout), layouts)?;
    } else {
        prop_assert_eq!(
            gemm0.push.lda_vec as usize * VECTOR_BYTES as usize,
            request.problem.lda * sizes.0
        );
    }
    let plan = GemmPlan {
        dispatches: plan
            .dispatches
            .into_iter()
            .filter(|d| !matches!(d.kernel, Kernel::Narrow { .. } | Kernel::Transpose { .. }))
            .collect(),
        ..plan
    };
    check_gemm_dispatches(&plan, scheme.geometry(&config), (m, n, k), loads)
}

/// Whether `e` is one of the typed errors the planner documents for these choices (an assertion
/// fails inside where it names them wrongly).
fn refused_as_documented(
    e: &Error,
    ct: crate::config::ComponentType,
    scheme: TileScheme,
    (loads, convert_first, relayout): ([Load; 2], bool, [bool; 2]),
) -> Result<bool, TestCaseError> {
    let planes = convert_first && loads == [Load::Split; 2];
    // What can be copied transposed: 16-bit and 8-bit operands, and f32 ones converted first.
    let copyable =
        loads.map(|l| (l == Load::Native && matches!(ct.size_bytes(), 1 | 2)) || (l == Load::Round && convert_first));
    let flips = relayout.contains(&true);
    Ok(match e {
        // Only those, and never the planes (they have their own pass): a typed error.
        Error::Unsupported(_) => flips && (planes || (0..2).any(|j| relayout[j] && !copyable[j])),
        // Split planes need a workgroup-scope scheme of one accumulator; f32 storage needs a
        // subgroup-scope scheme otherwise.
        Error::InvalidTileScheme(_) if planes => scheme.scope() != KernelScope::Workgroup || scheme.n_parts() != 1,
        Error::InvalidTileScheme(_) => {
            loads
                .iter()
                .any(|&l| l != Load::Native && !(l == Load::Round && convert_first))
                && scheme.scope() == KernelScope::Workgroup
        }
        // The accurate split runs in one pass or refuses, naming the exact mode.
        Error::TooLarge(m) if loads == [Load::Split; 2] => {
            prop_assert!(m.contains("Exact"), "{}", m);
            true
        }
        _ => false,
    })
}

/// The GEMM dispatches of `plan` (its copies taken out) tile M and N with `g`'s tiles and sum
/// to K; the accurate split's and split-K's passes are where they belong.
fn check_gemm_dispatches(
    plan: &GemmPlan,
    g: crate::tiling::TileGeometry,
    (m, n, k): (usize, usize, usize),
    loads: [Load; 2],
) -> Result<(), TestCaseError> {
    let gemm: Vec<_> = plan.gemm_dispatches().collect();
    for d in &gemm {
        prop_assert!(d.groups[0] as usize * g.bn as usize >= d.push.n as usize);
        prop_assert!(d.groups[1] as usize * g.bm as usize >= d.push.m as usize);
        prop_assert!(
            d.push.m as usize == m && d.push.n as usize == n,
            "one band for these sizes"
        );
    }
    prop_assert_eq!(gemm.iter().map(|d| d.push.k as usize).sum::<usize>(), k);
    if loads == [Load::Split; 2] {
        let kinds: Vec<_> = plan.dispatches.iter().map(|d| d.kernel).collect();
        prop_assert!(
            matches!(kinds[..], [Kernel::AbsMax, Kernel::AbsMax, Kernel::Gemm(_)]),
            "{:?}",
            kinds
        );
        prop_assert_eq!(plan.zeroed_scratch_bytes, 16);
        prop_assert!(plan.dispatches[2].after_previous && plan.dispatches[2].aux.is_some());
    } else if plan.is_split_k() {
        prop_assert!(gemm.iter().all(|d| d.bindings[2].0 == Operand::Scratch));
        let reduces = matches!(plan.dispatches.last().unwrap().kernel, Kernel::Reduce { .. });
        prop_assert!(reduces, "split-K ends with its reduction");
    } else {
        prop_assert_eq!(plan.dispatches.len(), 1);
    }
    Ok(())
}

/// Copying first: one pass per f32 operand converted first or operand flipped, narrowing (same
/// order) or transposing (the other order, rounding an f32 operand on the way), each writing its
/// own stretch at the start of scratch; the GEMM reads those stretches as 16-bit operands, the
/// flipped ones in the other layout, after a barrier; the GEMM's own scratch (split-K) lies past
/// them; every scratch window inside the scratch buffer.
fn check_copied(
    plan: &GemmPlan,
    (loads, convert_first, relayout): ([Load; 2], bool, [bool; 2]),
    layouts: (Layout, Layout),
) -> Result<(), TestCaseError> {
    let copied: Vec<(usize, Operand)> = [Operand::A, Operand::B]
        .into_iter()
        .enumerate()
        .filter(|&(j, _)| relayout[j] || (convert_first && loads[j] == Load::Round))
        .collect();
    let rounded: Vec<Operand> = copied.iter().map(|c| c.1).collect();
    let (narrows, rest) = plan.dispatches.split_at(rounded.len());
    let mut copies = Vec::new();
    for (d, &(j, op)) in narrows.iter().zip(&copied) {
        prop_assert_eq!(d.bindings[0].0, op);
        let (dst, w) = d.bindings[2];
        prop_assert_eq!(dst, Operand::Scratch);
        let rounds = (loads[j] == Load::Round).then_some(F16);
        if relayout[j] {
            // The copy's elements: rounded to f16, or the operand's own.
            let stored = [plan.problem.a_bytes, plan.problem.b_bytes][j] as u8;
            let bytes = if rounds.is_some() { 2 } else { stored };
            prop_assert_eq!(
                d.kernel,
                Kernel::Transpose {
                    rounds_to: rounds,
                    bytes
                }
            );
            // Source rows of `n` elements become copy rows of the source's `m`, padded to vectors.
            prop_assert!(d.push.m as u64 <= d.push.ldb_vec as u64 * 16 / bytes as u64);
            prop_assert!(w.bind_range >= d.push.n as u64 * d.push.ldb_vec as u64 * 16);
        } else {
            prop_assert!(matches!(d.kernel, Kernel::Narrow { to: F16 }), "{:?}", d.kernel);
            prop_assert!(d.push.n as u64 * 16 <= d.push.ldb_vec as u64 * 16 && d.push.ldc <= d.push.n * 8);
            prop_assert!(w.bind_range >= d.push.m as u64 * d.push.ldb_vec as u64 * 16);
        }
        copies.push((w.bind_offset, w.bind_offset + w.bind_range));
    }
    prop_assert!(
        copies.windows(2).all(|p| p[0].1 <= p[1].0),
        "copies overlap: {:?}",
        copies
    );
    let copies_end = copies.last().map_or(0, |c| c.1);
    prop_assert!(rest[0].after_previous && matches!(rest[0].kernel, Kernel::Gemm(_)));
    let flip = |l: Layout, f: bool| if f { l.transposed() } else { l };
    for d in rest {
        if let Kernel::Gemm(key) = d.kernel {
            let loaded = if convert_first {
                loads.map(Load::converted_first)
            } else {
                loads
            };
            prop_assert_eq!(key.loads, loaded);
            prop_assert_eq!(
                (key.a_layout, key.b_layout),
                (flip(layouts.0, relayout[0]), flip(layouts.1, relayout[1]))
            );
        }
        for (j, (op, w)) in d.bindings.iter().enumerate() {
            prop_assert!(!rounded.contains(op), "the GEMM reads the copy, not the f32 operand");
            if *op != Operand::Scratch {
                continue;
            }
            prop_assert!(w.bind_offset + w.bind_range <= plan.scratch_bytes);
            let in_copy = copies
                .iter()
                .any(|&(s, e)| w.bind_offset >= s && w.bind_offset + w.bind_range <= e);
            if j < 2 && matches!(d.kernel, Kernel::Gemm(_)) {
                prop_assert!(in_copy, "binding {} at {:?} outside the copies {:?}", j, w, copies);
            } else {
                prop_assert!(w.bind_offset >= copies_end, "the GEMM's own scratch follows the copies");
            }
        }
    }
    let gemm0 = plan.gemm_dispatches().next().unwrap();
    if rounded.first() == Some(&Operand::A) {
        prop_assert_eq!(gemm0.push.lda_vec, narrows[0].push.ldb_vec);
    }
    if rounded.last() == Some(&Operand::B) {
        prop_assert_eq!(gemm0.push.ldb_vec, narrows[rounded.len() - 1].push.ldb_vec);
    }
    Ok(())
}

/// The accurate split done first: both largest magnitudes, both operands split into planes
/// after them, and one GEMM over twice K padded to whole steps, reading the planes and the scale
/// words from scratch.
fn check_planes(
    plan: &GemmPlan,
    config: &GPUSubgroupMatrixConfig,
    scheme: TileScheme,
    k: usize,
) -> Result<(), TestCaseError> {
    let kinds: Vec<Kernel> = plan.dispatches.iter().map(|d| d.kernel).collect();
    let ok = matches!(
        kinds[..],
        [Kernel::AbsMax, Kernel::AbsMax, Kernel::SplitPlanes { .. }, Kernel::SplitPlanes { .. }, Kernel::Gemm(key)]
            if key.loads == [Load::Planes; 2] && (key.a_layout, key.b_layout) == (Layout::ColMajor, Layout::RowMajor)
    );
    prop_assert!(ok, "{:?}", kinds);
    let gemm = &plan.dispatches[4];
    let kp = k.next_multiple_of(scheme.geometry(config).bk as usize);
    prop_assert_eq!(gemm.push.k as usize, 2 * kp);
    prop_assert!(plan.dispatches[2].after_previous && gemm.after_previous);
    prop_assert_eq!(plan.zeroed_scratch_bytes, 16);
    for d in &plan.dispatches {
        for (op, w) in d.bindings.iter().chain(d.aux.iter()) {
            if *op == Operand::Scratch {
                prop_assert!(w.bind_offset + w.bind_range <= plan.scratch_bytes);
            }
        }
    }
    for j in 0..2 {
        prop_assert_eq!(gemm.bindings[j].0, Operand::Scratch);
        prop_assert_eq!(
            gemm.bindings[j].1.bind_offset,
            plan.dispatches[2 + j].bindings[2].1.bind_offset
        );
        prop_assert!(gemm.bindings[j].1.bind_range <= plan.dispatches[2 + j].bindings[2].1.bind_range);
    }
    Ok(())
}
