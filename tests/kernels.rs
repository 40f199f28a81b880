//! Every generated kernel variant passes spirv-val; representative kernels match their golden
//! disassembly under shaders/ (regenerate with `VK_SGMAT_BLESS=1 cargo test --test kernels`).

mod common;

use vk_sgmat::config::{ComponentType::*, GPUSubgroupMatrixConfig};
use vk_sgmat::device::DeviceLimits;
use vk_sgmat::kernel::{generate, Epilogue, KernelKey, Load, Probe};
use vk_sgmat::tiling::{candidate_schemes, KernelScope, Layout, TileScheme};

fn cfg(m: u32, n: u32, k: u32, ab: vk_sgmat::ComponentType, r: vk_sgmat::ComponentType) -> GPUSubgroupMatrixConfig {
    GPUSubgroupMatrixConfig {
        component_type: ab,
        result_type: r,
        m,
        n,
        k,
    }
}

fn limits(subgroup: u32, shared: u32) -> DeviceLimits {
    DeviceLimits {
        subgroup_size: subgroup,
        min_subgroup_size: subgroup,
        max_subgroup_size: subgroup,
        required_subgroup_size_compute: true,
        max_shared_memory: shared,
        max_workgroup_invocations: 1024,
        max_workgroup_size: [1024, 1024, 64],
        max_workgroup_count: [65535; 3],
        max_storage_buffer_range: u32::MAX,
        min_storage_buffer_offset_alignment: 16,
        max_push_constants_size: 128,
        max_memory_allocation_size: u64::MAX,
        timestamp_period: 1.0,
    }
}

fn lavapipe_configs() -> Vec<GPUSubgroupMatrixConfig> {
    vec![
        cfg(8, 8, 8, F16, F16),
        cfg(8, 8, 8, F16, F32),
        cfg(8, 8, 8, U8, U32),
        cfg(8, 8, 8, I8, I32),
    ]
}

fn h200_configs() -> Vec<GPUSubgroupMatrixConfig> {
    let mut v = Vec::new();
    for (m, n, k) in [(16, 16, 16), (16, 8, 16), (16, 8, 8)] {
        v.push(cfg(m, n, k, F16, F16));
        v.push(cfg(m, n, k, F16, F32));
    }
    for (m, n, k) in [(16, 16, 32), (16, 8, 32)] {
        v.push(cfg(m, n, k, U8, U32));
        v.push(cfg(m, n, k, I8, I32));
    }
    v.push(cfg(16, 16, 16, Bf16, F32));
    v
}

const LAYOUTS: [Layout; 2] = [Layout::RowMajor, Layout::ColMajor];
const LOADS: [[Load; 2]; 4] = [
    [Load::Native, Load::Native],
    [Load::Round, Load::Native],
    [Load::Native, Load::Round],
    [Load::Round, Load::Round],
];
const EPILOGUES: [Epilogue; 4] = [
    Epilogue {
        alpha: false,
        beta: false,
        ..Epilogue::NONE
    },
    Epilogue {
        alpha: true,
        beta: false,
        ..Epilogue::NONE
    },
    Epilogue {
        alpha: false,
        beta: true,
        ..Epilogue::NONE
    },
    Epilogue {
        alpha: true,
        beta: true,
        ..Epilogue::NONE
    },
];

/// Every key of `config` and `scheme` with `loads`: each layout of A and B, each of [`EPILOGUES`].
fn every_key(config: GPUSubgroupMatrixConfig, scheme: TileScheme, loads: [Load; 2]) -> impl Iterator<Item = KernelKey> {
    LAYOUTS.into_iter().flat_map(move |a_layout| {
        LAYOUTS.into_iter().flat_map(move |b_layout| {
            EPILOGUES.into_iter().map(move |epilogue| KernelKey {
                config,
                scheme,
                a_layout,
                b_layout,
                epilogue,
                loads,
                probe: Probe::Full,
                grouped: false,
            })
        })
    })
}

fn validate_all(configs: &[GPUSubgroupMatrixConfig], limits: &DeviceLimits, cpu: bool, all_schemes: bool) -> usize {
    let mut count = 0;
    let mut bf16_unknown = 0;
    let mut failures = Vec::new();
    for config in configs {
        let schemes = candidate_schemes(config, limits, limits.subgroup_size, cpu);
        assert!(!schemes.is_empty(), "no scheme for {config}");
        let schemes = if all_schemes { schemes } else { schemes[..1].to_vec() };
        for key in schemes
            .into_iter()
            .flat_map(|scheme| every_key(*config, scheme, Default::default()))
        {
            let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            match common::spirv_val(&words, &key.name()) {
                Ok(()) => {}
                // Debian trixie's spirv-tools (2025.1, SDK 1.4.309) predates
                // SPV_KHR_bfloat16 and stops at its capability. bf16 kernels share
                // every other instruction with the f16 ones validated here, and are
                // checked on hardware by `vk-sgmat check`. A newer validator must
                // accept them.
                Err(e) if config.component_type == Bf16 && e.contains("Invalid capability operand: 5116") => {
                    bf16_unknown += 1;
                }
                Err(e) => failures.push(format!(
                    "{}:
{e}",
                    key.name()
                )),
            }
            count += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} kernels fail spirv-val:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if bf16_unknown > 0 {
        eprintln!("note: {bf16_unknown} bf16 kernels not validated: this spirv-val predates SPV_KHR_bfloat16");
    }
    count
}

#[test]
fn lavapipe_kernels_pass_spirv_val() {
    let n = validate_all(&lavapipe_configs(), &limits(8, 65536), true, true);
    assert!(n >= 4 * 16, "validated {n}");
}

#[test]
fn h200_kernels_pass_spirv_val() {
    let n = validate_all(&h200_configs(), &limits(32, 49152), false, false);
    assert_eq!(n, 11 * 16);
}

#[test]
fn every_h200_scheme_passes_spirv_val() {
    // All candidate schemes of two representative configs, plain epilogue, every layout.
    for config in [cfg(16, 16, 16, F16, F32), cfg(16, 8, 32, I8, I32)] {
        for scheme in candidate_schemes(&config, &limits(32, 49152), 32, false) {
            for a_layout in LAYOUTS {
                for b_layout in LAYOUTS {
                    let key = KernelKey {
                        config,
                        scheme,
                        a_layout,
                        b_layout,
                        epilogue: Epilogue::default(),
                        loads: Default::default(),
                        probe: Probe::Full,
                        grouped: false,
                    };
                    let words = generate(&key).unwrap();
                    common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
                }
            }
        }
    }
}

#[test]
fn double_buffered_and_tuning_kernels_pass_spirv_val() {
    let l = limits(32, 49152);
    let mut n = 0;
    for config in [
        cfg(16, 16, 16, F16, F32),
        cfg(16, 8, 32, I8, I32),
        cfg(16, 8, 8, F16, F16),
    ] {
        for scheme in vk_sgmat::tiling::tuning_candidates(&config, &l, 32, false) {
            let key = KernelKey {
                config,
                scheme,
                a_layout: Layout::ColMajor,
                b_layout: Layout::RowMajor,
                epilogue: Epilogue {
                    alpha: true,
                    beta: true,
                    ..Default::default()
                },
                // f16 configs take turns at every way of loading A and B (f32 stored and rounded).
                loads: if config.component_type == F16 && scheme.scope() == KernelScope::Subgroup {
                    LOADS[n % LOADS.len()]
                } else {
                    Default::default()
                },
                probe: Probe::Full,
                grouped: false,
            };
            let words = generate(&key).unwrap();
            common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            n += 1;
        }
    }
    assert!(n > 60, "{n}");
}

/// Workgroup-scope (VK_NV_cooperative_matrix2) kernels of the H200's tile shapes, every type
/// spirv-val knows, layout and epilogue, each also grouped. Lavapipe cannot run them (it lacks workgroup scope and
/// tensor addressing): `vk-sgmat check` covers them on the H200.
#[test]
fn workgroup_scope_kernels_pass_spirv_val() {
    let mut n = 0;
    let configs = [
        cfg(16, 16, 16, F16, F32),
        cfg(16, 16, 16, F16, F16),
        cfg(16, 16, 32, I8, I32),
        cfg(16, 16, 32, U8, U32),
    ];
    for config in configs {
        let es = config.component_type.size_bytes();
        // 128x256 tiles, 256 invocations, 128-byte K steps, grouped raster; 128x128 with 128
        // invocations and four 64-byte K steps per iteration, every load first (the H200's
        // default); 128x256 with eight 128-byte steps, each loaded one step ahead, held as two
        // 128x128 accumulators.
        // ggml's loop (each step loaded right before its multiply, as an inner loop the driver
        // unrolls), alone and with two accumulators.
        // The last three compute their tiles transposed (B^T A^T): 256x128 (a 128x256
        // accumulator), 128x128 loaded all first, and the 128x128 default (eight 64-byte steps
        // each loaded before its multiply, groups of 8 tile rows). Then the sixteen-step leads,
        // each step's right operand loaded first: 256x128 (`nt`) and 128x128 on the grouped walk.
        for ((sg_m, sg_n), (fr_m, fr_n), k_bytes, stages, raster_group, ahead, parts, (transposed, right_first)) in [
            ((1, 8), (8, 2), 128, 1, 8, 0, 1, (false, false)),
            ((1, 4), (8, 2), 64, 4, 0, 3, 1, (false, false)),
            ((1, 8), (8, 2), 128, 8, 0, 1, 2, (false, false)),
            ((1, 8), (8, 2), 128, 8, 0, 0, 1, (false, false)),
            ((1, 8), (8, 2), 128, 8, 8, 0, 2, (false, false)),
            ((8, 1), (2, 8), 128, 8, 0, 0, 1, (true, false)),
            ((1, 4), (8, 2), 64, 4, 0, 3, 1, (true, false)),
            ((1, 4), (8, 2), 64, 8, 8, 0, 1, (true, false)),
            ((8, 1), (2, 8), 128, 16, 0, 0, 1, (true, true)),
            ((1, 4), (8, 2), 64, 16, 8, 0, 1, (true, true)),
        ] {
            let scheme = TileScheme::workgroup_for_limits(
                &config,
                &limits(32, 49152),
                32,
                (sg_m, sg_n),
                (fr_m, fr_n),
                (k_bytes / es, stages),
            )
            .and_then(|s| s.with_raster_group(raster_group))
            .and_then(|s| s.with_lookahead(ahead))
            .and_then(|s| s.with_n_parts(parts, &config, &limits(32, 49152)))
            .and_then(|s| s.with_c_transposed(transposed, &config, &limits(32, 49152)))
            .and_then(|s| s.with_right_first(right_first))
            .unwrap();
            assert_eq!(scheme.scope(), KernelScope::Workgroup);
            for key in every_key(config, scheme, Default::default()) {
                let words = generate(&key).unwrap();
                if right_first {
                    // The same loads in the other order: a different kernel.
                    let left_first = KernelKey {
                        scheme: scheme.with_right_first(false).unwrap(),
                        ..key
                    };
                    assert_ne!(words, generate(&left_first).unwrap(), "{}", key.name());
                }
                common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
                // Only the step-by-step loop of several steps hints an unroll.
                let text = common::spirv_dis(&words);
                let hinted = text.contains("Unroll");
                assert_eq!(hinted, ahead == 0 && stages > 1, "{}", key.name());
                // A transposed tile is stored through the transposing view.
                let store = text
                    .lines()
                    .find(|l| l.contains("OpCooperativeMatrixStoreTensorNV"))
                    .unwrap();
                assert_eq!(store.contains("TensorView"), transposed, "{}: {store}", key.name());
                // The same kernel for a grouped GEMM in one dispatch (its tile table at binding 3).
                let grouped = KernelKey { grouped: true, ..key };
                let words = generate(&grouped).unwrap();
                common::spirv_val(&words, &grouped.name()).unwrap_or_else(|e| panic!("{}: {e}", grouped.name()));
                n += 1;
            }
        }
    }
    assert_eq!(n, 4 * 10 * 16);
}

#[test]
fn probe_kernels_pass_spirv_val() {
    let l = limits(32, 49152);
    let config = cfg(16, 16, 16, F16, F32);
    for stages in [1, 2] {
        let scheme = candidate_schemes(&config, &l, 32, false)[0]
            .with_stages(stages, &config, &l)
            .unwrap();
        for probe in Probe::PARTS.into_iter().chain([Probe::SharedAtLeast(40960)]) {
            let key = KernelKey {
                config,
                scheme,
                a_layout: Layout::RowMajor,
                b_layout: Layout::RowMajor,
                epilogue: Epilogue::default(),
                loads: Default::default(),
                probe,
                grouped: false,
            };
            let words = generate(&key).unwrap();
            common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
        }
    }
}

#[test]
fn peak_kernels_pass_spirv_val() {
    let mut configs = lavapipe_configs();
    configs.extend(h200_configs().into_iter().filter(|c| c.component_type != Bf16));
    for config in configs {
        let sg = if config.m == 8 { 8 } else { 32 };
        let words = vk_sgmat::kernel::generate_peak(&config, sg).unwrap();
        common::spirv_val(&words, &format!("peak_{}", config.to_string().replace(['>', ' '], "_")))
            .unwrap_or_else(|e| panic!("peak {config}: {e}"));
    }
}

#[test]
fn reduce_kernels_pass_spirv_val() {
    for result_type in [F16, F32, I32, U32] {
        for epilogue in EPILOGUES {
            let words = vk_sgmat::kernel::generate_reduce(result_type, epilogue).unwrap();
            let name = format!("reduce_{result_type}_{}{}", epilogue.alpha as u8, epilogue.beta as u8);
            common::spirv_val(&words, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

/// The f32 kernel without matrix units, at each tile `simt_scheme` picks (H200, lavapipe, subgroup
/// 16 and 64), every layout and epilogue; keys that break its rules are typed errors.
#[test]
fn simt_kernels_pass_spirv_val() {
    use vk_sgmat::kernel::SIMT_CONFIG;
    let mut n = 0;
    for (sg, cpu) in [(32, false), (8, true), (16, false), (64, false)] {
        let scheme = vk_sgmat::tiling::simt_scheme(&limits(sg, 49152), sg, cpu).expect("a SIMT tile");
        for key in every_key(SIMT_CONFIG, scheme, [Load::Simt; 2]) {
            let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            n += 1;
        }
    }
    assert_eq!(n, 4 * 4 * EPILOGUES.len());
    // One SIMT operand, or a coop config under SIMT loads: refused before any code is generated.
    let scheme = vk_sgmat::tiling::simt_scheme(&limits(32, 49152), 32, false).unwrap();
    let mut key = KernelKey {
        config: SIMT_CONFIG,
        scheme,
        a_layout: Layout::RowMajor,
        b_layout: Layout::RowMajor,
        epilogue: Epilogue::default(),
        loads: [Load::Simt, Load::Native],
        probe: Probe::Full,
        grouped: false,
    };
    assert!(generate(&key).is_err());
    key.loads = [Load::Simt; 2];
    key.config = cfg(16, 16, 16, F16, F32);
    assert!(generate(&key).is_err());
}

/// Fused epilogues on the subgroup-scope kernel (H200 and lavapipe configs, every layout), the
/// split and the SIMT kernel: every bias type and axis, every activation, dequantisation and
/// output casts pass spirv-val; combinations the generator cannot do are refused.
#[test]
fn fused_kernels_pass_spirv_val() {
    use vk_sgmat::kernel::{Activation, Axis, SIMT_CONFIG};
    let h200 = limits(32, 49152);
    let lav = limits(8, 65536);
    let fused = |bias, activation, dequant, output, beta| Epilogue {
        alpha: true,
        beta,
        bias,
        activation,
        dequant,
        output,
    };
    let mut n = 0;
    // Every key also grouped (the subgroup-scope and SIMT kernels read a column vector at the
    // tile's group).
    let mut check = |key: KernelKey| {
        for key in [key, KernelKey { grouped: true, ..key }] {
            let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
        }
        n += 1;
    };
    for (config, l, cpu) in [
        (cfg(16, 16, 16, F16, F32), &h200, false),
        (cfg(8, 8, 8, F16, F32), &lav, true),
        (cfg(8, 8, 8, F16, F16), &lav, true),
    ] {
        let scheme = candidate_schemes(&config, l, l.subgroup_size, cpu)
            .into_iter()
            .find(|s| s.scope() == KernelScope::Subgroup)
            .unwrap();
        for (i, activation) in Activation::ALL.into_iter().enumerate() {
            for (j, bias_t) in [F32, F16, Bf16].into_iter().enumerate() {
                let axis = if (i + j) % 2 == 0 { Axis::Row } else { Axis::Col };
                let output = match (config.result_type, j) {
                    (F32, 0) => Some(F16),
                    (F32, 1) => Some(Bf16),
                    _ => None,
                };
                check(KernelKey {
                    config,
                    scheme,
                    a_layout: LAYOUTS[i % 2],
                    b_layout: LAYOUTS[j % 2],
                    epilogue: fused(Some((axis, bias_t)), activation, false, output, j != 1),
                    loads: Default::default(),
                    probe: Probe::Full,
                    grouped: false,
                });
            }
        }
    }
    // Dequantised i8 products stored as f16, f32 and bf16; the SIMT kernel with an f16 result.
    let i8cfg = cfg(8, 8, 8, I8, I32);
    let scheme = candidate_schemes(&i8cfg, &lav, 8, true)[0];
    for output in [F16, F32, Bf16] {
        check(KernelKey {
            config: i8cfg,
            scheme,
            a_layout: Layout::RowMajor,
            b_layout: Layout::ColMajor,
            epilogue: fused(Some((Axis::Col, F32)), Activation::Silu, true, Some(output), true),
            loads: Default::default(),
            probe: Probe::Full,
            grouped: false,
        });
    }
    let simt = vk_sgmat::tiling::simt_scheme(&h200, 32, false).unwrap();
    check(KernelKey {
        config: SIMT_CONFIG,
        scheme: simt,
        a_layout: Layout::ColMajor,
        b_layout: Layout::RowMajor,
        epilogue: fused(Some((Axis::Row, F16)), Activation::GeluErf, false, Some(F16), true),
        loads: [Load::Simt; 2],
        probe: Probe::Full,
        grouped: false,
    });
    assert_eq!(n, 3 * 5 * 3 + 3 + 1);
    // Refused: dequantising floats, an f16 accumulator cast to f32, an i32 product with a bias
    // but no scales, and a workgroup-scope scheme.
    let key = |config: GPUSubgroupMatrixConfig, epilogue| KernelKey {
        config,
        scheme: candidate_schemes(&config, &lav, 8, true)[0],
        a_layout: Layout::RowMajor,
        b_layout: Layout::RowMajor,
        epilogue,
        loads: Default::default(),
        probe: Probe::Full,
        grouped: false,
    };
    for (config, e) in [
        (cfg(8, 8, 8, F16, F32), fused(None, Activation::None, true, None, false)),
        (
            cfg(8, 8, 8, F16, F16),
            fused(None, Activation::None, false, Some(F32), false),
        ),
        (
            i8cfg,
            fused(Some((Axis::Row, F32)), Activation::None, false, None, false),
        ),
    ] {
        assert!(matches!(
            generate(&key(config, e)),
            Err(vk_sgmat::Error::Unsupported(_))
        ));
    }
    // The workgroup-scope kernel: float products stored as f32 or f16, every activation and
    // bias, with and without beta, both tile shapes of its spirv-val test; a bf16 result and a
    // dequantised product are refused there (subgroup-scope schemes take them).
    let h200_f32 = cfg(16, 16, 16, F16, F32);
    let wg = |config: &GPUSubgroupMatrixConfig, sg, fr, k, raster| {
        TileScheme::workgroup_for_limits(config, &h200, 32, sg, fr, k)
            .and_then(|s| s.with_raster_group(raster))
            .unwrap()
    };
    let wg_schemes = [
        wg(&h200_f32, (1, 4), (8, 2), (32, 4), 0),
        wg(&h200_f32, (1, 8), (8, 2), (64, 1), 8),
    ];
    let mut n_wg = 0;
    for (i, activation) in Activation::ALL.into_iter().enumerate() {
        for (j, bias_t) in [F32, F16, Bf16].into_iter().enumerate() {
            let key = KernelKey {
                config: h200_f32,
                scheme: wg_schemes[(i + j) % 2],
                a_layout: LAYOUTS[i % 2],
                b_layout: LAYOUTS[j % 2],
                epilogue: fused(
                    Some((if i % 2 == 0 { Axis::Row } else { Axis::Col }, bias_t)),
                    activation,
                    false,
                    [Some(F16), None, Some(F32)][j],
                    (i + j) % 2 == 1,
                ),
                loads: Default::default(),
                probe: Probe::Full,
                grouped: false,
            };
            // Each also grouped: a column vector read at the tile's group (its table at 3).
            for key in [key, KernelKey { grouped: true, ..key }] {
                let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
                common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
                n_wg += 1;
            }
        }
    }
    assert_eq!(n_wg, 5 * 3 * 2);
    let i8wg = cfg(16, 16, 32, I8, I32);
    for (config, e) in [
        (h200_f32, fused(None, Activation::Relu, false, Some(Bf16), false)),
        (i8wg, fused(None, Activation::None, true, Some(F16), false)),
    ] {
        let scheme = wg(
            &config,
            (1, 4),
            (8, 2),
            (4 * 16 / config.component_type.size_bytes(), 1),
            0,
        );
        let k = KernelKey {
            scheme,
            ..key(config, e)
        };
        let err = generate(&k).unwrap_err();
        assert!(matches!(err, vk_sgmat::Error::InvalidTileScheme(_)), "{err}");
        assert!(err.to_string().contains("subgroup-scope"), "{err}");
    }
}

/// The accurate split (each f32 operand as two f16 parts) at every candidate scheme of an H200 and
/// a lavapipe f16 -> f32 config, every layout, with and without alpha/beta; its largest-magnitude
/// pass; and the refusal of a split on any other config.
#[test]
fn split_kernels_pass_spirv_val() {
    let mut n = 0;
    for (config, l, sg, cpu) in [
        (cfg(16, 16, 16, F16, F32), limits(32, 49152), 32, false),
        (cfg(8, 8, 8, F16, F32), limits(8, 32768), 8, true),
    ] {
        for (i, scheme) in candidate_schemes(&config, &l, sg, cpu).into_iter().enumerate() {
            let key = KernelKey {
                config,
                scheme,
                a_layout: LAYOUTS[i % 2],
                b_layout: LAYOUTS[i / 2 % 2],
                epilogue: EPILOGUES[i % EPILOGUES.len()],
                loads: [Load::Split; 2],
                probe: Probe::Full,
                grouped: false,
            };
            let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            n += 1;
        }
    }
    assert!(n >= 2, "{n}");
    let words = vk_sgmat::kernel::generate_absmax().unwrap();
    common::spirv_val(&words, "absmax").unwrap_or_else(|e| panic!("absmax: {e}"));
    // The pass that builds a grouped GEMM's tile table from counts on the device.
    let words = vk_sgmat::kernel::generate_group_table().unwrap();
    common::spirv_val(&words, "group_table").unwrap_or_else(|e| panic!("group table: {e}"));
    let l = limits(32, 49152);
    let f16_out = cfg(16, 16, 16, F16, F16);
    let key = KernelKey {
        config: f16_out,
        scheme: candidate_schemes(&f16_out, &l, 32, false)[0],
        a_layout: Layout::RowMajor,
        b_layout: Layout::RowMajor,
        epilogue: Epilogue::default(),
        loads: [Load::Split; 2],
        probe: Probe::Full,
        grouped: false,
    };
    assert!(generate(&key).is_err(), "a split needs f32 accumulators");
}

/// The passes that convert f32 operands first (rounded to f16 and bf16, split into planes) and
/// the workgroup-scope kernel over split planes, every layout, computed directly and
/// transposed, with and without fused terms; a planes key off its rules is a typed error.
#[test]
fn converting_passes_and_planes_kernels_pass_spirv_val() {
    // The sysroot's spirv-val predates SPV_KHR_bfloat16: bf16 is generated, not validated.
    let words = vk_sgmat::kernel::generate_narrow(F16).unwrap();
    common::spirv_val(&words, "narrow_f16").unwrap_or_else(|e| panic!("narrow f16: {e}"));
    assert!(vk_sgmat::kernel::generate_narrow(Bf16).is_ok());
    assert!(vk_sgmat::kernel::generate_narrow(F32).is_err());
    for transposed in [false, true] {
        let words = vk_sgmat::kernel::generate_split_planes(transposed).unwrap();
        common::spirv_val(&words, "split_planes").unwrap_or_else(|e| panic!("split planes {transposed}: {e}"));
    }
    // The transposing copies: 16-bit and 8-bit as they are, f32 rounded to f16 on the way.
    for (rounds_to, bytes, name) in [
        (None, 2, "transpose_16"),
        (None, 1, "transpose_8"),
        (Some(F16), 2, "transpose_f32_f16"),
    ] {
        let words = vk_sgmat::kernel::generate_transpose(rounds_to, bytes).unwrap();
        common::spirv_val(&words, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert!(vk_sgmat::kernel::generate_transpose(Some(Bf16), 2).is_ok());
    // Tiles: 256 source rows by 64 elements of 16-bit ones, 512 by 128 of bytes; no size panics.
    use vk_sgmat::kernel::transpose::tile;
    assert_eq!((tile(2), tile(1)), ((256, 64), (512, 128)));
    assert_eq!((tile(0), tile(4)), (tile(2), tile(2)));
    for (rounds_to, bytes) in [(Some(F32), 2), (Some(F16), 1), (None, 4), (None, 0)] {
        let e = vk_sgmat::kernel::generate_transpose(rounds_to, bytes).unwrap_err();
        assert!(
            matches!(e, vk_sgmat::Error::Unsupported(_)),
            "{rounds_to:?} {bytes}: {e}"
        );
    }
    let config = cfg(16, 16, 16, F16, F32);
    let l = limits(32, 49152);
    let mut n = 0;
    for transposed in [false, true] {
        let scheme = TileScheme::workgroup_for_limits(&config, &l, 32, (8, 1), (1, 8), (32, 8))
            .and_then(|s| s.with_lookahead(0))
            .and_then(|s| s.with_c_transposed(transposed, &config, &l))
            .unwrap();
        for key in every_key(config, scheme, [Load::Planes; 2]) {
            let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            // Three products per step, summed from zero and added to the accumulator.
            let text = common::spirv_dis(&words);
            assert!(
                text.matches("OpCooperativeMatrixMulAddKHR").count() >= 3,
                "{}",
                key.name()
            );
            assert!(text.contains("OpFAdd"), "{}", key.name());
            n += 1;
        }
    }
    assert_eq!(n, 2 * 4 * EPILOGUES.len());
    let subgroup = candidate_schemes(&config, &l, 32, false)[0];
    let key = KernelKey {
        config,
        scheme: subgroup,
        a_layout: Layout::RowMajor,
        b_layout: Layout::RowMajor,
        epilogue: Epilogue::default(),
        loads: [Load::Planes; 2],
        probe: Probe::Full,
        grouped: false,
    };
    assert!(matches!(generate(&key), Err(vk_sgmat::Error::InvalidTileScheme(_))));
    let key = KernelKey {
        config: cfg(16, 16, 16, F16, F16),
        loads: [Load::Planes, Load::Native],
        ..key
    };
    assert!(generate(&key).is_err());
}

/// Representative kernels reviewed as disassembly: a change to the generator shows as a diff.
#[test]
fn golden_disassembly() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let bless = std::env::var("VK_SGMAT_BLESS").is_ok_and(|v| v == "1");
    let lav = limits(8, 65536);
    let h200 = limits(32, 49152);
    let cases = [
        (
            cfg(8, 8, 8, F16, F32),
            &lav,
            true,
            Layout::RowMajor,
            Layout::RowMajor,
            Epilogue::default(),
        ),
        (
            cfg(8, 8, 8, I8, I32),
            &lav,
            true,
            Layout::ColMajor,
            Layout::ColMajor,
            Epilogue {
                alpha: true,
                beta: true,
                ..Default::default()
            },
        ),
        (
            cfg(16, 16, 16, F16, F32),
            &h200,
            false,
            Layout::RowMajor,
            Layout::ColMajor,
            Epilogue::default(),
        ),
    ];
    let mut keys: Vec<KernelKey> = cases
        .into_iter()
        .map(|(config, l, cpu, a_layout, b_layout, epilogue)| KernelKey {
            config,
            scheme: candidate_schemes(&config, l, l.subgroup_size, cpu)[0],
            a_layout,
            b_layout,
            epilogue,
            loads: Default::default(),
            probe: Probe::Full,
            grouped: false,
        })
        .collect();
    // The H200's workgroup-scope default for f16 -> f32, with a transposed A and beta.
    keys.push(KernelKey {
        config: cfg(16, 16, 16, F16, F32),
        scheme: TileScheme::workgroup_for_limits(
            &cfg(16, 16, 16, F16, F32),
            &limits(32, 49152),
            32,
            (1, 4),
            (8, 2),
            (32, 4),
        )
        .unwrap(),
        a_layout: Layout::ColMajor,
        b_layout: Layout::RowMajor,
        epilogue: Epilogue {
            alpha: false,
            beta: true,
            ..Default::default()
        },
        loads: Default::default(),
        probe: Probe::Full,
        grouped: false,
    });
    // A fused epilogue: f16 -> f32 products, a column bias, GELU, stored as f16.
    keys.push(KernelKey {
        epilogue: Epilogue {
            bias: Some((vk_sgmat::kernel::Axis::Col, F32)),
            activation: vk_sgmat::kernel::Activation::Gelu,
            output: Some(F16),
            ..Epilogue::NONE
        },
        ..keys[0]
    });
    // The same on the workgroup-scope default, with beta (C read per element).
    keys.push(KernelKey {
        epilogue: Epilogue {
            beta: true,
            ..keys[4].epilogue
        },
        ..keys[3]
    });
    // The H200's f16 -> f32 default: eight steps per iteration in an inner loop the driver
    // unrolls, the tile computed transposed (B^T A^T, stored through a transposing view), `nt`.
    let (f16_f32, h200_limits) = (cfg(16, 16, 16, F16, F32), limits(32, 49152));
    keys.push(KernelKey {
        scheme: keys[3]
            .scheme
            .with_stages(8, &f16_f32, &h200_limits)
            .and_then(|s| s.with_lookahead(0))
            .and_then(|s| s.with_c_transposed(true, &f16_f32, &h200_limits))
            .unwrap(),
        a_layout: Layout::RowMajor,
        b_layout: Layout::ColMajor,
        epilogue: Epilogue::default(),
        ..keys[3]
    });
    // The fused epilogue with beta on that scheme: the per-element function swaps row and
    // column back.
    keys.push(KernelKey {
        epilogue: keys[5].epilogue,
        ..keys[6]
    });
    let mut mismatches = Vec::new();
    for key in keys {
        let text = common::spirv_dis(&generate(&key).unwrap());
        let path = dir.join(format!("{}.spvasm", key.name()));
        if bless {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        match std::fs::read_to_string(&path) {
            Ok(golden) if golden == text => {}
            Ok(_) => mismatches.push(format!("{} differs from the generator's output", path.display())),
            Err(e) => mismatches.push(format!("{}: {e}", path.display())),
        }
    }
    assert!(
        mismatches.is_empty(),
        "{}\nIf the change is intended, regenerate with: VK_SGMAT_BLESS=1 cargo test --test kernels golden",
        mismatches.join("\n")
    );
}
