//! Fused epilogues, the accurate split and the converting passes: every generated variant
//! passes spirv-val, and keys the generator cannot build are typed errors.

mod common;
mod kernel_keys;
#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;

use kernel_keys::{cfg, every_key, limits, EPILOGUES, LAYOUTS};
use vk_sgmat::config::{ComponentType::*, GPUSubgroupMatrixConfig};
use vk_sgmat::kernel::{generate, Epilogue, KernelKey, Load, Probe};
use vk_sgmat::tiling::{candidate_schemes, KernelScope, Layout, TileScheme};

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
                    fixed: None,
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
            fixed: None,
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
        fixed: None,
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
        fixed: None,
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
                fixed: None,
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
                fixed: None,
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
        fixed: None,
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
        fixed: None,
    };
    assert!(matches!(generate(&key), Err(vk_sgmat::Error::InvalidTileScheme(_))));
    let key = KernelKey {
        config: cfg(16, 16, 16, F16, F16),
        loads: [Load::Planes, Load::Native],
        ..key
    };
    assert!(generate(&key).is_err());
}
