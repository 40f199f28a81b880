//! Exactly what vk-sgmat enables on a device: the extensions and feature bits its kernels and
//! streams use, as plain data ([`DeviceRequirements::for_device`]). vk-sgmat creates its own
//! devices with them, and a program that creates its own `VkDevice` adds them to its
//! `vkCreateDevice` ([`FeatureChain`]) before handing the device to
//! [`Context::from_raw`](crate::Context::from_raw), which checks them. One optional extension
//! is not listed: `VK_EXT_external_memory_host`, enabled where offered, lets devices import
//! [`PinnedMatrix`](crate::PinnedMatrix) memory; an adopted device without it stages those
//! matrices instead.

use super::nv_coopmat2;
use super::query::{Bf16Features, EXT_SHADER_BFLOAT16};
use super::{query_device, DeviceInfo, Instance};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use ash::vk;
use serde::Serialize;
use std::ffi::CStr;

/// Feature bits vk-sgmat enables, each named after its Vulkan feature.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct EnabledFeatures {
    /// `storageBuffer16BitAccess` (Vulkan 1.1).
    pub storage_buffer_16bit_access: bool,
    /// `shaderFloat16` (Vulkan 1.2).
    pub shader_float16: bool,
    /// `shaderInt8` (Vulkan 1.2).
    pub shader_int8: bool,
    /// `storageBuffer8BitAccess` (Vulkan 1.2).
    pub storage_buffer_8bit_access: bool,
    /// `vulkanMemoryModel` (Vulkan 1.2).
    pub vulkan_memory_model: bool,
    /// `vulkanMemoryModelDeviceScope` (Vulkan 1.2).
    pub vulkan_memory_model_device_scope: bool,
    /// `timelineSemaphore` (Vulkan 1.2).
    pub timeline_semaphore: bool,
    /// `subgroupSizeControl` (Vulkan 1.3).
    pub subgroup_size_control: bool,
    /// `computeFullSubgroups` (Vulkan 1.3).
    pub compute_full_subgroups: bool,
    /// `shaderIntegerDotProduct` (Vulkan 1.3; optional: the 8-bit kernel without matrix units
    /// widens to 32-bit products without it).
    pub shader_integer_dot_product: bool,
    /// `cooperativeMatrix` (`VK_KHR_cooperative_matrix`).
    pub cooperative_matrix: bool,
    /// `shaderBFloat16Type` and `shaderBFloat16CooperativeMatrix` (`VK_KHR_shader_bfloat16`).
    pub shader_bfloat16: bool,
    /// `cooperativeMatrixWorkgroupScope`, `cooperativeMatrixFlexibleDimensions` and
    /// `cooperativeMatrixTensorAddressing` (`VK_NV_cooperative_matrix2`).
    pub nv_cooperative_matrix2: bool,
    /// `cooperativeMatrixPerElementOperations` (`VK_NV_cooperative_matrix2`; optional: fused
    /// epilogues run on workgroup-scope kernels with it, on subgroup-scope ones without).
    pub nv_per_element_operations: bool,
    /// `pipelineExecutableInfo` (`VK_KHR_pipeline_executable_properties`; optional, for kernel
    /// statistics).
    pub pipeline_executable_info: bool,
}

impl EnabledFeatures {
    /// The names of the bits set in `self` but not in `enabled`.
    pub fn missing_from(&self, enabled: &EnabledFeatures) -> Vec<&'static str> {
        let pairs = [
            (
                self.storage_buffer_16bit_access,
                enabled.storage_buffer_16bit_access,
                "storageBuffer16BitAccess",
            ),
            (self.shader_float16, enabled.shader_float16, "shaderFloat16"),
            (self.shader_int8, enabled.shader_int8, "shaderInt8"),
            (
                self.storage_buffer_8bit_access,
                enabled.storage_buffer_8bit_access,
                "storageBuffer8BitAccess",
            ),
            (
                self.vulkan_memory_model,
                enabled.vulkan_memory_model,
                "vulkanMemoryModel",
            ),
            (
                self.vulkan_memory_model_device_scope,
                enabled.vulkan_memory_model_device_scope,
                "vulkanMemoryModelDeviceScope",
            ),
            (self.timeline_semaphore, enabled.timeline_semaphore, "timelineSemaphore"),
            (
                self.subgroup_size_control,
                enabled.subgroup_size_control,
                "subgroupSizeControl",
            ),
            (
                self.compute_full_subgroups,
                enabled.compute_full_subgroups,
                "computeFullSubgroups",
            ),
            (self.cooperative_matrix, enabled.cooperative_matrix, "cooperativeMatrix"),
            (
                self.shader_bfloat16,
                enabled.shader_bfloat16,
                "shaderBFloat16CooperativeMatrix",
            ),
            (
                self.nv_cooperative_matrix2,
                enabled.nv_cooperative_matrix2,
                "VK_NV_cooperative_matrix2 workgroup scope, flexible dimensions and tensor addressing",
            ),
        ];
        pairs.into_iter().filter(|p| p.0 && !p.1).map(|p| p.2).collect()
    }
}

/// The extensions and features vk-sgmat uses on one physical device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceRequirements {
    /// Device extensions to enable.
    #[serde(serialize_with = "names")]
    pub extensions: Vec<&'static CStr>,
    /// Feature bits to enable.
    pub features: EnabledFeatures,
}

fn names<S: serde::Serializer>(v: &[&'static CStr], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|c| c.to_string_lossy()))
}

impl DeviceRequirements {
    /// What vk-sgmat enables on the device `info` describes: the features its configs need
    /// (8-bit and bf16 types only where a config uses them; 16-bit storage and f16 arithmetic
    /// wherever offered, for 16-bit results; `VK_NV_cooperative_matrix2` where usable),
    /// plus the memory model, subgroup control, timeline semaphores and push descriptors.
    pub fn for_device(info: &DeviceInfo) -> Self {
        let uses = |t: ComponentType| info.configs.all().any(|c| c.component_type == t || c.result_type == t);
        let f16 = uses(ComponentType::F16);
        let int8 = uses(ComponentType::I8) || uses(ComponentType::U8);
        let bf16 = uses(ComponentType::Bf16);
        // The workgroup-scope kernels read A and B through arrays of their element type.
        let cm2 = info.cooperative_matrix2.as_ref().is_some_and(|c| c.usable());
        let features = EnabledFeatures {
            // f16 configs imply 16-bit storage (the config filter requires it); without them the
            // kernels without matrix units store 16-bit C where the device has both.
            storage_buffer_16bit_access: f16 || info.features.storage_buffer_16bit_access,
            shader_float16: f16 || info.features.shader_float16,
            shader_int8: int8,
            storage_buffer_8bit_access: int8 && cm2 && info.features.storage_buffer_8bit_access,
            vulkan_memory_model: true,
            vulkan_memory_model_device_scope: true,
            timeline_semaphore: true,
            subgroup_size_control: true,
            compute_full_subgroups: true,
            shader_integer_dot_product: info.features.shader_integer_dot_product,
            cooperative_matrix: info.has_matrix_units(),
            shader_bfloat16: bf16,
            nv_cooperative_matrix2: cm2,
            nv_per_element_operations: cm2
                && info
                    .cooperative_matrix2
                    .as_ref()
                    .is_some_and(|c| c.per_element_operations),
            pipeline_executable_info: info.features.pipeline_executable_info,
        };
        let mut extensions = vec![ash::khr::push_descriptor::NAME];
        if info.has_matrix_units() {
            extensions.push(ash::khr::cooperative_matrix::NAME);
        }
        if bf16 {
            extensions.push(EXT_SHADER_BFLOAT16);
        }
        if cm2 {
            extensions.push(nv_coopmat2::EXTENSION);
        }
        if features.pipeline_executable_info {
            extensions.push(ash::khr::pipeline_executable_properties::NAME);
        }
        Self { extensions, features }
    }

    /// What vk-sgmat needs on `physical_device` of an instance the caller created, to add to its
    /// own `vkCreateDevice`, with the device's facts; [`Error::DeviceUnusable`] (naming what is
    /// missing) for a device vk-sgmat cannot use.
    ///
    /// # Safety
    /// `entry`, `instance` and `physical_device` must be valid; the instance Vulkan 1.3 or later.
    pub unsafe fn query(
        entry: &ash::Entry,
        instance: &ash::Instance,
        physical_device: vk::PhysicalDevice,
    ) -> Result<(Self, DeviceInfo)> {
        // SAFETY: forwarded; the adopted wrapper never destroys the instance.
        let wrapped = unsafe { Instance::adopt(entry.clone(), instance.clone()) };
        let info = query_device(&wrapped, physical_device, 0)?;
        if !info.usable() {
            return Err(Error::DeviceUnusable {
                device: info.name.clone(),
                missing: info.missing(),
            });
        }
        Ok((Self::for_device(&info), info))
    }

    /// The feature structs to chain into `vkCreateDevice` (see [`FeatureChain::push_onto`]).
    pub fn feature_chain(&self) -> FeatureChain {
        let f = &self.features;
        let t = |on: bool| if on { vk::TRUE } else { vk::FALSE };
        FeatureChain {
            vulkan11: vk::PhysicalDeviceVulkan11Features::default()
                .storage_buffer16_bit_access(f.storage_buffer_16bit_access),
            vulkan12: vk::PhysicalDeviceVulkan12Features::default()
                .shader_float16(f.shader_float16)
                .shader_int8(f.shader_int8)
                .storage_buffer8_bit_access(f.storage_buffer_8bit_access)
                .vulkan_memory_model(f.vulkan_memory_model)
                .vulkan_memory_model_device_scope(f.vulkan_memory_model_device_scope)
                .timeline_semaphore(f.timeline_semaphore),
            vulkan13: vk::PhysicalDeviceVulkan13Features::default()
                .subgroup_size_control(f.subgroup_size_control)
                .compute_full_subgroups(f.compute_full_subgroups)
                .shader_integer_dot_product(f.shader_integer_dot_product),
            cooperative_matrix: vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default()
                .cooperative_matrix(f.cooperative_matrix),
            bfloat16: f.shader_bfloat16.then(|| Bf16Features {
                shader_bfloat16_type: t(true),
                shader_bfloat16_cooperative_matrix: t(true),
                ..Default::default()
            }),
            nv_cooperative_matrix2: f
                .nv_cooperative_matrix2
                .then(|| nv_coopmat2::Features::for_kernels(f.nv_per_element_operations)),
            pipeline_executable: f.pipeline_executable_info.then(|| {
                vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true)
            }),
        }
    }
}

/// The feature structs of [`DeviceRequirements`], ready to chain into a `VkDeviceCreateInfo`.
/// A program that chains its own `VkPhysicalDeviceVulkan1xFeatures` must instead set these
/// bits in its own structs (Vulkan forbids chaining one struct type twice).
pub struct FeatureChain {
    /// Vulkan 1.1 features.
    pub vulkan11: vk::PhysicalDeviceVulkan11Features<'static>,
    /// Vulkan 1.2 features.
    pub vulkan12: vk::PhysicalDeviceVulkan12Features<'static>,
    /// Vulkan 1.3 features.
    pub vulkan13: vk::PhysicalDeviceVulkan13Features<'static>,
    /// `VK_KHR_cooperative_matrix` features (chained only where `cooperativeMatrix` is on: a
    /// device without usable matrix units runs the f32 kernel alone).
    pub cooperative_matrix: vk::PhysicalDeviceCooperativeMatrixFeaturesKHR<'static>,
    bfloat16: Option<Bf16Features>,
    nv_cooperative_matrix2: Option<nv_coopmat2::Features>,
    pipeline_executable: Option<vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR<'static>>,
}

impl FeatureChain {
    /// Chains every struct onto `create` (whose other fields are the caller's).
    pub fn push_onto<'a>(&'a mut self, create: vk::DeviceCreateInfo<'a>) -> vk::DeviceCreateInfo<'a> {
        let mut create = create
            .push_next(&mut self.vulkan11)
            .push_next(&mut self.vulkan12)
            .push_next(&mut self.vulkan13);
        // Chained only when enabled: a device without the extension must not see its struct.
        if self.cooperative_matrix.cooperative_matrix == vk::TRUE {
            create = create.push_next(&mut self.cooperative_matrix);
        }
        if let Some(f) = &mut self.bfloat16 {
            create = create.push_next(f);
        }
        if let Some(f) = &mut self.nv_cooperative_matrix2 {
            create = create.push_next(f);
        }
        if let Some(f) = &mut self.pipeline_executable {
            create = create.push_next(f);
        }
        create
    }
}
