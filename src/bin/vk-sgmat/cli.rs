//! Command-line arguments.

use clap::{Parser, Subcommand};

/// `bench`'s default warm-up in seconds (`--warm`).
pub const BENCH_WARM_S: f64 = 1.0;

/// vk-sgmat: GEMM on the GPU's matrix units through Vulkan cooperative matrices.
#[derive(Debug, Parser)]
#[command(name = "vk-sgmat", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by the commands that run GEMMs.
#[derive(Debug, clap::Args)]
pub struct DeviceArgs {
    /// Device index or name substring (default: VK_SGMAT_DEVICE, else the best usable device).
    #[arg(long)]
    pub device: Option<String>,
    /// Enable the Khronos validation layer and fail on any message.
    #[arg(long)]
    pub validation: bool,
    /// Keep the Vulkan pipeline cache in this file (default: a file per device and driver in
    /// the user's cache directory, ~/.cache/vk-sgmat).
    #[arg(long)]
    pub pipeline_cache: Option<std::path::PathBuf>,
    /// Keep no pipeline cache on disk: compile every pipeline in this process.
    #[arg(long, conflicts_with = "pipeline_cache")]
    pub no_pipeline_cache: bool,
    /// Copy-engine queues for pinned and multi-device host copies (0: on the compute queues;
    /// at most 2, the default).
    #[arg(long, default_value_t = vk_sgmat::device::MAX_COPY_QUEUES)]
    pub copy_queues: u32,
    /// Autotune tile schemes: `gemm` times the candidates of its shape's bucket the first time
    /// it is seen and keeps the winner in this JSON file (keyed by device UUID and driver
    /// version); every command then plans with the winners it holds.
    #[arg(long)]
    pub autotune: Option<std::path::PathBuf>,
    /// Allocate no buffer larger than this many bytes (at most the device's
    /// maxMemoryAllocationSize): `gemm` then runs larger operands as a host GEMM in pieces, as
    /// it does past the device's own limit. To try the cut on any device.
    #[arg(long)]
    pub max_allocation: Option<u64>,
    /// Run every GEMM on the kernels without matrix units, as on a GPU that has none (to test
    /// and time that path on any device).
    #[arg(long)]
    pub no_matrix_units: bool,
    /// Skip the driver self-test (the known-answer GEMM each cooperative-matrix kernel family
    /// runs before its first use on a device and driver; `info` lists its verdicts).
    #[arg(long)]
    pub no_self_test: bool,
    /// Compile pipelines in this process rather than in a helper process of this binary (on
    /// NVIDIA's driver, a pipeline compiled in the process that runs it is slow for its first
    /// hundreds of runs; the helper's are not).
    #[arg(long)]
    pub compile_in_process: bool,
}

/// How the GEMMs run: the kernel path's options `gemm` and `bench` share.
#[derive(Debug, clap::Args)]
pub struct PathArgs {
    /// How f32 operands are multiplied: accurate (f32-level error), fast (rounded to f16 as
    /// loaded), fast-bf16, exact (plain f32 without the matrix units).
    #[arg(long, default_value = "accurate")]
    pub mode: String,
    /// Where f32 operands of the fast paths are rounded: auto (chosen per problem), first (a
    /// pass of its own, then the 16-bit kernels) or load (as the GEMM loads them).
    #[arg(long, default_value = "auto")]
    pub convert: String,
    /// Whether operands are first copied into the order the workgroup-scope kernel reads
    /// fastest (16-bit: A column-major, B row-major; 8-bit: A row-major, B column-major):
    /// auto (chosen per problem), on or off.
    #[arg(long, default_value = "auto")]
    pub relayout: String,
    /// Whether N, K and the leading dimensions are built into the workgroup-scope kernel
    /// (a pipeline per shape): auto (from M*N*K of 2^31 on), on or off.
    #[arg(long, default_value = "auto")]
    pub specialize: String,
    #[command(flatten)]
    pub gemv: GemvArgs,
    /// K slices run concurrently, then summed (split-K): auto (chosen per problem) or 1
    /// (off) to 64.
    #[arg(long, default_value = "auto")]
    pub split_k: String,
}

/// The matrix-vector kernel's switches, for `gemm` and `bench`.
#[derive(Debug, clap::Args)]
pub struct GemvArgs {
    /// Whether decode's shapes (at most 8 rows of A or columns of B, A row-major, B
    /// column-major, f16/bf16/f32 into f32, f16 or bf16) run on the matrix-vector kernel: auto
    /// (where it takes them; over quantized weights up to 48 rows of A or columns of B, 32 of
    /// f32, in chunks of 8), on (as auto, quantized weights in chunks at any number of rows) or
    /// off (the GEMM kernels).
    #[arg(long, default_value = "auto")]
    pub matrix_vector: String,
    /// Rows of the weights per workgroup of the matrix-vector kernel (1 to 8; default: the
    /// measured choice).
    #[arg(long)]
    pub gemv_cols: Option<u32>,
    /// Vectors per step of the matrix-vector kernel's K loop (1 or 2; default: the measured
    /// choice).
    #[arg(long)]
    pub gemv_unroll: Option<u32>,
    /// With `--weights` and 8-bit activations: invocations of the matrix-vector kernel per
    /// weight row, 128 (a unit of 32 values a step; the default, the faster on the H200) or 16,
    /// 32 or 64 (256 values a step). `--gemv-cols` then counts rows per workgroup, a multiple
    /// of 128 / lanes.
    #[arg(long)]
    pub gemv_lanes: Option<u32>,
    /// Grouped decode with `--counts-on-device`: rows of A each workgroup of the matrix-vector
    /// kernel takes from one group (1 to 8; default the library's measured choice).
    #[arg(long)]
    pub gemv_group_rows: Option<u32>,
    /// With `--weights`: whether decode rounds the activations to 8 bits per block of 32 and
    /// multiplies them with the weights' codes in packed integer dot products: auto (f16
    /// activations, and f32 ones in the fast modes), on or off.
    #[arg(long, default_value = "auto")]
    pub int8_activations: String,
    /// With `--weights`: whether decode reads blocks 16 bytes at a time where they start on 16
    /// bytes (q4_K, q5_K, q3_K): auto (wherever they do) or off (32-bit loads).
    #[arg(long, default_value = "auto")]
    pub gemv_wide_loads: String,
}

/// Batched and grouped GEMMs, for `gemm` and `bench`.
#[derive(Debug, clap::Args)]
pub struct BatchArgs {
    /// Run strided batches of this many GEMMs in one dispatch, timed with GPU timestamps beside
    /// the loop of single GEMMs they replace (`bench`'s default shapes: attention's 128x128x64,
    /// 1024x1024x128, 2048x2048x128, 2048x128x2048).
    #[arg(long)]
    pub batch: Option<usize>,
    /// With --batch: every entry multiplies the same B (a shared weight, stride 0).
    #[arg(long)]
    pub shared_b: bool,
    /// Run a grouped GEMM (mixture of experts): rows of A per group, comma-separated, each group
    /// with its own K x N weight stored as --layout's B says. `gemm`: they sum to M. `bench`:
    /// N x K from one --shapes MxNxK, else 14336 x 4096.
    #[arg(long, value_delimiter = ',')]
    pub groups: Vec<usize>,
    /// With --groups: the group sizes go to the device as u32 counts and the GEMM reads them
    /// there (`Matmul::grouped_by_device_counts`: a pass builds the tile table, as a router's counts would).
    #[arg(long)]
    pub counts_on_device: bool,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List Vulkan devices, their cooperative-matrix properties and usable configs.
    Info(InfoArgs),
    /// Run one GEMM on random data, verify it against an f64 CPU reference, report throughput.
    Gemm(GemmArgs),
    /// Throughput sweep: square sizes and LLM shapes per element-type pair, median TFLOP/s from
    /// GPU timestamps, with cuBLAS ratios and the `peak` fraction when available.
    Bench(BenchArgs),
    /// Time every candidate tile scheme (and fragment shape) for one GEMM; fastest first.
    Tune(TuneArgs),
    /// Measure each config's register-resident multiply-accumulate ceiling (like vkpeak).
    Peak(PeakArgs),
    /// Measure the runtime's own costs: host time per enqueued GEMM, GPU busy fraction of 1000
    /// back-to-back 256^3 GEMMs, a transformer layer's GEMMs as one stream, blocking-call overhead.
    Runtime(RuntimeArgs),
    /// Check every config of the device on odd shapes, all layouts, and alpha/beta.
    Check(CheckArgs),
}

impl Command {
    /// Whether the command prints JSON (progress then stays plain).
    pub fn json(&self) -> bool {
        match self {
            Command::Info(a) => a.json,
            Command::Gemm(a) => a.json,
            Command::Bench(a) => a.json,
            Command::Tune(a) => a.json,
            Command::Peak(a) => a.json,
            Command::Runtime(a) => a.json,
            Command::Check(a) => a.json,
        }
    }
}

/// The options of `vk-sgmat info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print JSON (field names are stable; see README.md).
    #[arg(long)]
    pub json: bool,
}

/// The options of `vk-sgmat gemm`.
#[derive(Debug, clap::Args)]
pub struct GemmArgs {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Element types as INPUT:RESULT or A,B:RESULT (f16:f32, f16:f16, bf16:f32, f32:f32,
    /// f16,f32:f32, f32,bf16:f32, i8:i32, u8:u32).
    #[arg(long, default_value = "f16:f32")]
    pub types: String,
    #[command(flatten)]
    pub path: PathArgs,
    /// Layouts of A and B: n = row-major, t = column-major (nn, nt, tn, tt).
    #[arg(long, default_value = "nn")]
    pub layout: String,
    /// Layout of C: n = row-major, t = column-major.
    #[arg(long, default_value = "n")]
    pub c_layout: String,
    /// Fragment shape MxNxK (default: the largest the device offers for the types).
    #[arg(long)]
    pub shape: Option<String>,
    /// Tile scheme by name, as `vk-sgmat tune` lists them (default: chosen per problem).
    #[arg(long)]
    pub scheme: Option<String>,
    /// alpha in C = alpha*A*B + beta*C.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub alpha: f64,
    /// beta in C = alpha*A*B + beta*C.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub beta: f64,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 20)]
    pub repeat: usize,
    /// Run over several devices: `all` (every usable GPU) or a list such as `0,1`; reports
    /// host-operand and device-resident times.
    #[arg(long)]
    pub devices: Option<String>,
    /// How C is cut across `--devices`: auto, rows, cols, or a grid PxQ.
    #[arg(long, default_value = "auto")]
    pub split: String,
    /// B is an N x K weight in this ggml block format (q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K,
    /// q4_K, q5_K, q6_K, iq4_nl, iq4_xs, mxfp4, nvfp4), random values quantized: C = A * B^T
    /// (layout nt), A of the --types' first type (f16 reads the weight as f16, f32 exactly), C
    /// f32; checked against the f64 product of the dequantized weight, then timed.
    #[arg(long)]
    pub weights: Option<String>,
    #[command(flatten)]
    pub batching: BatchArgs,
    #[command(flatten)]
    pub fused: crate::cli::FusedArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dev: DeviceArgs,
}

/// The options of `vk-sgmat bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Element types to run, comma-separated or repeated (f16:f32,f16,f32:f32; default: every
    /// pair the device has configs for).
    #[arg(long)]
    pub types: Vec<String>,
    #[command(flatten)]
    pub path: PathArgs,
    /// Tile scheme by name for every point, as `vk-sgmat tune` lists them (default: chosen
    /// per problem).
    #[arg(long)]
    pub scheme: Option<String>,
    /// Shapes MxNxK to run (default: squares 256..8192 and 4096x11008x4096, 16x4096x4096,
    /// 4096x4096x256; squares up to 256 on CPU drivers).
    #[arg(long, value_delimiter = ',')]
    pub shapes: Vec<String>,
    /// Sweep one transformer layer's GEMMs instead of --shapes: llama-7b, llama-3-8b or
    /// mixtral-expert, at 1, 8, 32, 128, 512 and 2048 tokens, weights N x K (layout nt),
    /// with each GEMM's weight TB/s and the layer's time per token count.
    #[arg(long, conflicts_with = "shapes")]
    pub model: Option<String>,
    /// B is a weight in this ggml block format (q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K,
    /// q5_K, q6_K, iq4_nl, iq4_xs, mxfp4, nvfp4): N x K blocks as a GGUF file holds them (layout
    /// nt), read as the --types' B (f16, or f32 exactly); decode's shapes stream the blocks, the
    /// rest multiply a dense copy made first (timed with it).
    #[arg(long)]
    pub weights: Option<String>,
    /// With `--weights`: the weight is A, C = W * X^T (ggml's orientation): a shape MxNxK is an
    /// M x K weight times N tokens of K values.
    #[arg(long, requires = "weights")]
    pub weights_first: bool,
    /// Timed runs per point.
    #[arg(long, default_value_t = 20)]
    pub reps: u32,
    /// Seconds of untimed runs before each point is timed (then on until two batches agree
    /// within 3%). This sets the regime measured: on the H200 the fastest kernels reach the
    /// board's power limit within a second of load and run 3-5% slower from then on
    /// (docs/perf/JOURNAL.md, "Power").
    #[arg(long, default_value_t = BENCH_WARM_S)]
    pub warm: f64,
    /// Time each point as a stream: the GPU time of `--reps` GEMMs recorded back to back
    /// (a barrier between each) divided by `--reps`, the median of 5 such streams, as
    /// graph-level benchmarks such as ggml-vulkan's time theirs; by default each GEMM is
    /// timed by its own timestamps, which also count its launch and drain.
    #[arg(long)]
    pub stream: bool,
    /// Measure as a fresh process meets each shape, in order, with no warm-up: the time to
    /// plan it and create its pipelines, the first result, then runs back to back for this
    /// many seconds, each timed alone; prints the first run against the steady state and
    /// when the runs came within 5% of it (run it in a new process, with and without a
    /// pipeline cache on disk).
    #[arg(long)]
    pub first_runs: Option<f64>,
    /// With `--first-runs`: wait this many milliseconds after the first run before the rest, to
    /// tell a slow start that follows the count of runs from one that follows the time since
    /// the first.
    #[arg(long, default_value_t = 0)]
    pub pause_after_first: u64,
    /// With `--first-runs`: run each GEMM's kernel this many times on 16 rows first (the same
    /// pipeline), counted in its preparation: whether cheap runs end the slow start.
    #[arg(long, default_value_t = 0)]
    pub prime: usize,
    /// Layout of C: n = row-major, t = column-major (ggml-vulkan writes its result
    /// column-major).
    #[arg(long, default_value = "n")]
    pub c_layout: String,
    /// cuBLAS figures (JSON lines from scripts/cublas_reference.py) for the ratio column; for
    /// each point the fastest matching row (any layout: the peer's fastest path) is used.
    #[arg(long)]
    pub cublas: Option<std::path::PathBuf>,
    /// Peer figures (JSON lines with "peer", "types", "m", "n", "k", "tflops", e.g. from
    /// scripts/ggml_to_jsonl.py): a column and a ratio per peer. Repeatable.
    #[arg(long)]
    pub peer: Vec<std::path::PathBuf>,
    /// Layouts of A and B for our GEMMs: n = row-major, t = column-major (nn, nt, tn, tt).
    #[arg(long, default_value = "nn")]
    pub layout: String,
    /// Write a throughput-vs-size chart (SVG) here.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// Time one GEMM over several devices (`all` or `0,1`) against device 0 alone, with host
    /// operands and device-resident ones (default shapes 8192^3 and 16384^3, f16:f32).
    #[arg(long)]
    pub devices: Option<String>,
    /// How C is cut across `--devices`: auto, rows, cols, or a grid PxQ.
    #[arg(long, default_value = "auto")]
    pub split: String,
    /// With `--devices`: print every timed sample, and trace `--reps` pinned GEMMs per shape
    /// (device 0 alone, then all): each call's GPU span and host times on a line, and when
    /// each band's copies and multiply ran on each GPU in the slowest call. On one device:
    /// time each dispatch of every point apart (a copy or conversion pass, the GEMM, a split-K
    /// reduction) and print their medians on stderr.
    #[arg(long)]
    pub trace: bool,
    #[command(flatten)]
    pub batching: BatchArgs,
    #[command(flatten)]
    pub fused: crate::cli::FusedArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dev: DeviceArgs,
}

/// The options of `vk-sgmat tune`.
#[derive(Debug, clap::Args)]
pub struct TuneArgs {
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B.
    pub k: usize,
    /// Element types as INPUT:RESULT.
    #[arg(long, default_value = "f16:f32")]
    pub types: String,
    /// Layouts of A and B (nn, nt, tn, tt).
    #[arg(long, default_value = "nn")]
    pub layout: String,
    /// Only schemes whose name contains one of these (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub filter: Vec<String>,
    /// Only this fragment shape MxNxK (default: every shape for the types).
    #[arg(long)]
    pub shape: Option<String>,
    /// Timed runs per candidate (GPU timestamps; the median is reported).
    #[arg(long, default_value_t = 10)]
    pub reps: u32,
    /// Seconds of untimed runs before each candidate is timed (then on until steady). Short
    /// by default, so that many candidates time quickly; the H200 then runs below its power
    /// limit, where `bench`'s default second of warm-up does not (docs/perf/JOURNAL.md,
    /// "Power"): compare `tune` figures with `tune` figures.
    #[arg(long, default_value_t = 0.2)]
    pub warm: f64,
    /// Whether operands are first copied into the order the workgroup-scope kernel reads
    /// fastest (see `bench --relayout`): auto, on or off. The candidates then run on the
    /// copies.
    #[arg(long, default_value = "auto")]
    pub relayout: String,
    /// Also time each scheme with parts of its main loop removed (no global loads, no
    /// multiplies, no barriers, multiplies only), to see where the time goes. Those variants
    /// compute wrong results by design and are not checked.
    #[arg(long)]
    pub probe: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dev: DeviceArgs,
}

/// The options of `vk-sgmat peak`.
#[derive(Debug, clap::Args)]
pub struct PeakArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dev: DeviceArgs,
}

/// The options of `vk-sgmat runtime`.
#[derive(Debug, clap::Args)]
pub struct RuntimeArgs {
    /// JSON from scripts/torch_layer.py ({"layer_torch_ms": ...}) to print beside ours.
    #[arg(long)]
    pub torch: Option<std::path::PathBuf>,
    /// Small sizes (for CPU drivers).
    #[arg(long)]
    pub quick: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dev: DeviceArgs,
}

/// The options of `vk-sgmat check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Fewer and smaller shapes (for CPU drivers).
    #[arg(long)]
    pub quick: bool,
    /// Type pairs to check (default: every pair the device has).
    #[arg(long, value_delimiter = ',')]
    pub types: Vec<String>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub dev: DeviceArgs,
}

/// Fused epilogue options of `gemm`.
#[derive(Debug, clap::Args)]
pub struct FusedArgs {
    /// Fused epilogue terms, comma-separated: none, bias-row, bias-col, relu, gelu, gelu-erf,
    /// silu (e.g. `bias-col,gelu`). i8/u8 inputs are dequantised by random row and column scales.
    #[arg(long)]
    pub epilogue: Option<String>,
    /// Store C as this type (f16, bf16, f32): f32 accumulation cast at the store, or (i8/u8
    /// inputs) the dequantised result. Default: the result type of --types.
    #[arg(long)]
    pub out: Option<String>,
}

impl FusedArgs {
    /// C's type from `--out`, or `default` where it was not given.
    pub fn out_type(&self, default: vk_sgmat::ComponentType) -> anyhow::Result<vk_sgmat::ComponentType> {
        match self.out.as_deref() {
            Some(s) => {
                vk_sgmat::ComponentType::parse(s).ok_or_else(|| anyhow::anyhow!("--out {s}: use f16, bf16 or f32"))
            }
            None => Ok(default),
        }
    }
}
