//! Settings: [`GemmOptions`] per call, [`ContextOptions`] per context. Each field says its default.

use crate::device::DeviceSelector;
use crate::plan::{ComputeMode, DispatchLimits};
use crate::tiling::TileScheme;
use std::path::PathBuf;
use std::time::Duration;

/// GEMM options: `C = alpha * A*B + beta * C`.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmOptions {
    /// Scale of the product. Default 1. Integer results need an integer that fits the type.
    pub alpha: f64,
    /// Scale of C's old value. Default 0 (C is then not read, so it may hold anything).
    pub beta: f64,
    /// Fragment shape (m, n, k) to use; default: the largest the device offers for the types.
    /// A shape asks for the matrix units: one the device lacks is [`Error::NoConfig`](crate::Error::NoConfig), never
    /// the kernels without them.
    pub shape: Option<(u32, u32, u32)>,
    /// Tile scheme to use; default: chosen per problem (see [`Context::choose_scheme`](crate::Context::choose_scheme)).
    pub scheme: Option<TileScheme>,
    /// K slices computed concurrently and summed by a reduction pass (split-K); default: chosen
    /// per problem (see [`crate::plan::choose_split_k`]; never on CPU drivers); `Some(1)` turns
    /// it off; at most [`MAX_SPLIT_K`](crate::MAX_SPLIT_K). Ignored when the problem already
    /// needs several passes for the device's limits, and by the accurate f32 split
    /// ([`ComputeMode::Accurate`]), which runs in one pass.
    pub split_k: Option<u32>,
    /// How f32 operands are multiplied; default [`ComputeMode::Accurate`] (f32-level accuracy).
    /// Ignored for 16-bit and integer operands.
    pub compute: ComputeMode,
    /// Where f32 operands are converted for the 16-bit matrix units. `Some(true)`: first, each
    /// in a pass of its own into scratch memory, so the GEMM runs the 16-bit kernels,
    /// workgroup scope included (the accurate mode's planes run on workgroup scope alone: on a
    /// device without it, `Some(true)` with [`ComputeMode::Accurate`] is
    /// [`Error::Unsupported`](crate::Error::Unsupported)): rounded (2 bytes per element) on the fast paths
    /// ([`ComputeMode::FastF16`], [`ComputeMode::FastBf16`], an f32 operand paired with a 16-bit
    /// one), split into f16 `hi` and `lo` planes (4 bytes per element, written A column-major
    /// and B row-major, the order the workgroup-scope kernel reads fastest) in the accurate
    /// mode, whose partial sums then span a loop iteration of that kernel, not one K step (on
    /// the H200 1.4 times as fast at 3.6 times the error, still under SGEMM's).
    /// `Some(false)`: as the GEMM loads them, with no extra pass over memory, on subgroup-scope
    /// kernels only. Default `None`: the fast paths round first where the device has
    /// workgroup-scope kernels and the problem is large enough for the pass to pay (see
    /// [`Context::converts_first`](crate::Context::converts_first)), one GEMM at a time (a batch
    /// converts as it loads), the accurate mode likewise into planes. The fast paths' results are
    /// the same either way.
    pub convert_first: Option<bool>,
    /// Whether operands are first copied into the storage order the workgroup-scope kernel
    /// reads fastest ([`fast_order`](crate::plan::fast_order): for 16-bit floats A column-major,
    /// B row-major, each contiguous along M or N; for 8-bit integers A row-major, B
    /// column-major, both contiguous along K), each in a pass of its own into scratch memory (2
    /// or 1 bytes per element). Copied are 16-bit and 8-bit operands and f32 operands converted
    /// first (transposed as they are rounded, at no extra cost). `Some(true)`: every operand in
    /// the other order (an operand that cannot be copied is an error); `Some(false)`: none.
    /// Default `None`: where the device has workgroup-scope kernels for the types and the GEMM
    /// takes one (an 8-bit A also for the subgroup-scope kernel), one GEMM at a time, without
    /// an explicit `scheme`, and the problem is large enough for the copy to pay (see
    /// [`Context::relayouts`](crate::Context::relayouts)). The result is the same either way up
    /// to the order of the K sums (bit for bit on the same scheme and split; integers exactly).
    /// The accurate split's planes ([`ComputeMode::Accurate`] converted first) are always
    /// written A column-major, B row-major by their own pass, whatever this says.
    pub relayout: Option<bool>,
    /// Build the problem's N, K and leading dimensions into the GEMM kernel as constants
    /// ([`crate::kernel::FixedSizes`]; M stays free), where the GEMM runs on a workgroup-scope
    /// kernel in one pass, one GEMM at a time, reading its operands as stored: NVIDIA's driver
    /// then compiles a faster loop (H100, `nn` 4096³ +9%, 2048³ +7%: docs/perf/JOURNAL.md,
    /// "Sizes built into the kernel"), at the cost of a pipeline (seconds to compile on the
    /// H200, kept in the pipeline cache) per shape. Default `None`: from M·N·K of 2^31 on;
    /// `Some(true)`: at any size; `Some(false)`: never. The K sums run in the same order
    /// either way.
    pub specialize: Option<bool>,
    /// Run on the matrix-vector kernel ([`crate::kernel::gemv`]: no matrix units, each weight
    /// read once), where A has at most [`GEMV_MAX_ROWS`](crate::kernel::GEMV_MAX_ROWS) rows or
    /// B as many columns (decode's shapes), A is row-major and B column-major (both contiguous
    /// along K), A and B are both f16, bf16 or f32, C is f32, f16 or bf16, and the GEMM is one
    /// GEMM without an explicit `scheme` or `split_k` (fused terms run in its epilogue). Over
    /// quantized weights ([`QuantMatrix`](crate::QuantMatrix) as B with A row-major, or as A
    /// with B column-major) more rows of A (columns of B) run as decode in chunks of at most
    /// that many side by side, each reading the blocks, rather than on a dense copy of the
    /// weights. Default `None`: wherever it takes the GEMM, in chunks up to 48 rows of f16
    /// activations and 32 of f32 (measured: beyond, the copy is faster); `Some(false)`: never
    /// (the GEMM kernels run); `Some(true)`: as `None`, in chunks at any number of rows.
    pub matrix_vector: Option<bool>,
    /// Rows of the weights each workgroup of the matrix-vector kernel takes (1 to
    /// [`GEMV_MAX_COLS`](crate::kernel::GEMV_MAX_COLS)), a tuning choice like `scheme`.
    /// Default `None`: the measured choice by the rows of the vector side.
    pub gemv_cols: Option<u32>,
    /// Vectors of each weight row an invocation of the matrix-vector kernel loads per step (1
    /// or 2), a tuning choice. Default `None`: the measured choice.
    pub gemv_unroll: Option<u32>,
    /// Invocations of the matrix-vector kernel per row of quantized weights with 8-bit
    /// activations ([`GemvKey::lanes`](crate::kernel::GemvKey::lanes)), a tuning choice: 128
    /// (each invocation along every row of its workgroup, a unit of 32 values a step) or 16,
    /// 32 or 64 (whole runs of 256 values a step; K a multiple of 256). `gemv_cols` then counts
    /// the workgroup's rows of weights: a multiple of `128 / lanes`, at most four rows an
    /// invocation. Default `None`: 128, the faster on the H200 in every format timed (q4_K one
    /// token of 22016x4096: 23.8 us against 40.6-59.8 with rows shared).
    pub gemv_lanes: Option<u32>,
    /// Grouped decode with the group sizes on the device (the matrix-vector kernel over every
    /// group at once, [`GemmPlan::gemv_grouped_counted`](crate::plan::GemmPlan::gemv_grouped_counted)):
    /// rows of A each workgroup takes from one group, 1 to
    /// [`GEMV_MAX_ROWS`](crate::kernel::GEMV_MAX_ROWS), a tuning choice. Fewer rows cost less
    /// work per group; a group with more rows than this reads its weight once per so many rows.
    /// Default `None`: the measured choice, [`counted_decode_rows`](crate::plan::counted_decode_rows).
    pub gemv_group_rows: Option<u32>,
    /// Decode on quantized weights ([`QuantMatrix`](crate::QuantMatrix) on the matrix-vector
    /// kernel): whether the activations are first rounded to 8 bits per block of 32 values (a
    /// scale each, `max |x| / 127`) in a pass of their own, so the kernel multiplies four weight
    /// codes by four activations in one packed integer dot product instead of dequantizing each
    /// weight to f32 (ggml's `mul_mat_vecq` does the same). Each activation then carries an
    /// error of up to half its block's scale (about 0.4% of the block's largest), as in ggml.
    /// `Some(true)`: wherever the matrix-vector kernel streams the blocks (an error on a device
    /// without `shaderIntegerDotProduct`); `Some(false)`: never. Default `None`: on for f16 and
    /// bf16 activations and for f32 ones in the fast [`ComputeMode`]s, where the device has packed
    /// dot products, but for one row of activations over a weight of at most 2^22 values, where
    /// the rounding pass costs more than it saves; f32 activations in the accurate and exact
    /// modes are multiplied as they are. Ignored by GEMMs that multiply a dense copy of the
    /// weights.
    pub int8_activations: Option<bool>,
    /// Decode on quantized weights: whether the matrix-vector kernel reads the blocks 16 bytes
    /// at a time wherever a field starts on 16 bytes (formats whose blocks are a multiple of 16
    /// bytes: Q4_K, Q5_K, Q3_K as the device holds it), one 128-bit load where four 32-bit ones
    /// would be. `Some(false)`: never (32-bit loads, as before); default `None` and `Some(true)`:
    /// wherever the blocks allow.
    pub gemv_wide_loads: Option<bool>,
}

impl Default for GemmOptions {
    fn default() -> Self {
        Self {
            alpha: 1.0,
            beta: 0.0,
            shape: None,
            scheme: None,
            split_k: None,
            compute: ComputeMode::default(),
            convert_first: None,
            relayout: None,
            specialize: None,
            matrix_vector: None,
            gemv_cols: None,
            gemv_unroll: None,
            gemv_lanes: None,
            gemv_group_rows: None,
            int8_activations: None,
            gemv_wide_loads: None,
        }
    }
}

/// Context settings. Each field says its default.
#[derive(Clone, Debug)]
pub struct ContextOptions {
    /// Which device. Default: `VK_SGMAT_DEVICE` (index or name substring), else the best usable.
    pub device: DeviceSelector,
    /// Khronos validation layer and message capture. Default: off (on with `VK_SGMAT_VALIDATION=1`).
    pub validation: bool,
    /// Fill C with a poison pattern (NaN for floats, 0x7fffffff for integers) before every GEMM
    /// that does not read C, so unwritten elements show. Default: off (tests turn it on).
    pub poison_outputs: bool,
    /// Replace the device's dispatch limits (workgroup count, storage-buffer range, offset
    /// alignment) with smaller ones, to exercise multi-pass plans on any device. Default: none.
    pub limits_override: Option<DispatchLimits>,
    /// Where the Vulkan pipeline cache is kept between processes: loaded when the context is
    /// made (a missing, damaged or foreign file is ignored), saved atomically after calls that
    /// compiled new pipelines and when the context is dropped. Default:
    /// [`PipelineCacheFile::UserCache`](crate::PipelineCacheFile::UserCache), a file per device
    /// and driver version in the user's cache directory; `Off` keeps it in memory.
    pub pipeline_cache: crate::PipelineCacheFile,
    /// The tuning file: the winners [`Context::tune`](crate::Context::tune) finds for each
    /// (config, layouts, shape rounded up to powers of two), keyed by device UUID and driver
    /// version (a stale or corrupt file is ignored and replaced). Every plan of a bucket that
    /// has a winner, in any process, uses it; planning never times anything itself. Default:
    /// none ([`Context::choose_scheme`](crate::Context::choose_scheme)'s heuristic). An
    /// explicit [`GemmOptions::scheme`] always wins.
    pub autotune: Option<PathBuf>,
    /// How long waiting on a submission may take before the GPU counts as hung: the wait then
    /// returns an error, and what that submission may still use (its memory and semaphores, the
    /// device's pipelines, the device) is leaked rather than destroyed under the GPU. Default:
    /// 600 s.
    pub gpu_timeout: Duration,
    /// Queues of a copy-only family (the GPU's copy engines) the host copies of pinned and
    /// multi-device GEMMs use, at most [`MAX_COPY_QUEUES`](crate::device::MAX_COPY_QUEUES): 0 puts
    /// them on the compute queues, 1 both directions on one copy queue. A diagnostic for
    /// comparing the two. Default: the most.
    pub copy_queues: u32,
    /// Whether GEMMs may run on the matrix units (cooperative matrices). `false` runs every GEMM
    /// on the kernels without them, as on a GPU that has none, so that path can be tested and
    /// timed anywhere ([`Context::configs`](crate::Context::configs) is then empty). Default:
    /// true.
    pub matrix_units: bool,
    /// Plan as a device with these smaller compute limits would (shared memory, invocations
    /// per workgroup, each the smaller of the device's and these; 16-bit storage taken away): a
    /// diagnostic that runs a small GPU's plans on any device. Default: none.
    pub compute_limits: Option<crate::device::ComputeLimits>,
    /// The driver self-test: before a cooperative-matrix configuration's kernel (each tile
    /// scheme, storage order and load of it) first runs on this device and driver, a small
    /// GEMM of integers with a known exact answer runs on it; a configuration that answers
    /// wrongly is dropped ([`Context::self_test`](crate::Context::self_test) says why) and its
    /// work planned again on the next path. Verdicts are kept in a file beside the pipeline
    /// cache (none where [`ContextOptions::pipeline_cache`] is `Off`). Default: on.
    pub self_test: bool,
    /// A diagnostic: this configuration's GEMM kernels drop every product on the matrix units
    /// (they compute wrongly, as a faulty driver's would), so the self-test can be seen to catch
    /// them. Such a context neither reads nor writes the self-test's file. Default: none.
    pub inject_fault: Option<crate::config::GPUSubgroupMatrixConfig>,
    /// Where the pipelines a preparation lacks are compiled: in this process, or by a helper
    /// process ([`PipelineCompiler::Helper`](crate::PipelineCompiler::Helper)), which on
    /// NVIDIA's driver spares a first process the slow first hundreds of runs of every pipeline
    /// it compiled itself. Default: in this process.
    pub pipeline_compiler: crate::PipelineCompiler,
}

impl Default for ContextOptions {
    fn default() -> Self {
        Self {
            device: DeviceSelector::from_env(),
            validation: false,
            poison_outputs: false,
            limits_override: None,
            pipeline_cache: crate::PipelineCacheFile::default(),
            autotune: None,
            gpu_timeout: crate::submit::SUBMIT_TIMEOUT,
            copy_queues: crate::device::MAX_COPY_QUEUES,
            matrix_units: true,
            compute_limits: None,
            self_test: true,
            inject_fault: None,
            pipeline_compiler: crate::PipelineCompiler::InProcess,
        }
    }
}
