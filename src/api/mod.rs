//! The public calls: one description of the work ([`Matmul`]), the operands it takes of every
//! residency ([`Input`], [`Output`]: host views [`MatRef`] and [`MatMut`], [`DeviceMatrix`],
//! batches, pinned and the caller's buffers), the verbs over it ([`Context::run`],
//! [`Context::prepare`] and [`Prepared`]), options, and the free [`gemm`] on a lazily created
//! default context. Thin: each call validates, plans and delegates.

mod argument;
#[cfg(feature = "ndarray")]
mod arrays;
mod batch;
mod batched;
mod context;
mod copies;
mod dist;
mod fused;
mod grouped;
mod grouped_counted;
mod kept;
mod matmul;
mod matrix;
mod matrix_vector;
mod operand;
mod options;
mod pinned;
mod prepared;
mod quant;
mod quant_chunks;
mod quant_grouped;
mod routing;
mod run;
mod schemes;
mod self_test;
mod stored;
mod work;

pub(crate) use argument::{input, output, In, Out};
pub use argument::{Input, Output};
pub use batch::{BatchMut, BatchRef, DeviceBatch};
pub(crate) use context::RunMark;
pub use context::{Context, MAX_SPLIT_K};
pub use dist::DistMatrix;
pub(crate) use dist::DistPart;
pub use fused::{Activation, Axis, EpilogueVector, Fused};
pub use matmul::Matmul;
pub(crate) use matrix::{check_download_target, check_matrix, poison_pattern, unpack, unpack_rows};
pub use matrix::{DeviceMatrix, Element, MatMut, MatRef};
pub use operand::{BufferMatrix, DeviceOperand};
pub use options::{ContextOptions, GemmOptions};
pub use pinned::PinnedMatrix;
pub(crate) use pinned::{Direct, Lines};
pub use prepared::{Prepared, RecordedGemm};
pub use quant::{QuantMatrix, QuantRef};
pub(crate) use schemes::lock_tuning;

use crate::error::Result;
use std::sync::{Arc, Mutex};

static DEFAULT_CONTEXT: Mutex<Option<Arc<Context>>> = Mutex::new(None);

/// The lazily created default context (best device, or `VK_SGMAT_DEVICE`). A failed creation is
/// not cached: the next call tries again.
pub fn default_context() -> Result<Arc<Context>> {
    let mut slot = DEFAULT_CONTEXT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = slot.as_ref() {
        return Ok(c.clone());
    }
    let c = Arc::new(Context::new()?);
    *slot = Some(c.clone());
    Ok(c)
}

/// `c = a * b` on the default context.
pub fn gemm<TA: Element, TB: Element, TC: Element>(
    a: MatRef<'_, TA>,
    b: MatRef<'_, TB>,
    c: MatMut<'_, TC>,
) -> Result<()> {
    default_context()?.run(&Matmul::new(), a, b, c)
}
