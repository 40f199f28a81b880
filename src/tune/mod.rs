//! Tuning and timing, never on the path of a plain `gemm` call unless asked for: the autotuner
//! and its on-disk memory ([`ContextOptions::autotune`](crate::ContextOptions::autotune)), GPU
//! timing with timestamps, warm-up, and the diagnostic probes.

mod cache;
mod search;
pub(crate) mod timing;

pub(crate) use cache::TuneCache;
pub use timing::{GemmStep, StreamTiming, Timing, Timings};
