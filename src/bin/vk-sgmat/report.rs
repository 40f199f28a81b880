//! Rendering: pure functions from report structs to text, tested without a device.

use serde::Serialize;
use std::fmt::Write;
use vk_sgmat::device::DeviceInfo;
use vk_sgmat::verify::Check;

/// `vk-sgmat info`: every device found. JSON: `{"devices": [DeviceInfo, ...], "selected": index}`.
#[derive(Debug, Serialize)]
pub struct InfoReport {
    /// Devices in enumeration order.
    pub devices: Vec<DeviceInfo>,
    /// Index of the device `Context::new()` would pick, if any is usable.
    pub selected: Option<usize>,
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

pub fn render_info(r: &InfoReport) -> String {
    let mut s = String::new();
    if r.devices.is_empty() {
        s.push_str("no Vulkan devices found\n");
    }
    for d in &r.devices {
        let mark = if r.selected == Some(d.index) {
            "  (selected)"
        } else {
            ""
        };
        let _ = writeln!(s, "device {}: {} [{:?}]{mark}", d.index, d.name, d.kind);
        let _ = writeln!(
            s,
            "  vendor 0x{:04x}, device 0x{:04x}, Vulkan {}, driver {} ({}), driver id {}",
            d.vendor_id, d.device_id, d.api_version, d.driver_name, d.driver_info, d.driver_id
        );
        let l = &d.limits;
        let _ = writeln!(
            s,
            "  subgroup size {} (min {}, max {}, pinnable in compute: {})",
            l.subgroup_size,
            l.min_subgroup_size,
            l.max_subgroup_size,
            yes(l.required_subgroup_size_compute)
        );
        let _ = writeln!(
            s,
            "  shared memory {} B, workgroup invocations {}, workgroup count {:?}, storage buffer range {} B",
            l.max_shared_memory, l.max_workgroup_invocations, l.max_workgroup_count, l.max_storage_buffer_range
        );
        let f = &d.features;
        let _ = writeln!(
            s,
            "  shaderFloat16 {}, shaderInt8 {}, 16-bit storage {}, 8-bit storage {}, bfloat16 coopmat {}, VK_NV_cooperative_matrix2 {}",
            yes(f.shader_float16),
            yes(f.shader_int8),
            yes(f.storage_buffer_16bit_access),
            yes(f.storage_buffer_8bit_access),
            yes(f.shader_bfloat16_cooperative_matrix),
            yes(f.ext_nv_cooperative_matrix2)
        );
        s.push_str("  requirements:\n");
        for req in &d.requirements {
            let _ = writeln!(s, "    [{}] {}", if req.met { "x" } else { " " }, req.name);
        }
        let _ = writeln!(
            s,
            "  cooperative-matrix properties (as reported, {}):",
            d.raw_properties.len()
        );
        for p in &d.raw_properties {
            let _ = writeln!(s, "    {p}");
        }
        let list = |s: &mut String, title: &str, v: &[vk_sgmat::GPUSubgroupMatrixConfig]| {
            let _ = writeln!(s, "  {title} ({}):", v.len());
            for c in v {
                let _ = writeln!(s, "    {c}");
            }
        };
        list(&mut s, "configs, Dawn's rules", &d.configs.standard);
        list(&mut s, "extended configs (bf16, fp8)", &d.configs.extended);
        let all: Vec<_> = d.configs.all().copied().collect();
        let _ = writeln!(s, "  f32 x f32 -> f32: {}", vk_sgmat::plan::f32_paths(&all));
        if let Some(c) = &d.cooperative_matrix2 {
            let _ = writeln!(
                s,
                "  VK_NV_cooperative_matrix2: workgroup scope {}, flexible dimensions {}, tensor addressing {}, \
                 per-element operations {}; max workgroup {}, max dimension {}, reserved shared memory {} B{}",
                yes(c.workgroup_scope),
                yes(c.flexible_dimensions),
                yes(c.tensor_addressing),
                yes(c.per_element_operations),
                c.workgroup_scope_max_workgroup_size,
                c.flexible_dimensions_max_dimension,
                c.workgroup_scope_reserved_shared_memory,
                if c.usable() {
                    " (workgroup-scope kernels available)"
                } else {
                    ""
                }
            );
            for f in &c.flexible {
                let _ = writeln!(
                    s,
                    "    granularity {}x{}x{} A={} B={} C={} R={} scope={:?} invocations {}{}",
                    f.m_granularity,
                    f.n_granularity,
                    f.k_granularity,
                    f.a_type,
                    f.b_type,
                    f.c_type,
                    f.result_type,
                    f.scope,
                    f.workgroup_invocations,
                    if f.saturating_accumulation { " saturating" } else { "" }
                );
            }
        }
        let verdict = if d.has_matrix_units() {
            "usable".to_string()
        } else if d.usable() {
            "usable without matrix units (f32 on the exact kernel; no cooperative-matrix config)".to_string()
        } else {
            format!("not usable: missing {}", d.missing().join(", "))
        };
        let _ = writeln!(s, "  verdict: {verdict}");
    }
    s
}

/// `vk-sgmat gemm`: one verified GEMM and its timing.
#[derive(Debug, Serialize)]
pub struct GemmReport {
    pub device: String,
    pub driver: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub types: String,
    pub layout: String,
    pub config: String,
    pub scheme: String,
    pub tile: String,
    pub passes: usize,
    pub alpha: f64,
    pub beta: f64,
    pub seed: u64,
    pub check: Check,
    pub rows_checked: usize,
    pub runs: usize,
    /// Pieces of a host GEMM whose operands exceed the allocation limit (then timed once with
    /// its transfers); 1: device-resident runs.
    pub pieces: usize,
    pub median_ms: f64,
    pub tflops: f64,
    /// Wall time of the first call, pipeline creation included.
    pub first_call_ms: f64,
}

pub fn render_gemm(r: &GemmReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "device: {} ({})", r.device, r.driver);
    let _ = writeln!(
        s,
        "gemm {}x{}x{} {} layout {} alpha {} beta {}: config {}, scheme {} ({}), {} pass{}",
        r.m,
        r.n,
        r.k,
        r.types,
        r.layout,
        r.alpha,
        r.beta,
        r.config,
        r.scheme,
        r.tile,
        r.passes,
        if r.passes == 1 { "" } else { "es" }
    );
    let c = &r.check;
    let what = if r.rows_checked == r.m {
        format!("all {} rows", r.m)
    } else {
        format!("{} sampled rows of {}", r.rows_checked, r.m)
    };
    let verdict = if c.passed { "PASS" } else { "FAIL" };
    if c.tolerance == 0.0 {
        let _ = writeln!(
            s,
            "verify ({what}, seed {}): {} mismatches (exact): {verdict}",
            r.seed, c.mismatches
        );
    } else {
        let _ = writeln!(
            s,
            "verify ({what}, seed {}): relative error {:.3e} (bound {:.3e}), {} non-finite: {verdict}",
            r.seed, c.rel_error, c.tolerance, c.mismatches
        );
    }
    if let Some((row, col, got, want)) = c.first_bad {
        let _ = writeln!(s, "  first bad element C[{row}][{col}] = {got} (expected {want})");
    }
    let rate = if r.tflops >= 1.0 {
        format!("{:.2} TFLOP/s", r.tflops)
    } else {
        format!("{:.2} GFLOP/s", r.tflops * 1e3)
    };
    if r.pieces > 1 {
        let _ = writeln!(
            s,
            "time: {:.1} ms for one host call in {} pieces (operands over the allocation limit; transfers and pipeline creation included): {rate}",
            r.median_ms, r.pieces
        );
    } else {
        let _ = writeln!(
            s,
            "time: median {:.4} ms over {} runs (device-resident, submit to completion): {rate}; first call {:.1} ms",
            r.median_ms, r.runs, r.first_call_ms
        );
    }
    s
}

/// One row of `vk-sgmat check`.
#[derive(Debug, Serialize)]
pub struct CheckRow {
    pub config: String,
    pub shape: (usize, usize, usize),
    pub layout: String,
    pub alpha: f64,
    pub beta: f64,
    pub rel_error: f64,
    pub tolerance: f64,
    pub mismatches: usize,
    pub passed: bool,
    pub error: Option<String>,
}

pub fn render_check(device: &str, rows: &[CheckRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "device: {device}");
    let _ = writeln!(
        s,
        "{:<22} {:>16} {:>6} {:>12} {:>11} {:>11} {:>6}",
        "config", "MxNxK", "layout", "alpha/beta", "rel.err", "bound", "result"
    );
    for r in rows {
        let shape = format!("{}x{}x{}", r.shape.0, r.shape.1, r.shape.2);
        let result = if r.passed { "ok" } else { "FAIL" };
        let err = if r.tolerance == 0.0 {
            format!("{} diff", r.mismatches)
        } else {
            format!("{:.2e}", r.rel_error)
        };
        let bound = if r.tolerance == 0.0 {
            "exact".to_string()
        } else {
            format!("{:.2e}", r.tolerance)
        };
        let _ = writeln!(
            s,
            "{:<22} {:>16} {:>6} {:>12} {:>11} {:>11} {:>6}",
            r.config,
            shape,
            r.layout,
            format!("{}/{}", r.alpha, r.beta),
            err,
            bound,
            result
        );
        if let Some(e) = &r.error {
            let _ = writeln!(s, "    error: {e}");
        }
    }
    let failed = rows.iter().filter(|r| !r.passed).count();
    let configs: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.config.as_str()).collect();
    let _ = writeln!(
        s,
        "{} passed, {} failed ({} configs)",
        rows.len() - failed,
        failed,
        configs.len()
    );
    s
}

/// One point of `vk-sgmat bench`.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    pub types: String,
    pub layout: String,
    pub config: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub median_ms: f64,
    pub tflops: f64,
    pub cublas_tflops: Option<f64>,
    pub ratio: Option<f64>,
    pub peak_tflops: f64,
    pub peak_fraction: f64,
    /// Each peer's figure for the point, and our throughput over it.
    pub peers: Vec<PeerFigure>,
}

/// A peer's throughput at one bench point.
#[derive(Debug, Clone, Serialize)]
pub struct PeerFigure {
    pub peer: String,
    pub tflops: f64,
    pub ratio: f64,
}

/// One line of a peer's figures (scripts/ggml_to_jsonl.py).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct PeerRow {
    pub peer: String,
    pub types: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub tflops: f64,
}

pub fn read_peers(text: &str) -> anyhow::Result<Vec<PeerRow>> {
    read_json_lines(text, "peer")
}

/// The JSON-object lines of `text` (other lines, such as a tool's log, are skipped).
fn read_json_lines<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> anyhow::Result<Vec<T>> {
    text.lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .map(|l| serde_json::from_str(l).map_err(|e| anyhow::anyhow!("bad {what} line {l:?}: {e}")))
        .collect()
}

/// Each peer's fastest figure for a type pair and shape, in the peers' first-seen order.
pub fn peers_for(rows: &[PeerRow], types: &str, (m, n, k): (usize, usize, usize), ours: f64) -> Vec<PeerFigure> {
    let mut out: Vec<PeerFigure> = Vec::new();
    for r in rows.iter().filter(|r| r.types == types && (r.m, r.n, r.k) == (m, n, k)) {
        match out.iter_mut().find(|p| p.peer == r.peer) {
            Some(p) if p.tflops >= r.tflops => {}
            Some(p) => {
                *p = PeerFigure {
                    peer: r.peer.clone(),
                    tflops: r.tflops,
                    ratio: ours / r.tflops,
                }
            }
            None => out.push(PeerFigure {
                peer: r.peer.clone(),
                tflops: r.tflops,
                ratio: ours / r.tflops,
            }),
        }
    }
    out
}

/// One line of scripts/cublas_reference.py's output.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct CublasRow {
    pub types: String,
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub tflops: f64,
}

pub fn read_cublas(text: &str) -> anyhow::Result<Vec<CublasRow>> {
    read_json_lines(text, "cuBLAS")
}

/// The cuBLAS figure for a type pair and shape: the fastest row of the same types (any layout:
/// the reference's fastest path), else, for f16:f16, of f16:f32 (torch.matmul on f16 writes f16
/// either way; cuBLAS accumulates in f32).
pub fn cublas_for(rows: &[CublasRow], types: &str, (m, n, k): (usize, usize, usize)) -> Option<f64> {
    let find = |want: &str| {
        rows.iter()
            .filter(|r| r.types == want && (r.m, r.n, r.k) == (m, n, k))
            .map(|r| r.tflops)
            .reduce(f64::max)
    };
    find(types).or_else(|| (types == "f16:f16").then(|| find("f16:f32")).flatten())
}

fn rate(tflops: f64) -> String {
    if tflops >= 1.0 {
        format!("{tflops:.1}")
    } else {
        format!("{:.2}G", tflops * 1e3)
    }
}

pub fn render_bench(device: &str, rows: &[BenchRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "device: {device}; median of GPU timestamps; TFLOP/s (G = GFLOP/s)");
    let mut peers: Vec<&str> = Vec::new();
    for p in rows.iter().flat_map(|r| &r.peers) {
        if !peers.contains(&p.peer.as_str()) {
            peers.push(&p.peer);
        }
    }
    let mut head = format!(
        "{:<9} {:<3} {:<20} {:>18} {:>10} {:>9} {:>9} {:>7}",
        "types", "ab", "config", "MxNxK", "ms", "TFLOP/s", "cuBLAS", "ratio"
    );
    for p in &peers {
        let _ = write!(head, " {:>12} {:>7}", truncate(p, 12), "ratio");
    }
    let _ = writeln!(s, "{head} {:>9} {:>9}", "peak", "of peak");
    for r in rows {
        let mut line = format!(
            "{:<9} {:<3} {:<20} {:>18} {:>10.4} {:>9} {:>9} {:>7}",
            r.types,
            r.layout,
            r.config,
            format!("{}x{}x{}", r.m, r.n, r.k),
            r.median_ms,
            rate(r.tflops),
            r.cublas_tflops.map_or("-".into(), rate),
            r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
        );
        for p in &peers {
            match r.peers.iter().find(|f| f.peer == *p) {
                Some(f) => {
                    let _ = write!(line, " {:>12} {:>7.2}", rate(f.tflops), f.ratio);
                }
                None => {
                    let _ = write!(line, " {:>12} {:>7}", "-", "-");
                }
            }
        }
        if r.peak_tflops > 0.0 {
            let _ = writeln!(s, "{line} {:>9} {:>8.0}%", rate(r.peak_tflops), r.peak_fraction * 100.0);
        } else {
            let _ = writeln!(s, "{line} {:>9} {:>9}", "-", "-");
        }
    }
    s
}

fn truncate(s: &str, n: usize) -> &str {
    s.get(..n).unwrap_or(s)
}

/// One row of `vk-sgmat tune`.
#[derive(Debug, Serialize)]
pub struct TuneRow {
    pub registers: Option<String>,
    pub statistics: Vec<(String, String)>,
    pub config: String,
    pub scheme: String,
    /// The diagnostic variant (`None` for the real kernel).
    pub probe: Option<String>,
    pub tile: String,
    pub threads: u32,
    pub shared_bytes: u32,
    pub median_ms: f64,
    pub tflops: f64,
    pub passed: bool,
}

pub fn render_tune(device: &str, (m, n, k): (usize, usize, usize), rows: &[TuneRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "device: {device}; {m}x{n}x{k}; GPU time (timestamps), median");
    let _ = writeln!(
        s,
        "{:<20} {:<40} {:>12} {:>7} {:>7} {:>5} {:>10} {:>9} {:>6}",
        "config", "scheme", "tile", "threads", "shared", "regs", "ms", "TFLOP/s", "check"
    );
    for r in rows {
        let scheme = match &r.probe {
            Some(p) => format!("  probe {p}"),
            None => r.scheme.clone(),
        };
        let _ = writeln!(
            s,
            "{:<20} {:<40} {:>12} {:>7} {:>7} {:>5} {:>10.4} {:>9.2} {:>6}",
            r.config,
            scheme,
            r.tile,
            r.threads,
            r.shared_bytes,
            r.registers.as_deref().unwrap_or("-"),
            r.median_ms,
            r.tflops,
            match (&r.probe, r.passed) {
                (Some(_), _) => "-",
                (None, true) => "ok",
                (None, false) => "FAIL",
            }
        );
    }
    s
}

pub fn render_peak(device: &str, rows: &[vk_sgmat::PeakResult], fill: &vk_sgmat::FillResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "device: {device}; register-resident multiply-accumulate ceiling (median, GPU timestamps)"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<20} {:>10.2} TFLOP/s   ({} workgroups x 4 subgroups x 8 chains x {} iterations)",
            r.config.to_string(),
            r.flops / 1e12,
            r.workgroups,
            r.iterations
        );
    }
    let _ = writeln!(
        s,
        "{:<20} {:>10.2} TB/s      (vkCmdFillBuffer of {} MiB: the ceiling for writing C)",
        "memory write",
        fill.bytes_per_s / 1e12,
        fill.bytes >> 20
    );
    s
}

#[cfg(test)]
mod tests {
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
            alpha: 1.0,
            beta: 0.0,
            seed: 9,
            check: check(true),
            rows_checked: 5,
            runs: 3,
            median_ms: 0.5,
            tflops: 1.25,
            first_call_ms: 3.0,
            pieces: 1,
        };
        let t = render_gemm(&r);
        assert!(t.contains("gemm 5x6x7 f16->f32 layout nt"), "{t}");
        assert!(t.contains("all 5 rows"), "{t}");
        assert!(t.contains(": PASS"), "{t}");
        assert!(t.contains("1.25 TFLOP/s"), "{t}");
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
            })
            .collect()
    }

    /// The H200's f16 -> f32 and f16 -> f16 figures of docs/performance.md's v3 bench, with the
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
        let t = render_bench("GPU", &rows);
        assert!(
            t.contains("512x512x512") && t.contains("400.0") && t.contains("0.25"),
            "{t}"
        );
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
        let t = render_bench("GPU", &bench_rows());
        assert!(t.contains("ggml-vulkan") && t.contains("0.50"), "{t}");
    }

    #[test]
    fn cublas_lines_match_by_types_and_shape() {
        let text =
            "noise\n{\"types\": \"f16:f32\", \"m\": 8, \"n\": 8, \"k\": 8, \"median_ms\": 1.0, \"tflops\": 5.0}\n";
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
        ] {
            assert!(t.contains(want), "missing {want:?} in:\n{t}");
        }
        let bad = render_info(&InfoReport {
            devices: vec![lavapipe_info(true)],
            selected: None,
        });
        assert!(
            bad.contains("[ ] computeFullSubgroups")
                && bad.contains("verdict: not usable: missing computeFullSubgroups"),
            "{bad}"
        );
    }

    #[test]
    fn info_json_field_names_are_stable() {
        let r = InfoReport {
            devices: vec![lavapipe_info(false)],
            selected: Some(0),
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
        });
        assert!(t.contains("no Vulkan devices"));
    }
}
