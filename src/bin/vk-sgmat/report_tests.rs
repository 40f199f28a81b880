//! Tests of the rendering in report.rs, without a device.

use super::*;

fn check(passed: bool) -> Check {
    Check {
        rel_error: 1e-7,
        tolerance: 2e-6,
        mismatches: 0,
        compared: 10,
        first_bad: None,
        passed,
    }
}

#[test]
fn gemm_report_text() {
    let r = GemmReport {
        device: "GPU".into(),
        driver: "drv 1".into(),
        m: 5,
        n: 6,
        k: 7,
        types: "f16->f32".into(),
        layout: "nt".into(),
        config: "16x16x16 f16->f32".into(),
        scheme: "sg2x4_fr4x2_k32_s32".into(),
        tile: "128x128x32, 256 invocations".into(),
        passes: 1,
        converted_first: 2,
        relaid: 1,
        alpha: 1.0,
        beta: 0.0,
        seed: 9,
        check: check(true),
        rows_checked: 5,
        runs: 3,
        median_ms: 0.5,
        tflops: 1.25,
        first_call_ms: 3.0,
        self_test: (2, 1.5, 0.01),
        compiled: vk_sgmat::CompileReport {
            from_helper: 3,
            from_cache: 4,
            helpers_started: 2,
            failures: 1,
            last_failure: Some("compile helper /x failed".into()),
            compiled_here: 2,
            compile_time: std::time::Duration::from_millis(2500),
            longest_compile: std::time::Duration::from_millis(1800),
        },
        pieces: 1,
    };
    let t = render_gemm(&r);
    assert!(t.contains("gemm 5x6x7 f16->f32 layout nt"), "{t}");
    assert!(t.contains("all 5 rows"), "{t}");
    assert!(t.contains(": PASS"), "{t}");
    assert!(t.contains("1.25 TFLOP/s"), "{t}");
    assert!(
        t.contains("driver self-test: 2 kernel families tested in 1.50 ms; verdicts read in 0.010 ms"),
        "{t}"
    );
    assert!(
        t.contains("pipelines: 3 compiled by helper processes (2 started), 4 taken from the pipeline cache"),
        "{t}"
    );
    assert!(
        t.contains("pipelines: 2 compiled in this process, 2500 ms of creation in all, the longest 1800 ms"),
        "{t}"
    );
    assert!(
        t.contains("pipelines: a helper failed, compiled in this process since: compile helper /x failed"),
        "{t}"
    );
    assert!(
        t.contains("1 pass after 2 f32 operands converted first, 1 operand copied transposed"),
        "{t}"
    );
    let bad = GemmReport {
        check: Check {
            first_bad: Some((1, 2, 3.0, 4.0)),
            ..check(false)
        },
        ..r
    };
    let t = render_gemm(&bad);
    assert!(t.contains("FAIL") && t.contains("C[1][2] = 3"), "{t}");
}

#[test]
fn check_table_counts() {
    let row = |passed, tolerance| CheckRow {
        config: "8x8x8 i8->i32".into(),
        shape: (1, 2, 3),
        layout: "nn".into(),
        alpha: 1.0,
        beta: 0.0,
        rel_error: 0.0,
        tolerance,
        mismatches: if passed { 0 } else { 4 },
        passed,
        error: None,
    };
    let t = render_check("dev", &[row(true, 0.0), row(false, 0.0)]);
    assert!(t.contains("1 passed, 1 failed (1 configs)"), "{t}");
    assert!(t.contains("4 diff") && t.contains("exact"), "{t}");
}

fn bench_rows() -> Vec<BenchRow> {
    [256usize, 512]
        .into_iter()
        .map(|s| BenchRow {
            types: "f16:f32".into(),
            layout: "nn".into(),
            peers: vec![PeerFigure {
                peer: "ggml-vulkan".into(),
                tflops: 200.0,
                ratio: 100.0 * s as f64 / 512.0 / 200.0,
            }],
            config: "16x16x16 f16->f32".into(),
            m: s,
            n: s,
            k: s,
            median_ms: 1.0,
            tflops: 100.0 * s as f64 / 512.0,
            cublas_tflops: Some(400.0),
            ratio: Some(s as f64 / 2048.0),
            peak_tflops: 600.0,
            peak_fraction: s as f64 / 3072.0,
            kernel: format!("wg_t128_fr4x4_k32_u2_ct x{}", s / 256),
        })
        .collect()
}

/// The H200's f16 -> f32 and f16 -> f16 figures of docs/perf/JOURNAL.md's v3 bench, with the
/// cuBLAS figures of the same run where recorded.
fn chart_rows() -> Vec<BenchRow> {
    let f32_rows = [
        (256, 4.6, 12.0),
        (512, 22.1, 60.0),
        (1024, 100.9, 119.0),
        (2048, 228.7, 449.8),
        (4096, 258.0, 624.0),
        (8192, 264.0, 644.4),
    ];
    let f16_rows = [
        (256, 4.4, 12.0),
        (512, 21.0, 60.0),
        (1024, 96.0, 119.0),
        (2048, 230.0, 449.8),
        (4096, 315.0, 624.0),
        (8192, 340.0, 644.4),
    ];
    let row = |types: &str, (s, t, c): (usize, f64, f64)| BenchRow {
        types: types.into(),
        layout: "nn".into(),
        peers: Vec::new(),
        config: "16x16x16".into(),
        m: s,
        n: s,
        k: s,
        median_ms: 1.0,
        tflops: t,
        cublas_tflops: Some(c),
        ratio: Some(t / c),
        peak_tflops: 623.0,
        peak_fraction: t / 623.0,
        kernel: "wg_t128_fr8x8_k32_u8_a0_ct".into(),
    };
    f32_rows
        .into_iter()
        .map(|r| row("f16:f32", r))
        .chain(f16_rows.into_iter().map(|r| row("f16:f16", r)))
        .collect()
}

#[test]
fn bench_table_and_chart() {
    let rows = bench_rows();
    let t = render_bench("GPU", false, &rows);
    assert!(
        t.contains("512x512x512") && t.contains("400.0") && t.contains("0.25"),
        "{t}"
    );
    // Each row names its kernel, and split-K's dispatch count.
    assert!(t.lines().last().unwrap().ends_with("wg_t128_fr4x4_k32_u2_ct x2"), "{t}");
    let svg = crate::chart::render_svg("GPU <1>", &chart_rows()).unwrap();
    if let Ok(path) = std::env::var("VK_SGMAT_CHART_OUT") {
        std::fs::write(path, &svg).unwrap(); // to look at the picture
    }
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
    assert!(svg.contains("GPU &lt;1&gt;") && svg.contains("f16:f32 cuBLAS") && svg.contains("peak"));
    // Log2 axis: the powers of two are the labels.
    assert!(svg.contains("\n512\n") && svg.contains("\n4096\n"), "{svg}");
    assert!(
        svg.contains("\n600\n") && !svg.contains("600.0"),
        "whole-number ticks: {svg}"
    );
}

#[test]
fn peers_get_a_column_and_a_ratio_each() {
    let text = "ggml-vulkan f16 ... (not JSON, skipped)\n\
        {\"peer\": \"ggml-vulkan\", \"types\": \"f16:f32\", \"m\": 512, \"n\": 512, \"k\": 512, \"tflops\": 150.0}\n\
        {\"peer\": \"ggml-vulkan\", \"types\": \"f16:f32\", \"m\": 512, \"n\": 512, \"k\": 512, \"tflops\": 200.0, \"layout\": \"nt\"}\n";
    let peers = read_peers(text).unwrap();
    let f = peers_for(&peers, "f16:f32", (512, 512, 512), 100.0);
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].tflops, f[0].ratio), (200.0, 0.5), "the peer's fastest row");
    assert!(peers_for(&peers, "f16:f16", (512, 512, 512), 1.0).is_empty());
    let t = render_bench("GPU", false, &bench_rows());
    assert!(t.contains("ggml-vulkan") && t.contains("0.50"), "{t}");
}

#[test]
fn cublas_lines_match_by_types_and_shape() {
    let text = "noise\n{\"types\": \"f16:f32\", \"m\": 8, \"n\": 8, \"k\": 8, \"median_ms\": 1.0, \"tflops\": 5.0}\n";
    let rows = read_cublas(text).unwrap();
    assert_eq!(cublas_for(&rows, "f16:f32", (8, 8, 8)), Some(5.0));
    assert_eq!(cublas_for(&rows, "f16:f16", (8, 8, 8)), Some(5.0));
    assert_eq!(cublas_for(&rows, "i8:i32", (8, 8, 8)), None);
    // An f16:f16 row of its own wins over the f16:f32 one (which may have f32 output).
    let both = format!("{text}{{\"types\": \"f16:f16\", \"m\": 8, \"n\": 8, \"k\": 8, \"tflops\": 7.0}}\n");
    let rows = read_cublas(&both).unwrap();
    assert_eq!(cublas_for(&rows, "f16:f16", (8, 8, 8)), Some(7.0));
    assert_eq!(cublas_for(&rows, "f16:f32", (8, 8, 8)), Some(5.0));
    assert!(read_cublas("{not json").is_err());
}

/// A device as lavapipe reports it, built by hand.
fn lavapipe_info(missing_full_subgroups: bool) -> DeviceInfo {
    use vk_sgmat::config::{
        filter_configs, CooperativeMatrix2, FilterFeatures, FlexibleDimensions, MatrixScope, RawComponent,
        RawMatrixProperty,
    };
    use vk_sgmat::device::{evaluate_requirements, DeviceFeatures, DeviceKind, DeviceLimits};
    use vk_sgmat::ComponentType::*;
    let prop = |ab, cr| RawMatrixProperty {
        m: 8,
        n: 8,
        k: 8,
        a_type: RawComponent::Known(ab),
        b_type: RawComponent::Known(ab),
        c_type: RawComponent::Known(cr),
        result_type: RawComponent::Known(cr),
        saturating_accumulation: false,
        scope: MatrixScope::Subgroup,
    };
    let raw = vec![prop(F16, F16), prop(F16, F32), prop(U8, U32), prop(I8, I32)];
    let configs = filter_configs(
        &raw,
        FilterFeatures {
            shader_f16: true,
            ..Default::default()
        },
    );
    let features = DeviceFeatures {
        ext_cooperative_matrix: true,
        cooperative_matrix: true,
        cooperative_matrix_compute_stage: true,
        vulkan_memory_model: true,
        vulkan_memory_model_device_scope: true,
        subgroup_size_control: true,
        compute_full_subgroups: !missing_full_subgroups,
        shader_float16: true,
        timeline_semaphore: true,
        ext_push_descriptor: true,
        ..Default::default()
    };
    let requirements = evaluate_requirements(&features, true, (13, "Mesa 26.1.6"), 8, &configs);
    DeviceInfo {
        index: 0,
        name: "llvmpipe".into(),
        kind: DeviceKind::Cpu,
        vendor_id: 0x10005,
        device_id: 0,
        api_version: "1.4.354".into(),
        driver_version: 1,
        driver_id: 13,
        driver_name: "llvmpipe".into(),
        driver_info: "Mesa 26.1.6".into(),
        pipeline_cache_uuid: "00".repeat(16),
        device_uuid: "11".repeat(16),
        features,
        limits: DeviceLimits {
            subgroup_size: 8,
            min_subgroup_size: 8,
            max_subgroup_size: 8,
            ..Default::default()
        },
        cooperative_matrix2: Some(CooperativeMatrix2 {
            flexible_dimensions: true,
            flexible_dimensions_max_dimension: 1024,
            flexible: raw
                .iter()
                .map(|p| FlexibleDimensions {
                    m_granularity: p.m,
                    n_granularity: p.n,
                    k_granularity: p.k,
                    a_type: p.a_type,
                    b_type: p.b_type,
                    c_type: p.c_type,
                    result_type: p.result_type,
                    saturating_accumulation: false,
                    scope: p.scope,
                    workgroup_invocations: 0,
                })
                .collect(),
            ..Default::default()
        }),
        raw_properties: raw,
        configs,
        requirements,
    }
}

#[test]
fn info_renders_every_section() {
    let r = InfoReport {
        devices: vec![lavapipe_info(false)],
        selected: Some(0),
        device_groups: vec![vec![0]],
        self_tests: vec![],
    };
    let t = render_info(&r);
    for want in [
        "device 0: llvmpipe [Cpu]  (selected)",
        "subgroup size 8 (min 8, max 8",
        "[x] computeFullSubgroups",
        "8x8x8 A=i8 B=i8 C=i32 R=i32 scope=Subgroup",
        "configs, Dawn's rules (4):",
        "    8x8x8 u8->u32",
        "extended configs (bf16, fp8) (0):",
        "VK_NV_cooperative_matrix2: workgroup scope no, flexible dimensions yes, tensor addressing no",
        "granularity 8x8x8 A=u8 B=u8 C=u32 R=u32 scope=Subgroup invocations 0",
        "verdict: usable",
        "device groups: [0]",
    ] {
        assert!(t.contains(want), "missing {want:?} in:\n{t}");
    }
    let bad = render_info(&InfoReport {
        devices: vec![lavapipe_info(true)],
        selected: None,
        device_groups: vec![vec![0]],
        self_tests: vec![],
    });
    assert!(
        bad.contains("[ ] computeFullSubgroups") && bad.contains("verdict: not usable: missing computeFullSubgroups"),
        "{bad}"
    );
}

#[test]
fn info_json_field_names_are_stable() {
    let r = InfoReport {
        devices: vec![lavapipe_info(false)],
        selected: Some(0),
        device_groups: vec![vec![0]],
        self_tests: vec![],
    };
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    assert_eq!(v["selected"], 0);
    let d = &v["devices"][0];
    for key in [
        "index",
        "name",
        "kind",
        "vendor_id",
        "device_id",
        "api_version",
        "driver_version",
        "driver_id",
        "driver_name",
        "driver_info",
        "pipeline_cache_uuid",
        "features",
        "limits",
        "raw_properties",
        "configs",
        "requirements",
    ] {
        assert!(d.get(key).is_some(), "missing {key}");
    }
    assert_eq!(d["kind"], "cpu");
    assert_eq!(d["configs"]["standard"][1]["result_type"], "f32");
    assert_eq!(d["raw_properties"][3]["a_type"], "i8");
    assert_eq!(d["limits"]["max_subgroup_size"], 8);
    assert_eq!(d["requirements"][0]["name"], "Vulkan 1.3");
    assert_eq!(d["features"]["compute_full_subgroups"], true);
}

#[test]
fn info_text_and_json_names() {
    let json = r#"{"devices": [], "selected": null}"#;
    let parsed: serde_json::Value = serde_json::from_str(json).unwrap();
    assert!(parsed["devices"].as_array().unwrap().is_empty());
    let t = render_info(&InfoReport {
        devices: vec![],
        selected: None,
        device_groups: vec![],
        self_tests: vec![],
    });
    assert!(t.contains("no Vulkan devices"));
}

#[test]
fn info_lists_the_self_tests_verdicts_and_routes_around_a_dropped_config() {
    let d = lavapipe_info(false);
    let f16 = *d
        .configs
        .all()
        .find(|c| c.to_string() == "8x8x8 f16->f32")
        .expect("lavapipe's f16 -> f32 config");
    let report = |dropped: Vec<vk_sgmat::DroppedConfig>| InfoReport {
        devices: vec![d.clone()],
        selected: Some(0),
        device_groups: vec![vec![0]],
        self_tests: vec![vk_sgmat::SelfTestReport {
            on: true,
            file: Some("/cache/selftest".into()),
            passed: 7,
            dropped,
            ..Default::default()
        }],
    };
    let good = render_info(&report(vec![]));
    assert!(
        good.contains("driver self-test: 7 kernel families passed (/cache/selftest)"),
        "{good}"
    );
    assert!(good.contains("f16 -> f32: matrix units (8x8x8 f16->f32)"), "{good}");
    let bad = render_info(&report(vec![vk_sgmat::DroppedConfig {
        config: f16,
        kernel: "gemm_8x8x8_f16_f32_nn".into(),
        reason: "C[0][0] = 0 where 3 is exact".into(),
    }]));
    assert!(
        bad.contains("dropped 8x8x8 f16->f32: gemm_8x8x8_f16_f32_nn computed C[0][0] = 0 where 3 is exact"),
        "{bad}"
    );
    assert!(bad.contains("f16 -> f32: without matrix units"), "{bad}");
}
