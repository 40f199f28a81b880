//! vk-sgmat: large matrix multiplies on the GPU's matrix units through Vulkan cooperative matrices
//! (`VK_KHR_cooperative_matrix`, and `VK_NV_cooperative_matrix2` where offered).
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
//!
//! Many GEMMs in flight on a [`Stream`], one submission, no host wait between them:
//!
//! ```no_run
//! # use half::f16;
//! # use vk_sgmat::{Context, GemmOptions, MatRef};
//! # let (m, n, k) = (64, 64, 64);
//! # let (a, b) = (vec![f16::ONE; m * k], vec![f16::ONE; k * n]);
//! let ctx = Context::new()?;
//! let mut s = ctx.stream()?;
//! let (x, w) = (s.upload(MatRef::new(&a, m, k))?, s.upload(MatRef::new(&b, k, n))?);
//! let mut y = ctx.zeros::<f32>(m, n)?;
//! s.gemm(&x, &w, &mut y, &GemmOptions::default())?;
//! let result = s.download(&y)?;
//! s.submit()?;
//! let c: Vec<f32> = result.wait()?;
//! # Ok::<(), vk_sgmat::Error>(())
//! ```
//!
//! Data flows one way, each step its own module:
//!
//! | step | module | |
//! | --- | --- | --- |
//! | device | [`device`] | instance, devices and what they offer, the logical device (ours or the caller's) |
//! | config | [`config`] | cooperative-matrix properties filtered into [`GPUSubgroupMatrixConfig`]s (pure) |
//! | kernel | [`kernel`] | SPIR-V GEMM kernels generated per config and [`tiling`] scheme (pure) |
//! | plan | [`plan`] | a GEMM as plain data: dispatches, windows, push constants, barriers (pure) |
//! | record | (internal) | plan + buffers -> commands in any command buffer |
//! | submit | [`Stream`], [`Ticket`] | queues, timeline semaphores, ordering, lifetimes |
//! | API | [`Context`], [`gemm()`] | validation, then plan, record, submit |
//!
//! One GEMM over several GPUs: [`MultiContext`] (docs/runtime.md, "Several GPUs").
//!
//! docs/runtime.md in the repository explains streams, bringing your own device, and the
//! synchronisation contract of [`Context::record_gemm`].
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod api;
pub mod config;
pub mod device;
pub mod error;
pub mod kernel;
mod memory;
pub mod multi;
mod peak;
mod pipeline;
mod pipeline_file;
pub mod plan;
mod record;
mod stream;
mod submit;
pub mod tiling;
mod timestamps;
mod tune;
pub mod verify;

pub use api::{
    default_context, gemm, Activation, Axis, BatchMut, BatchOperand, BatchRef, BufferMatrix, Context, ContextOptions,
    DeviceBatch, DeviceMatrix, DeviceOperand, Element, EpilogueVector, Fused, GemmOptions, MatMut, MatRef,
    PinnedMatrix, RecordedGemm, MAX_SPLIT_K,
};
pub use config::{ComponentType, GPUSubgroupMatrixConfig};
pub use device::DeviceSelector;
pub use error::{Error, Result};
pub use kernel::Probe;
pub use multi::{
    DeviceSet, DistMatrix, HostTimes, MultiContext, PipelineStep, PipelineTrace, Role, Split, SplitKind, TraceStep,
};
pub use peak::{FillResult, PeakResult};
pub use pipeline_file::PipelineCacheFile;
pub use plan::{ComputeMode, MAX_DIM};
pub use stream::{Download, Stream};
pub use submit::Ticket;
pub use tiling::Layout;
pub use timestamps::median;
pub use tune::{GemmStep, StreamTiming};
