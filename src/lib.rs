//! vk-sgmat: large matrix multiplies on the GPU's matrix units through Vulkan cooperative matrices
//! (`VK_KHR_cooperative_matrix`).
//!
//! Data flows one way: [`device`] finds devices and filters their cooperative-matrix properties
//! into [`GPUSubgroupMatrixConfig`]s ([`config`]); [`kernel`] generates a tiled SPIR-V GEMM per
//! config and [`tiling`] scheme; the dispatcher runs it over any shape; [`gemm()`] is the call.
//!
//! ```no_run
//! use half::f16;
//! use vk_sgmat::{gemm, MatMut, MatRef};
//!
//! let (m, n, k) = (300, 200, 100);
//! let a = vec![f16::from_f32(0.5); m * k];
//! let b = vec![f16::from_f32(2.0); k * n];
//! let mut c = vec![0.0f32; m * n];
//! gemm(MatRef::new(&a, m, k), MatRef::new(&b, k, n), MatMut::new(&mut c, m, n))?;
//! assert_eq!(c[0], 100.0);
//! # Ok::<(), vk_sgmat::Error>(())
//! ```
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod api;
pub mod config;
pub mod device;
pub mod error;
pub mod kernel;
mod memory;
mod peak;
mod pipeline;
pub mod plan;
mod record;
mod stream;
mod submit;
pub mod tiling;
mod timestamps;
mod tune;
pub mod verify;

pub use api::{
    default_context, gemm, BufferMatrix, Context, ContextOptions, DeviceMatrix, DeviceOperand, Element, GemmOptions,
    MatMut, MatRef, RecordedGemm, MAX_SPLIT_K,
};
pub use config::{ComponentType, GPUSubgroupMatrixConfig};
pub use device::DeviceSelector;
pub use error::{Error, Result};
pub use kernel::Probe;
pub use peak::{FillResult, PeakResult};
pub use plan::MAX_DIM;
pub use stream::{Download, Stream};
pub use submit::Ticket;
pub use tiling::Layout;
pub use timestamps::median;
pub use tune::StreamTiming;
