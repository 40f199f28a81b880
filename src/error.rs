//! The library's one error type. Every fallible public call returns [`Result`]; the variants carry
//! what a user needs to fix the call (what was wrong and what is supported), and Vulkan result codes
//! are mapped in one place (`Error::vk`).

use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use ash::vk;

/// `Result` with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in vk-sgmat.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Vulkan loader (libvulkan) could not be loaded.
    #[error("the Vulkan loader could not be loaded: {0}")]
    NoVulkan(String),

    /// No device can run cooperative-matrix GEMMs; `reasons` lists each device and what it lacks.
    #[error("no usable Vulkan device for cooperative-matrix GEMM:{}", fmt_reasons(.reasons))]
    NoUsableDevice {
        /// One entry per device found: its name and what it lacks.
        reasons: Vec<(String, Vec<String>)>,
    },

    /// A device selector (index or name substring) matched no usable device.
    #[error("no device matches {selector:?}; devices: {available:?}")]
    DeviceNotFound {
        /// The selector as given.
        selector: String,
        /// The devices that exist, as "index: name".
        available: Vec<String>,
    },

    /// The selected device cannot run cooperative-matrix GEMMs.
    #[error("device {device:?} cannot run cooperative-matrix GEMM; missing: {}", .missing.join(", "))]
    DeviceUnusable {
        /// Device name.
        device: String,
        /// Every requirement it does not meet.
        missing: Vec<String>,
    },

    /// A Vulkan call failed.
    #[error("{call} failed: {result}")]
    Vulkan {
        /// The Vulkan entry point.
        call: &'static str,
        /// Its result code.
        result: vk::Result,
    },

    /// The GPU device was lost (`VK_ERROR_DEVICE_LOST`: a hang the driver reset, a fault, a GPU
    /// removed). Nothing more runs on it: every later call of the context returns this error
    /// at once. Make a new [`Context`](crate::Context) to go on.
    #[error("the GPU device was lost ({call}): this context can run nothing more; make a new Context")]
    DeviceLost {
        /// The call that reported it (or "an earlier call", for the calls after it).
        call: &'static str,
    },

    /// A submission did not finish within
    /// [`ContextOptions::gpu_timeout`](crate::ContextOptions::gpu_timeout): the GPU is hung or
    /// the work far too long. What that work may still use is leaked rather than destroyed
    /// under the GPU, and every later call of the context returns this error at once. Make a
    /// new [`Context`](crate::Context) (with a longer timeout, if the work was only long).
    #[error("the GPU did not finish in time (ContextOptions::gpu_timeout = {timeout:?}): this context can run nothing more; make a new Context")]
    GpuTimeout {
        /// The bound that passed.
        timeout: std::time::Duration,
    },

    /// Device (or host-visible) memory ran out.
    #[error("out of device memory allocating {bytes} bytes for {what}")]
    OutOfDeviceMemory {
        /// What was being allocated.
        what: &'static str,
        /// How many bytes.
        bytes: u64,
    },

    /// The memory allocator failed for another reason.
    #[error("memory allocation failed for {what}: {message}")]
    Allocation {
        /// What was being allocated.
        what: &'static str,
        /// The allocator's message.
        message: String,
    },

    /// The operands' shapes do not fit together.
    #[error("shape mismatch: {0}")]
    ShapeMismatch(String),

    /// A matrix's slice is shorter than its shape and leading dimension need.
    #[error("matrix {matrix}: slice holds {got} elements, its shape and leading dimension need {needed}")]
    ShortSlice {
        /// Which operand.
        matrix: &'static str,
        /// Elements needed.
        needed: usize,
        /// Elements given.
        got: usize,
    },

    /// A leading dimension is smaller than the contiguous extent of the matrix.
    #[error("matrix {matrix}: leading dimension {ld} is less than {min}, the length of its contiguous dimension")]
    BadLeadingDimension {
        /// Which operand.
        matrix: &'static str,
        /// The leading dimension given.
        ld: usize,
        /// The smallest legal one.
        min: usize,
    },

    /// One of M, N, K is zero.
    #[error("zero-sized GEMM (M={m}, N={n}, K={k}); every dimension must be at least 1")]
    ZeroSize {
        /// Rows of A and C.
        m: usize,
        /// Columns of B and C.
        n: usize,
        /// Columns of A, rows of B.
        k: usize,
    },

    /// The device has no cooperative-matrix configuration for these element types.
    #[error("no cooperative-matrix config for {component_type} x {component_type} -> {result_type} on this device; it has: {}", fmt_configs(.available))]
    NoConfig {
        /// A and B element type.
        component_type: ComponentType,
        /// C element type.
        result_type: ComponentType,
        /// What the device offers (standard and extended).
        available: Vec<GPUSubgroupMatrixConfig>,
    },

    /// A problem exceeds what this library or device can address.
    #[error("too large: {0}")]
    TooLarge(String),

    /// alpha or beta cannot be represented in the result type.
    #[error("invalid scalar {name} = {value}: {reason}")]
    InvalidScalar {
        /// "alpha" or "beta".
        name: &'static str,
        /// The value given.
        value: f64,
        /// Why it is rejected.
        reason: &'static str,
    },

    /// A tile scheme does not fit the configuration or the device's limits.
    #[error("invalid tile scheme: {0}")]
    InvalidTileScheme(String),

    /// Waiting on (or for) work that was never submitted: its stream has not called `submit`
    /// yet, or was dropped (or its recording or submission failed) before it did, which discards
    /// the work. No data comes with it.
    #[error("{}", if *.discarded {
        "the work was discarded, never submitted: its stream was dropped (or its recording or \
         submission failed) before submit(), so it holds no result"
    } else {
        "the work is not submitted yet: call submit() on its stream first"
    })]
    NotSubmitted {
        /// True when the work can never run (its stream let go of it); false while its stream
        /// may still submit it.
        discarded: bool,
    },

    /// A request that the library does not support (a type combination, an option).
    #[error("unsupported: {0}")]
    Unsupported(String),

    /// An option is out of its range; the message names the option and the range.
    #[error("invalid option: {0}")]
    InvalidOption(String),

    /// Device-resident matrices from different contexts, or of the wrong role, were mixed.
    #[error("invalid operand: {0}")]
    InvalidOperand(String),

    /// The Khronos validation layer was asked for but is not installed.
    #[error("the Khronos validation layer (VK_LAYER_KHRONOS_validation) was requested but is not available; install vulkan-validationlayers or set VK_LAYER_PATH")]
    ValidationLayerMissing,

    /// Generating SPIR-V failed (a bug in the generator).
    #[error("SPIR-V generation failed: {0}")]
    Codegen(String),

    /// One device of a [`MultiContext`](crate::MultiContext) failed or rejected its part of the
    /// work (a lost device, a timeout, a part it has no config for). The multi-device call
    /// returns this and no result: C's contents are then unspecified.
    #[error("device {device} ({name}): {source}")]
    OnDevice {
        /// The device's position in the multi-device handle.
        device: usize,
        /// Its name.
        name: String,
        /// What went wrong there.
        #[source]
        source: Box<Error>,
    },

    /// An I/O error (pipeline-cache files).
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Maps a failed Vulkan call. Out-of-memory codes become [`Error::OutOfDeviceMemory`] so callers
    /// can tell "too big for this device" from a driver failure; a lost device is
    /// [`Error::DeviceLost`].
    pub(crate) fn vk(call: &'static str, result: vk::Result) -> Self {
        match result {
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
                Error::OutOfDeviceMemory { what: call, bytes: 0 }
            }
            vk::Result::ERROR_DEVICE_LOST => Error::DeviceLost { call },
            result => Error::Vulkan { call, result },
        }
    }
}

fn fmt_reasons(reasons: &[(String, Vec<String>)]) -> String {
    if reasons.is_empty() {
        return " no Vulkan devices were found".into();
    }
    reasons
        .iter()
        .map(|(dev, why)| format!("\n  {dev}: missing {}", why.join(", ")))
        .collect()
}

fn fmt_configs(configs: &[GPUSubgroupMatrixConfig]) -> String {
    if configs.is_empty() {
        return "none".into();
    }
    configs.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
}
