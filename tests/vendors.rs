//! AMD and Intel without the hardware: the cooperative-matrix lists and limits their Mesa drivers
//! report, taken from the drivers' public source (cited per fixture), fed through the config
//! filter, the scheme candidates, the default choice and the kernel generator (every kernel
//! through spirv-val). docs/devices.md says what each vendor gets and what is untested.

mod common;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use vk_sgmat::config::{filter_configs, FilterFeatures, MatrixScope, RawComponent, RawMatrixProperty};
use vk_sgmat::device::DeviceLimits;
use vk_sgmat::kernel::{generate, Epilogue, KernelKey, Probe};
use vk_sgmat::tiling::{candidate_schemes, pick_scheme, small_problem_scheme, KernelScope, Layout};
use vk_sgmat::{ComponentType, ComponentType::*, GPUSubgroupMatrixConfig};

fn prop(
    m: u32,
    n: u32,
    k: u32,
    (a, b, c): (ComponentType, ComponentType, ComponentType),
    sat: bool,
) -> RawMatrixProperty {
    RawMatrixProperty {
        m,
        n,
        k,
        a_type: RawComponent::Known(a),
        b_type: RawComponent::Known(b),
        c_type: RawComponent::Known(c),
        result_type: RawComponent::Known(c),
        saturating_accumulation: sat,
        scope: MatrixScope::Subgroup,
    }
}

/// RADV on RDNA3 (GFX11): `radv_GetPhysicalDeviceCooperativeMatrixPropertiesKHR` in Mesa's
/// `src/amd/vulkan/radv_physical_device.c` (bminor/mesa-mesa, commit 001fa1cf11092d3d731ae083f430a26d8e88528f):
/// 16x16x16 f16 -> f16 and f16 -> f32, then every signedness of 8-bit A and B with 32-bit C,
/// saturating only with a signed C ("the HW only supports signed acc").
fn radv_rdna3() -> Vec<RawMatrixProperty> {
    let mut v = vec![
        prop(16, 16, 16, (F16, F16, F16), false),
        prop(16, 16, 16, (F16, F16, F32), false),
    ];
    for a in [U8, I8] {
        for b in [U8, I8] {
            for c in [U32, I32] {
                for sat in [false, true] {
                    if c == U32 && sat {
                        continue;
                    }
                    v.push(prop(16, 16, 16, (a, b, c), sat));
                }
            }
        }
    }
    v
}

/// RADV on RDNA4 (GFX12): the same function in a later Mesa (bminor/mesa-mesa, commit
/// c869971d053d4694476121005bb377fc0c22de59): first every pairing of fp8 E4M3 and E5M2 A and B
/// with f32 C, then f16 and bf16 each to itself and to f32 ("BF16 isn't working precisely on
/// GFX11", so bf16 is GFX12's only), then RDNA3's 8-bit list. All 16x16x16, subgroup scope.
fn radv_rdna4() -> Vec<RawMatrixProperty> {
    let mut v = Vec::new();
    for a in [F8E4M3, F8E5M2] {
        for b in [F8E4M3, F8E5M2] {
            let mut p = prop(16, 16, 16, (a, a, F32), false);
            p.b_type = RawComponent::Known(b);
            v.push(p);
        }
    }
    for ab in [F16, Bf16] {
        for cd in [ab, F32] {
            v.push(prop(16, 16, 16, (ab, ab, cd), false));
        }
    }
    v.extend(radv_rdna3().into_iter().skip(2));
    v
}

/// RADV's compute limits in the same file (`radv_get_physical_device_properties`):
/// 1024 invocations, workgroup count 65535 each way, `max_shared_size` (64 KiB on GFX7 and later),
/// subgroup sizes 32 and 64 with required-size control in compute.
fn radv_limits(subgroup_size: u32) -> DeviceLimits {
    DeviceLimits {
        subgroup_size,
        min_subgroup_size: 32,
        max_subgroup_size: 64,
        required_subgroup_size_compute: true,
        max_shared_memory: 65536,
        max_workgroup_invocations: 1024,
        max_workgroup_size: [1024, 1024, 1024],
        max_workgroup_count: [65535, 65535, 65535],
        max_storage_buffer_range: u32::MAX,
        min_storage_buffer_offset_alignment: 4,
        max_push_constants_size: 256,
        max_memory_allocation_size: u64::MAX,
        timestamp_period: 10.0,
    }
}

/// ANV on Xe-LP (Gfx12), Xe-HPG (DG2, Gfx12.5) and Xe-LPG (Meteor Lake): the
/// `cooperative_matrix_configurations` of `GFX12_FEATURES` and `XEHP_FEATURES` in Mesa's
/// `src/intel/dev/intel_device_info.c`: 8x8x16 f16 -> f16 and f16 -> f32, 8x8x32 i8 -> i32 and
/// u8 -> u32, all subgroup scope.
fn anv_xe_hpg() -> Vec<RawMatrixProperty> {
    vec![
        prop(8, 8, 16, (F16, F16, F16), false),
        prop(8, 8, 16, (F16, F16, F32), false),
        prop(8, 8, 32, (I8, I8, I32), false),
        prop(8, 8, 32, (U8, U8, U32), false),
    ]
}

/// Intel GPUs run subgroups of 8, 16 or 32 (ANV reports min 8, max 32); 64 KiB of shared memory
/// and 1024 invocations per workgroup.
fn anv_limits(subgroup_size: u32) -> DeviceLimits {
    DeviceLimits {
        subgroup_size,
        min_subgroup_size: 8,
        max_subgroup_size: 32,
        max_workgroup_count: [65535, 65535, 65535],
        ..radv_limits(subgroup_size)
    }
}

const FEATURES: FilterFeatures = FilterFeatures {
    shader_f16: true,
    bf16_cooperative_matrix: false,
    fp8_cooperative_matrix: false,
};

/// Every config (Dawn's standard ones, and the bf16/fp8 ones where `features` offer them) gets
/// sound candidates at every subgroup size the device runs, a default for every problem size,
/// and kernels that spirv-val accepts.
fn check_vendor(
    name: &str,
    (list, features): (&[RawMatrixProperty], FilterFeatures),
    limits: &[DeviceLimits],
    (want, want_extended): (&[&str], &[&str]),
) {
    let configs = filter_configs(list, features);
    let names = |v: &[GPUSubgroupMatrixConfig]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&configs.standard), want, "{name}: configs");
    assert_eq!(names(&configs.extended), want_extended, "{name}: extended configs");
    let mut kernels = 0;
    for l in limits {
        let sg = l.subgroup_size;
        for config in configs.standard.iter().chain(&configs.extended) {
            let candidates = candidate_schemes(config, l, sg, false);
            assert!(!candidates.is_empty(), "{name} {config} subgroup {sg}: no scheme");
            for s in &candidates {
                let g = s.geometry(config);
                assert!(s.check(config, l).is_ok(), "{name} {config}: {}", s.name());
                assert_eq!(s.scope(), KernelScope::Subgroup);
                assert_eq!(s.subgroup_size(), sg);
                assert_eq!(g.threads % sg, 0, "{name} {config} {}", s.name());
                assert!(g.threads <= l.max_workgroup_invocations && g.shared_bytes <= l.max_shared_memory);
                assert!(g.bm >= config.m && g.bn >= config.n && g.bk % config.k == 0);
            }
            let small = small_problem_scheme(&candidates);
            for size in [1, 17, 64, 300, 1024, 4096, 16384] {
                let pick = pick_scheme(&candidates, small, config, (size, size), 1, false);
                assert!(pick.is_some(), "{name} {config} {size}: no default");
            }
            // The largest and the smallest candidate, each layout pair and epilogue extreme.
            for scheme in [candidates[0], *candidates.last().unwrap()] {
                for (a_layout, b_layout, epilogue) in [
                    (Layout::RowMajor, Layout::RowMajor, Epilogue::default()),
                    (
                        Layout::ColMajor,
                        Layout::ColMajor,
                        Epilogue {
                            alpha: true,
                            beta: true,
                            ..Default::default()
                        },
                    ),
                ] {
                    let key = KernelKey {
                        config: *config,
                        scheme,
                        a_layout,
                        b_layout,
                        epilogue,
                        loads: Default::default(),
                        probe: Probe::Full,
                        grouped: false,
                        fixed: None,
                    };
                    let words = generate(&key).unwrap_or_else(|e| panic!("{name}: {e}"));
                    match common::spirv_val(&words, &key.name()) {
                        Ok(()) => kernels += 1,
                        // The provisioned spirv-tools (2025.1) predates SPV_KHR_bfloat16 and
                        // SPV_EXT_float8 and stops at their capabilities; everything else in
                        // these modules is shared with the kernels validated here.
                        Err(e) if configs.extended.contains(config) && e.contains("Invalid capability operand") => {}
                        Err(e) => panic!("{name} {}: {e}", key.name()),
                    }
                }
            }
        }
    }
    assert!(kernels >= 4 * limits.len(), "{name}: {kernels} kernels");
}

const RADV_STANDARD: [&str; 6] = [
    "16x16x16 f16->f16",
    "16x16x16 f16->f32",
    "16x16x16 u8->u32",
    "16x16x16 u8->i32",
    "16x16x16 i8->u32",
    "16x16x16 i8->i32",
];

#[test]
fn amd_rdna3_on_radv() {
    check_vendor(
        "RADV RDNA3",
        (&radv_rdna3(), FEATURES),
        &[radv_limits(32), radv_limits(64)],
        (&RADV_STANDARD, &[]),
    );
}

/// RDNA4 adds bf16 and fp8: offered only where the device enables their features, and then
/// planned and generated like the standard configs (the mixed E4M3 x E5M2 entries are dropped,
/// as Dawn's rules want A and B of one type).
#[test]
fn amd_rdna4_on_radv() {
    let list = radv_rdna4();
    check_vendor(
        "RADV RDNA4 (no bf16/fp8 features)",
        (&list, FEATURES),
        &[radv_limits(32)],
        (&RADV_STANDARD, &[]),
    );
    let all = FilterFeatures {
        bf16_cooperative_matrix: true,
        fp8_cooperative_matrix: true,
        ..FEATURES
    };
    check_vendor(
        "RADV RDNA4",
        (&list, all),
        &[radv_limits(32), radv_limits(64)],
        (
            &RADV_STANDARD,
            &[
                "16x16x16 f8e4m3->f32",
                "16x16x16 f8e5m2->f32",
                "16x16x16 bf16->bf16",
                "16x16x16 bf16->f32",
            ],
        ),
    );
}

#[test]
fn intel_xe_hpg_on_anv() {
    check_vendor(
        "ANV Xe-HPG",
        (&anv_xe_hpg(), FEATURES),
        &[anv_limits(8), anv_limits(16), anv_limits(32)],
        (
            &["8x8x16 f16->f16", "8x8x16 f16->f32", "8x8x32 i8->i32", "8x8x32 u8->u32"],
            &[],
        ),
    );
}

/// The subgroup size a context pins on each vendor: 32 where allowed (RDNA wave32, Intel SIMD32,
/// NVIDIA), else the largest. The rule lives in `Context::subgroup_size`; this mirrors it on the
/// limits above so a change to it is seen here.
#[test]
fn pinned_subgroup_sizes_fit_every_vendor() {
    let rule = |l: &DeviceLimits| {
        if l.min_subgroup_size <= 32 && 32 <= l.max_subgroup_size {
            32
        } else {
            l.max_subgroup_size.max(l.subgroup_size)
        }
    };
    assert_eq!(rule(&radv_limits(64)), 32);
    assert_eq!(rule(&anv_limits(16)), 32);
    let cfg = GPUSubgroupMatrixConfig {
        component_type: F16,
        result_type: F32,
        m: 8,
        n: 8,
        k: 16,
    };
    assert!(!candidate_schemes(&cfg, &anv_limits(32), 32, false).is_empty());
}
