//! Problem -> plan: what a GEMM will dispatch, as plain data (passes, workgroup counts, buffer
//! windows, push constants, split-K slices and scratch, the kernels it needs). Pure: nothing here
//! touches Vulkan, so every rule is unit-tested without a device.

mod build;
pub mod cut;
mod dequant;
pub use dequant::{
    blocks_cols, dequantized_first, dequantized_first_each, gemv_on_blocks, streams_blocks, BlockReads, Quantized,
};
pub mod gemm;
mod gemv;
pub use gemv::{fit_workgroup_memory, gemv_dispatch, gemv_for_rows};
mod grouped;
mod grouped_decode;
mod input;
pub use grouped::{side_by_side, DeviceCounts};
pub use grouped_decode::counted_decode_rows;
mod narrow;
pub use narrow::{
    conversion_pays, fast_order, relayout_pays, relayout_without_workgroup, Int8Relayout, NtRelayout, INT8_RELAYOUT,
    NT_RELAYOUT,
};
pub mod passes;
mod split;
pub(crate) use split::{check_weights as split_check_weights, pipeline_blocks};
pub use split::{Split, SplitKind, SplitPart};
#[cfg(test)]
mod properties;
pub mod types;

pub use cut::Piece;
pub use gemm::{
    check_shapes, device_ld, device_problem, scalar_bits, Dispatch, GemmPlan, Kernel, Operand, PlanRequest, SplitK,
    MAX_DIM,
};
pub(crate) use passes::disjoint;
pub use passes::{choose_split_k, plan, plan_split_k, Batch, DispatchLimits, Pass, Problem, Window};
pub use types::{f32_paths, route, type_paths, ComputeMode, Route, TYPE_PAIRS};
