//! vk-sgmat: large matrix multiplies on the GPU's matrix units through Vulkan cooperative matrices.
#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod config;
pub mod device;
pub mod error;
pub mod kernel;
pub mod tiling;

pub use config::{ComponentType, GPUSubgroupMatrixConfig};
pub use error::{Error, Result};
