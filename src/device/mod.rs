//! Device layer: the Vulkan instance, what each physical device offers for cooperative matrices,
//! ranking and selection, and the logical device with exactly the features the kernels need.
//!
//! [`DeviceInfo`] is plain data (serialisable, testable without a GPU); [`Instance`] and [`Device`]
//! own the Vulkan handles.

mod info;
mod instance;
mod logical;
mod nv_coopmat2;
mod query;
mod requirements;

#[cfg(test)]
pub(crate) use info::test_device;
pub use info::{
    evaluate_requirements, rank_devices, ComputeLimits, DeviceFeatures, DeviceInfo, DeviceKind, DeviceLimits,
    Requirement,
};
pub use instance::{Instance, InstanceOptions, ValidationMessages};
pub(crate) use logical::QueueRef;
pub use logical::{AdoptedDevice, Device, MAX_COPY_QUEUES};
pub(crate) use query::query_device;
pub use requirements::{DeviceRequirements, EnabledFeatures, FeatureChain};

/// How to choose a device.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum DeviceSelector {
    /// The best-ranked usable device (discrete > integrated > virtual > CPU).
    #[default]
    Best,
    /// The device at this index of [`Instance::devices`] (enumeration order).
    Index(usize),
    /// The first usable device whose name contains this (case-insensitive).
    Name(String),
}

impl DeviceSelector {
    /// Parses a selector as given on the command line or in `VK_SGMAT_DEVICE`: digits are an index,
    /// anything else a name substring, empty means best.
    pub fn parse(s: &str) -> Self {
        let s = s.trim();
        if s.is_empty() {
            Self::Best
        } else if let Ok(i) = s.parse() {
            Self::Index(i)
        } else {
            Self::Name(s.to_string())
        }
    }

    /// The selector from `VK_SGMAT_DEVICE`, or [`DeviceSelector::Best`].
    pub fn from_env() -> Self {
        device_env().map_or(Self::Best, |s| Self::parse(&s))
    }
}

/// `VK_SGMAT_DEVICE`, the one setting the library reads from the environment (a device index or
/// name, or for several GPUs a list of them), where it is set.
pub(crate) fn device_env() -> Option<String> {
    std::env::var("VK_SGMAT_DEVICE").ok()
}
