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
//! Everything else is one description of the work, [`Matmul`], and a few verbs over it. The
//! operands say where the data lives (host slices, [`DeviceMatrix`], batches, pinned memory, your
//! own buffers); the description says what to compute:
//!
//! ```no_run
//! # use half::f16;
//! # use vk_sgmat::{Activation, Axis, Context, MatMut, MatRef, Matmul};
//! # let (m, n, k) = (64, 64, 64);
//! # let (a, b, bias) = (vec![f16::ONE; m * k], vec![f16::ONE; k * n], vec![0f32; n]);
//! let ctx = Context::new()?;
//! let layer = Matmul::new().bias(Axis::Col, &bias).activation(Activation::Silu);
//! let mut c = vec![0f32; m * n];
//! ctx.run(&layer, MatRef::new(&a, m, k), MatRef::new(&b, k, n), MatMut::new(&mut c, m, n))?;
//!
//! // Many GEMMs in flight on a stream, one submission, no host wait between them.
//! let mut s = ctx.stream()?;
//! let (x, w) = (s.upload(MatRef::new(&a, m, k))?, s.upload(MatRef::new(&b, k, n))?);
//! let mut y = ctx.zeros::<f32>(m, n)?;
//! s.run(&layer, &x, &w, &mut y)?;
//! let result = s.download(&y)?;
//! s.submit()?;
//! let c: Vec<f32> = result.wait()?;
//!
//! // Prepared once (pipelines created now), then run, recorded into any command buffer, or
//! // timed as often as needed.
//! let gemm = ctx.prepare(&layer, &x, &w, &mut y)?;
//! gemm.run()?;
//! # Ok::<(), vk_sgmat::Error>(())
//! ```
//!
//! | verb | does |
//! | --- | --- |
//! | [`Context::run`] | runs a [`Matmul`] now and waits |
//! | [`Stream::run`] | enqueues it on a stream |
//! | [`MultiContext::run`] | splits it over several GPUs |
//! | [`Context::prepare`] | plans it and creates its pipelines, once |
//! | [`Prepared::run`], [`Prepared::record`], [`Prepared::time`] | runs, records into your command buffer, times |
//! | [`Context::tune`] | autotunes its tile scheme into the tuning file |
//!
//! Planning ([`Context::plan`]) is pure: plain data from the description, the shapes and the
//! device's facts, computed without compiling or running anything.
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
//! | API | [`Matmul`], [`Context`], [`gemm()`] | validation, then plan, record, submit |
//!
//! One GEMM over several GPUs: [`MultiContext`] (docs/runtime.md, "Several GPUs").
//!
//! docs/runtime.md in the repository explains streams, bringing your own device, and the
//! synchronisation contract of [`Prepared::record`].
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod api;
mod compile_helper;
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
pub mod quant;
mod record;
mod selftest;
mod stream;
mod submit;
mod sync;
pub mod tiling;
mod timestamps;
mod tune;

pub use api::{
    default_context, gemm, Activation, Axis, BatchMut, BatchRef, BufferMatrix, Context, ContextOptions, DeviceBatch,
    DeviceMatrix, DeviceOperand, DistMatrix, Element, EpilogueVector, Fused, GemmOptions, Input, MatMut, MatRef,
    Matmul, Output, PinnedMatrix, Prepared, QuantMatrix, QuantRef, RecordedGemm, MAX_SPLIT_K,
};
pub use compile_helper::{serve_helper_if_asked, CompileReport, HelperCommand, PipelineCompiler, HELPER_ARG};
pub use config::{ComponentType, GPUSubgroupMatrixConfig};
pub use device::DeviceSelector;
pub use error::{Error, Result};
pub use kernel::Probe;
pub use multi::{DeviceSet, HostTimes, MultiContext, PipelineStep, PipelineTrace, Role, Split, SplitKind, TraceStep};
pub use peak::{FillResult, PeakResult};
pub use pipeline_file::PipelineCacheFile;
pub use plan::{ComputeMode, MAX_DIM};
pub use selftest::{DroppedConfig, SelfTestReport};
pub use stream::{Download, Stream};
pub use submit::Ticket;
pub use tiling::Layout;
pub use timestamps::median;
pub use tune::{GemmStep, StreamTiming, Timing, Timings};
