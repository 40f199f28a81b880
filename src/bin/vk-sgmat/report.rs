//! Rendering: pure functions from report structs to text, tested without a device.

use crate::verify::Check;
use serde::Serialize;
use std::fmt::Write;
use vk_sgmat::device::DeviceInfo;

/// `vk-sgmat info`: every device found. JSON: `{"devices": [DeviceInfo, ...], "selected": index}`.
#[derive(Debug, Serialize)]
pub struct InfoReport {
    /// Devices in enumeration order.
    pub devices: Vec<DeviceInfo>,
    /// Index of the device `Context::new()` would pick, if any is usable.
    pub selected: Option<usize>,
    /// The driver's device groups, as device indices.
    pub device_groups: Vec<Vec<usize>>,
    /// What the driver self-test's file holds for each device (in `devices`' order).
    pub self_tests: Vec<vk_sgmat::SelfTestReport>,
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
    for (i, d) in r.devices.iter().enumerate() {
        let selected = r.selected == Some(d.index);
        let self_test = r.self_tests.get(i).cloned().unwrap_or_default();
        render_device(&mut s, d, selected, &self_test);
    }
    // Several GPUs as one group could share memory; separate groups share only host memory.
    let groups: Vec<String> = r
        .device_groups
        .iter()
        .map(|g| format!("[{}]", g.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ")))
        .collect();
    let _ = writeln!(s, "device groups: {}", groups.join(" "));
    s
}

/// One device's section of `info`: what it is, its matrix units, the paths each type takes,
/// `VK_NV_cooperative_matrix2`, and whether vk-sgmat can use it.
fn render_device(s: &mut String, d: &DeviceInfo, selected: bool, self_test: &vk_sgmat::SelfTestReport) {
    render_identity(s, d, selected);
    render_matrix_units(s, d);
    render_paths(s, d, self_test);
    if let Some(c) = &d.cooperative_matrix2 {
        render_coopmat2(s, c);
    }
    let verdict = if d.has_matrix_units() {
        "usable".to_string()
    } else if d.usable() {
        "usable without matrix units (every type on the kernels without them; no cooperative-matrix config)".to_string()
    } else {
        format!("not usable: missing {}", d.missing().join(", "))
    };
    let _ = writeln!(s, "  verdict: {verdict}");
}

/// The device's name, driver, limits and the features vk-sgmat reads.
fn render_identity(s: &mut String, d: &DeviceInfo, selected: bool) {
    let mark = if selected { "  (selected)" } else { "" };
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
    "  shaderFloat16 {}, shaderInt8 {}, 16-bit storage {}, 8-bit storage {}, bfloat16 coopmat {}, VK_NV_cooperative_matrix2 {}, host memory import {}",
    yes(f.shader_float16),
    yes(f.shader_int8),
    yes(f.storage_buffer_16bit_access),
    yes(f.storage_buffer_8bit_access),
    yes(f.shader_bfloat16_cooperative_matrix),
    yes(f.ext_nv_cooperative_matrix2),
    yes(f.ext_external_memory_host)
);
}

/// The requirements for matrix units and the device's cooperative-matrix configurations.
fn render_matrix_units(s: &mut String, d: &DeviceInfo) {
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
    list(s, "configs, Dawn's rules", &d.configs.standard);
    list(s, "extended configs (bf16, fp8)", &d.configs.extended);
}

/// The driver self-test's verdicts and the path each type pair takes with the configs it kept.
fn render_paths(s: &mut String, d: &DeviceInfo, self_test: &vk_sgmat::SelfTestReport) {
    let _ = writeln!(
        s,
        "  driver self-test: {} kernel families passed{}",
        self_test.passed,
        self_test
            .file
            .as_ref()
            .map(|f| format!(" ({})", f.display()))
            .unwrap_or_default()
    );
    for x in &self_test.dropped {
        let _ = writeln!(s, "    dropped {}: {} computed {}", x.config, x.kernel, x.reason);
    }
    let all: Vec<_> = d
        .configs
        .all()
        .filter(|c| !self_test.dropped.iter().any(|x| x.config == **c))
        .copied()
        .collect();
    let _ = writeln!(s, "  f32 x f32 -> f32: {}", vk_sgmat::plan::f32_paths(&all));
    let sixteen = d.features.shader_float16 && d.features.storage_buffer_16bit_access;
    for (pair, path) in vk_sgmat::plan::type_paths(&all, sixteen) {
        let _ = writeln!(s, "  {pair}: {path}");
    }
}

/// `VK_NV_cooperative_matrix2`'s properties and its flexible-dimension configurations.
fn render_coopmat2(s: &mut String, c: &vk_sgmat::config::CooperativeMatrix2) {
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
    /// f32 operands converted to 16 bits (rounded, or split into planes) in a pass of their own
    /// before the GEMM.
    pub converted_first: usize,
    /// Operands copied into the other storage order in a pass of their own before the GEMM.
    pub relaid: usize,
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
    /// The driver self-test in this process: known-answer GEMMs run, their time in ms, and the
    /// time reading the kept verdicts took (in ms).
    pub self_test: (usize, f64, f64),
    /// What the compiling helper process did (`--compile-in-process`: nothing).
    pub compiled: vk_sgmat::CompileReport,
}

/// " after N f32 operands converted first, M operands copied transposed", or nothing.
fn copies_first(converted: usize, relaid: usize) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut parts = Vec::new();
    if converted > 0 {
        parts.push(format!("{converted} f32 operand{} converted first", plural(converted)));
    }
    if relaid > 0 {
        parts.push(format!("{relaid} operand{} copied transposed", plural(relaid)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" after {}", parts.join(", "))
    }
}

pub fn render_gemm(r: &GemmReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "device: {} ({})", r.device, r.driver);
    let _ = writeln!(
        s,
        "gemm {}x{}x{} {} layout {} alpha {} beta {}: config {}, scheme {} ({}), {} pass{}{}",
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
        if r.passes == 1 { "" } else { "es" },
        copies_first(r.converted_first, r.relaid)
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
        let (tested, ms, read_ms) = r.self_test;
        let _ = writeln!(
            s,
            "driver self-test: {tested} kernel famil{} tested in {ms:.2} ms; verdicts read in {read_ms:.3} ms",
            if tested == 1 { "y" } else { "ies" }
        );
        render_pipelines(&mut s, &r.compiled);
    }
    s
}

/// Where `gemm`'s pipelines came from: helpers, the cache, or compiled here (and how long that
/// took).
fn render_pipelines(s: &mut String, c: &vk_sgmat::CompileReport) {
    if c.from_helper > 0 || c.from_cache > 0 || c.failures > 0 {
        let _ = writeln!(
            s,
            "pipelines: {} compiled by helper processes ({} started), {} taken from the pipeline cache",
            c.from_helper, c.helpers_started, c.from_cache
        );
    }
    if c.compiled_here > 0 {
        let _ = writeln!(
            s,
            "pipelines: {} compiled in this process, {:.0} ms of creation in all, the longest {:.0} ms",
            c.compiled_here,
            c.compile_time.as_secs_f64() * 1e3,
            c.longest_compile.as_secs_f64() * 1e3
        );
    }
    if let Some(why) = &c.last_failure {
        let _ = writeln!(s, "pipelines: a helper failed, compiled in this process since: {why}");
    }
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
    /// The GEMM kernel's tile scheme, with `xN` for N split-K dispatches.
    pub kernel: String,
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

/// `bench`'s table; `stream`: each point timed per GEMM in a stream of back-to-back runs.
pub fn render_bench(device: &str, stream: bool, rows: &[BenchRow]) -> String {
    let mut s = String::new();
    let how = if stream {
        "per GEMM in a stream of back-to-back runs (GPU timestamps), median of 5 streams"
    } else {
        "median of GPU timestamps"
    };
    let _ = writeln!(s, "device: {device}; {how}; TFLOP/s (G = GFLOP/s)");
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
    let _ = writeln!(s, "{head} {:>9} {:>9}  kernel", "peak", "of peak");
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
            let _ = write!(line, " {:>9} {:>8.0}%", rate(r.peak_tflops), r.peak_fraction * 100.0);
        } else {
            let _ = write!(line, " {:>9} {:>9}", "-", "-");
        }
        let _ = writeln!(s, "{line}  {}", r.kernel);
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
#[path = "report_tests.rs"]
mod tests;
