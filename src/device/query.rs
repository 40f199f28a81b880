//! Reads one physical device's properties, features and cooperative-matrix list into a
//! [`DeviceInfo`]. All `unsafe` queries of the device layer live here.

use super::info::{evaluate_requirements, matrix_units_met, DeviceFeatures, DeviceInfo, DeviceKind, DeviceLimits};
use super::nv_coopmat2;
use super::Instance;
use crate::config::{filter_configs, FilteredConfigs, RawMatrixProperty};
use crate::error::{Error, Result};
use ash::vk;
use std::ffi::{c_char, c_void, CStr};

/// `VK_KHR_shader_bfloat16`, which ash 0.38 predates.
pub(crate) const EXT_SHADER_BFLOAT16: &CStr = c"VK_KHR_shader_bfloat16";

/// `VkPhysicalDeviceShaderBfloat16FeaturesKHR`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct Bf16Features {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub shader_bfloat16_type: vk::Bool32,
    pub shader_bfloat16_dot_product: vk::Bool32,
    pub shader_bfloat16_cooperative_matrix: vk::Bool32,
}

impl Default for Bf16Features {
    fn default() -> Self {
        Self {
            // VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR
            s_type: vk::StructureType::from_raw(1_000_141_000),
            p_next: std::ptr::null_mut(),
            shader_bfloat16_type: vk::FALSE,
            shader_bfloat16_dot_product: vk::FALSE,
            shader_bfloat16_cooperative_matrix: vk::FALSE,
        }
    }
}

// SAFETY: the struct starts with sType/pNext like every Vulkan input/output structure and the
// registry lists it as extending both VkPhysicalDeviceFeatures2 and VkDeviceCreateInfo.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for Bf16Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for Bf16Features {}

fn c_str(chars: &[c_char]) -> String {
    // SAFETY: Vulkan fixed-size strings are NUL-terminated within their array.
    let bytes: &[u8] = unsafe { std::slice::from_raw_parts(chars.as_ptr().cast(), chars.len()) };
    CStr::from_bytes_until_nul(bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(crate) fn device_extensions(instance: &Instance, pdev: vk::PhysicalDevice) -> Result<Vec<String>> {
    // SAFETY: plain query on a live instance and a device it enumerated.
    let exts = unsafe { instance.raw().enumerate_device_extension_properties(pdev) }
        .map_err(|r| Error::vk("vkEnumerateDeviceExtensionProperties", r))?;
    Ok(exts.iter().map(|e| c_str(&e.extension_name)).collect())
}

/// The device extensions whose features or properties vk-sgmat reads.
struct Extensions {
    coopmat: bool,
    bf16: bool,
    pexec: bool,
    cm2: bool,
    push: bool,
    host_import: bool,
}

impl Extensions {
    fn of(instance: &Instance, pdev: vk::PhysicalDevice) -> Result<Self> {
        let exts = device_extensions(instance, pdev)?;
        let has = |name: &CStr| exts.iter().any(|e| e.as_bytes() == name.to_bytes());
        Ok(Self {
            coopmat: has(ash::khr::cooperative_matrix::NAME),
            bf16: has(EXT_SHADER_BFLOAT16),
            pexec: has(ash::khr::pipeline_executable_properties::NAME),
            cm2: has(nv_coopmat2::EXTENSION),
            push: has(ash::khr::push_descriptor::NAME),
            host_import: has(ash::ext::external_memory_host::NAME),
        })
    }
}

/// The feature and property structures vk-sgmat reads, filled in place by [`Chains::query`]
/// (their `p_next` pointers point at one another, so they are read where they were filled).
#[derive(Default)]
struct Chains {
    f11: vk::PhysicalDeviceVulkan11Features<'static>,
    f12: vk::PhysicalDeviceVulkan12Features<'static>,
    f13: vk::PhysicalDeviceVulkan13Features<'static>,
    fcm: vk::PhysicalDeviceCooperativeMatrixFeaturesKHR<'static>,
    fbf: Bf16Features,
    fpe: vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR<'static>,
    fcm2: nv_coopmat2::Features,
    pcm2: nv_coopmat2::Properties,
    p11: vk::PhysicalDeviceVulkan11Properties<'static>,
    p12: vk::PhysicalDeviceVulkan12Properties<'static>,
    p13: vk::PhysicalDeviceVulkan13Properties<'static>,
    pcm: vk::PhysicalDeviceCooperativeMatrixPropertiesKHR<'static>,
    props: vk::PhysicalDeviceProperties,
}

impl Chains {
    /// Fills every structure the device has: core 1.1-1.3's only where it supports 1.3 (they
    /// may only be chained then), each extension's where it offers the extension.
    fn query(&mut self, raw: &ash::Instance, pdev: vk::PhysicalDevice, api_1_3: bool, ext: &Extensions) {
        let mut props2 = vk::PhysicalDeviceProperties2::default();
        let mut feats2 = vk::PhysicalDeviceFeatures2::default();
        if api_1_3 {
            feats2 = feats2
                .push_next(&mut self.f11)
                .push_next(&mut self.f12)
                .push_next(&mut self.f13);
            props2 = props2
                .push_next(&mut self.p11)
                .push_next(&mut self.p12)
                .push_next(&mut self.p13);
        }
        if ext.coopmat {
            feats2 = feats2.push_next(&mut self.fcm);
            props2 = props2.push_next(&mut self.pcm);
        }
        if ext.bf16 {
            feats2 = feats2.push_next(&mut self.fbf);
        }
        if ext.pexec {
            feats2 = feats2.push_next(&mut self.fpe);
        }
        if ext.cm2 {
            feats2 = feats2.push_next(&mut self.fcm2);
            props2 = props2.push_next(&mut self.pcm2);
        }
        // SAFETY: every chained struct is live and correctly typed for this device's API version.
        unsafe {
            raw.get_physical_device_features2(pdev, &mut feats2);
            raw.get_physical_device_properties2(pdev, &mut props2);
        }
        self.props = props2.properties;
    }

    /// The features vk-sgmat uses, each false where its extension is missing.
    fn features(&self, ext: &Extensions) -> DeviceFeatures {
        let b = |v: vk::Bool32| v == vk::TRUE;
        let (f11, f12, f13) = (&self.f11, &self.f12, &self.f13);
        DeviceFeatures {
            ext_cooperative_matrix: ext.coopmat,
            cooperative_matrix: ext.coopmat && b(self.fcm.cooperative_matrix),
            cooperative_matrix_robust_buffer_access: ext.coopmat && b(self.fcm.cooperative_matrix_robust_buffer_access),
            cooperative_matrix_compute_stage: ext.coopmat
                && self
                    .pcm
                    .cooperative_matrix_supported_stages
                    .contains(vk::ShaderStageFlags::COMPUTE),
            vulkan_memory_model: b(f12.vulkan_memory_model),
            vulkan_memory_model_device_scope: b(f12.vulkan_memory_model_device_scope),
            shader_float16: b(f12.shader_float16),
            shader_int8: b(f12.shader_int8),
            storage_buffer_16bit_access: b(f11.storage_buffer16_bit_access),
            storage_buffer_8bit_access: b(f12.storage_buffer8_bit_access),
            subgroup_size_control: b(f13.subgroup_size_control),
            compute_full_subgroups: b(f13.compute_full_subgroups),
            shader_integer_dot_product: b(f13.shader_integer_dot_product),
            ext_shader_bfloat16: ext.bf16,
            shader_bfloat16_type: ext.bf16 && b(self.fbf.shader_bfloat16_type),
            shader_bfloat16_cooperative_matrix: ext.bf16 && b(self.fbf.shader_bfloat16_cooperative_matrix),
            ext_nv_cooperative_matrix2: ext.cm2,
            pipeline_executable_info: ext.pexec && b(self.fpe.pipeline_executable_info),
            ext_push_descriptor: ext.push,
            ext_external_memory_host: ext.host_import,
            timeline_semaphore: b(f12.timeline_semaphore),
        }
    }
}

/// The device's cooperative-matrix configurations as it lists them (none without the extension).
fn matrix_properties(
    instance: &Instance,
    pdev: vk::PhysicalDevice,
    ext: &Extensions,
) -> Result<Vec<RawMatrixProperty>> {
    if !ext.coopmat {
        return Ok(Vec::new());
    }
    // SAFETY: ash fills a vector of Default-initialised elements, so every element's sType is
    // set before the second call (drivers crash otherwise: Vulkan-Docs #2613).
    let list = unsafe {
        instance
            .cooperative_matrix()
            .get_physical_device_cooperative_matrix_properties(pdev)
    }
    .map_err(|r| Error::vk("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR", r))?;
    Ok(list.iter().map(RawMatrixProperty::from_vk).collect())
}

/// Queries everything vk-sgmat needs to know about `pdev`.
pub(crate) fn query_device(instance: &Instance, pdev: vk::PhysicalDevice, index: usize) -> Result<DeviceInfo> {
    let ext = Extensions::of(instance, pdev)?;
    // SAFETY: plain query.
    let api_1_3 = unsafe { instance.raw().get_physical_device_properties(pdev) }.api_version >= vk::API_VERSION_1_3;
    let mut c = Chains::default();
    c.query(instance.raw(), pdev, api_1_3, &ext);
    let raw_properties = matrix_properties(instance, pdev, &ext)?;
    let cooperative_matrix2 = if ext.cm2 && ext.coopmat {
        Some(nv_coopmat2::describe(instance, pdev, &c.fcm2, &c.pcm2)?)
    } else {
        None
    };
    let features = c.features(&ext);
    let props = &c.props;
    let limits = DeviceLimits::from_vk(&props.limits, &c.p11, &c.p13);
    let configs = filter_configs(&raw_properties, features.filter_features());
    let driver_info = c_str(&c.p12.driver_info);
    let requirements = evaluate_requirements(
        &features,
        api_1_3,
        (c.p12.driver_id.as_raw(), &driver_info),
        c.p13.max_subgroup_size,
        &configs,
    );
    // Without usable matrix units (no extension, or a driver that crashes on them) the device
    // offers no configs: every path that needs one reports NoConfig, and f32 runs the exact kernel.
    let (configs, cooperative_matrix2) = if matrix_units_met(&requirements) {
        (configs, cooperative_matrix2)
    } else {
        (FilteredConfigs::default(), None)
    };
    let v = props.api_version;
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(DeviceInfo {
        index,
        name: c_str(&props.device_name),
        kind: DeviceKind::from_vk(props.device_type),
        vendor_id: props.vendor_id,
        device_id: props.device_id,
        api_version: format!(
            "{}.{}.{}",
            vk::api_version_major(v),
            vk::api_version_minor(v),
            vk::api_version_patch(v)
        ),
        driver_version: props.driver_version,
        driver_id: c.p12.driver_id.as_raw(),
        driver_name: c_str(&c.p12.driver_name),
        driver_info,
        pipeline_cache_uuid: hex(&props.pipeline_cache_uuid),
        device_uuid: hex(&c.p11.device_uuid),
        features,
        limits,
        raw_properties,
        configs,
        cooperative_matrix2,
        requirements,
    })
}

impl DeviceLimits {
    /// The limits vk-sgmat plans within, from the device's core limits and its Vulkan 1.1 and
    /// 1.3 properties (zero where the device is older: nothing then plans within them).
    fn from_vk(
        l: &vk::PhysicalDeviceLimits,
        p11: &vk::PhysicalDeviceVulkan11Properties<'_>,
        p13: &vk::PhysicalDeviceVulkan13Properties<'_>,
    ) -> Self {
        Self {
            subgroup_size: p11.subgroup_size,
            min_subgroup_size: p13.min_subgroup_size,
            max_subgroup_size: p13.max_subgroup_size,
            required_subgroup_size_compute: p13
                .required_subgroup_size_stages
                .contains(vk::ShaderStageFlags::COMPUTE),
            max_shared_memory: l.max_compute_shared_memory_size,
            max_workgroup_invocations: l.max_compute_work_group_invocations,
            max_workgroup_size: l.max_compute_work_group_size,
            max_workgroup_count: l.max_compute_work_group_count,
            max_storage_buffer_range: l.max_storage_buffer_range,
            min_storage_buffer_offset_alignment: l.min_storage_buffer_offset_alignment,
            max_push_constants_size: l.max_push_constants_size,
            max_memory_allocation_size: p11.max_memory_allocation_size,
            timestamp_period: l.timestamp_period,
        }
    }
}

impl DeviceKind {
    /// The kind of a Vulkan physical device type.
    fn from_vk(t: vk::PhysicalDeviceType) -> Self {
        match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => DeviceKind::Discrete,
            vk::PhysicalDeviceType::INTEGRATED_GPU => DeviceKind::Integrated,
            vk::PhysicalDeviceType::VIRTUAL_GPU => DeviceKind::Virtual,
            vk::PhysicalDeviceType::CPU => DeviceKind::Cpu,
            _ => DeviceKind::Other,
        }
    }
}
