//! Problem -> plan: what a GEMM will dispatch, as plain data (passes, workgroup counts, buffer
//! windows, split-K slices). Pure: nothing here touches Vulkan, so every rule is unit-tested
//! without a device.

pub mod passes;

pub use passes::{choose_split_k, plan, plan_split_k, DispatchLimits, Pass, Problem, Window};
