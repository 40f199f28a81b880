//! Tuning and timing, never on the path of a plain `gemm` call unless asked for: the autotuner
//! ([`Context::tune`](crate::Context::tune), whose winners `tiling::TuneCache` keeps), GPU
//! timing with timestamps, warm-up, and the diagnostic probes.

mod search;
pub(crate) mod timing;

pub use timing::{GemmStep, StreamTiming, Timing, Timings};
