//! Every generated kernel variant passes spirv-val; representative kernels match their golden
//! disassembly under shaders/ (regenerate with `VK_SGMAT_BLESS=1 cargo test --test kernels`).

mod common;
mod kernel_keys;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use kernel_keys::*;
use vk_sgmat::config::ComponentType::*;
use vk_sgmat::kernel::{generate, Epilogue, FixedSizes, KernelKey, Load, Probe};
use vk_sgmat::tiling::{candidate_schemes, KernelScope, Layout, TileScheme};

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
                        fixed: None,
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
                fixed: None,
            };
            let words = generate(&key).unwrap();
            common::spirv_val(&words, &key.name()).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            n += 1;
        }
    }
    assert!(n > 60, "{n}");
}

/// Workgroup-scope (VK_NV_cooperative_matrix2) kernels of the H200's tile shapes, every type
/// spirv-val knows, layout and epilogue, each also grouped and with sizes built in. Lavapipe cannot run them (it lacks workgroup scope and
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
        // each step's right operand loaded first: 256x128 (`nt`), in rows and on the grouped
        // walk, 128x128 on the grouped walk, and 128x256 on the grouped walk (`nn` in place);
        // the same 128x256 tile not transposed, in order (`nn` in place from 8192^2); last
        // 256x256 computed transposed in sixteen steps, right first (f16 results in `nt`:
        // perf/h200-28-9.txt, not yet the default).
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
            ((8, 1), (2, 8), 128, 16, 8, 0, 1, (true, true)),
            ((1, 4), (8, 2), 64, 16, 8, 0, 1, (true, true)),
            ((1, 8), (8, 2), 128, 16, 8, 0, 1, (true, true)),
            ((1, 8), (8, 2), 128, 16, 8, 0, 1, (false, false)),
            ((1, 8), (16, 2), 128, 16, 0, 0, 1, (true, true)),
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
                // And with N, K and the leading dimensions built in (odd sizes: the kernel
                // takes them as they come).
                let sizes = FixedSizes {
                    n: 4095,
                    k: 4093,
                    lda: 4096,
                    ldb: 4104,
                    ldc: 4100,
                };
                let fixed = KernelKey {
                    fixed: Some(sizes),
                    ..key
                };
                let fixed_words = generate(&fixed).unwrap();
                assert_ne!(fixed_words, generate(&key).unwrap(), "{}", fixed.name());
                common::spirv_val(&fixed_words, &fixed.name()).unwrap_or_else(|e| panic!("{}: {e}", fixed.name()));
                n += 1;
            }
        }
    }
    assert_eq!(n, 4 * 14 * 16);
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
                fixed: None,
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

/// The kernel without matrix units for every type it widens (f32; f16 and bf16, each also beside
/// an f32 operand; i8; u8), at each tile `simt_scheme` picks (H200, lavapipe, subgroup 16 and
/// 64), every layout and alpha/beta, and grouped; the float ones with each output cast and a
/// fused bias and activation, the integer ones dequantised. Keys that break its rules are typed
/// errors.
#[test]
fn simt_kernels_pass_spirv_val() {
    use vk_sgmat::kernel::{simt_config, Activation, Axis, SIMT_CONFIG};
    let simt = |t| simt_config(t).unwrap();
    let families = [
        (SIMT_CONFIG, [Load::Simt; 2]),
        (simt(F16), [Load::Widen; 2]),
        (simt(F16), [Load::Widen, Load::Simt]),
        (simt(Bf16), [Load::Simt, Load::Widen]),
        (simt(Bf16), [Load::Widen; 2]),
        (simt(I8), [Load::Widen; 2]),
        (simt(U8), [Load::Widen; 2]),
        (simt(I8), [Load::Packed; 2]),
        (simt(U8), [Load::Packed; 2]),
    ];
    let mut n = 0;
    for (sg, cpu) in [(32, false), (8, true), (16, false), (64, false)] {
        let scheme = vk_sgmat::tiling::simt_scheme(&limits(sg, 49152), sg, cpu).expect("a SIMT tile");
        for (config, loads) in families {
            let float = config.result_type == F32;
            let fused = [
                Epilogue {
                    output: Some(if float { F16 } else { F32 }),
                    bias: Some((Axis::Col, F32)),
                    activation: Activation::Gelu,
                    dequant: !float,
                    ..Epilogue::NONE
                },
                Epilogue {
                    output: Some(if float { Bf16 } else { F16 }),
                    dequant: !float,
                    ..Epilogue::NONE
                },
            ];
            let keys = every_key(config, scheme, loads).chain(fused.into_iter().flat_map(|epilogue| {
                [false, true].map(|grouped| KernelKey {
                    epilogue,
                    grouped,
                    ..every_key(config, scheme, loads).next().unwrap()
                })
            }));
            for key in keys {
                // What pipeline creation checks against the device: the tile as f32's.
                key.scheme
                    .check(&key.tile_config(), &limits(sg, 49152))
                    .unwrap_or_else(|e| panic!("{}: {e}", key.name()));
                let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
                match common::spirv_val(&words, &key.name()) {
                    Ok(()) => n += 1,
                    // Debian's spirv-tools predates SPV_KHR_bfloat16 (see validate_all); the
                    // kernel widens bf16 in integer arithmetic, so only a bf16 C declares it.
                    Err(e) if key.epilogue.output == Some(Bf16) && e.contains("BFloat16") => {}
                    Err(e) => panic!("{}: {e}", key.name()),
                }
            }
        }
    }
    assert!(n >= 4 * families.len() * EPILOGUES.len(), "validated {n}");
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
        fixed: None,
    };
    assert!(generate(&key).is_err());
    key.loads = [Load::Simt; 2];
    key.config = cfg(16, 16, 16, F16, F32);
    assert!(generate(&key).is_err());
    // Integers do not stay f32, nor f32 widen; each type keeps its own config.
    for (config, loads) in [
        (simt(I8), [Load::Simt, Load::Widen]),
        (simt(I8), [Load::Packed, Load::Widen]),
        (simt(F16), [Load::Packed; 2]),
        (SIMT_CONFIG, [Load::Widen; 2]),
        (simt(F16), [Load::Simt; 2]),
        (cfg(8, 8, 8, I8, F32), [Load::Widen; 2]),
    ] {
        key.config = config;
        key.loads = loads;
        let e = generate(&key).expect_err("refused");
        assert!(e.to_string().contains("without matrix units"), "{e}");
    }
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
            fixed: None,
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
        fixed: None,
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
