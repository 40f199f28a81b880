//! The public calls: [`Context`] and its GEMMs, host views ([`MatRef`], [`MatMut`]),
//! [`DeviceMatrix`], options, and the free [`gemm`] on a lazily created default context. Thin:
//! each call validates, plans and delegates.

#[cfg(feature = "ndarray")]
mod arrays;
mod batch;
mod batch_fused;
mod context;
mod fused;
mod grouped;
mod grouped_counted;
mod grouped_fused;
mod interop;
mod kept;
mod matrix;
mod operand;
mod options;
mod pinned;
mod routing;
mod schemes;
mod stored;

pub use batch::{BatchMut, BatchOperand, BatchRef, DeviceBatch};
pub(crate) use context::RunMark;
pub use context::{Context, MAX_SPLIT_K};
pub use fused::{Activation, Axis, EpilogueVector, Fused};
pub use interop::RecordedGemm;
pub(crate) use matrix::{check_download_target, check_matrix, unpack, unpack_rows};
pub use matrix::{DeviceMatrix, Element, MatMut, MatRef};
pub(crate) use operand::placed;
pub use operand::{BufferMatrix, DeviceOperand};
pub use options::{ContextOptions, GemmOptions};
pub(crate) use pinned::Direct;
pub use pinned::PinnedMatrix;

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
    default_context()?.gemm(a, b, c)
}
