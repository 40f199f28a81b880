//! `VK_NV_cooperative_matrix2`, which ash 0.38 predates: its structures (sType values from the
//! Vulkan registry), and the one query it adds. Everything else sees [`CooperativeMatrix2`].

use super::Instance;
use crate::config::{CooperativeMatrix2, FlexibleDimensions, MatrixScope, RawComponent};
use crate::error::{Error, Result};
use ash::vk;
use std::ffi::{c_void, CStr};

/// The extension's name.
pub(crate) const EXTENSION: &CStr = c"VK_NV_cooperative_matrix2";

const QUERY: &CStr = c"vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV";

/// `VkPhysicalDeviceCooperativeMatrix2FeaturesNV`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct Features {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub workgroup_scope: vk::Bool32,
    pub flexible_dimensions: vk::Bool32,
    pub reductions: vk::Bool32,
    pub conversions: vk::Bool32,
    pub per_element_operations: vk::Bool32,
    pub tensor_addressing: vk::Bool32,
    pub block_loads: vk::Bool32,
}

impl Default for Features {
    fn default() -> Self {
        Self {
            // VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV
            s_type: vk::StructureType::from_raw(1_000_593_000),
            p_next: std::ptr::null_mut(),
            workgroup_scope: vk::FALSE,
            flexible_dimensions: vk::FALSE,
            reductions: vk::FALSE,
            conversions: vk::FALSE,
            per_element_operations: vk::FALSE,
            tensor_addressing: vk::FALSE,
            block_loads: vk::FALSE,
        }
    }
}

impl Features {
    /// Exactly what the workgroup-scope GEMM kernel uses; `per_element` for fused epilogues.
    pub fn for_kernels(per_element: bool) -> Self {
        Self {
            workgroup_scope: vk::TRUE,
            flexible_dimensions: vk::TRUE,
            tensor_addressing: vk::TRUE,
            per_element_operations: if per_element { vk::TRUE } else { vk::FALSE },
            ..Default::default()
        }
    }
}

// SAFETY: starts with sType/pNext; the registry lists it as extending VkPhysicalDeviceFeatures2
// and VkDeviceCreateInfo.
unsafe impl vk::ExtendsPhysicalDeviceFeatures2 for Features {}
// SAFETY: as above.
unsafe impl vk::ExtendsDeviceCreateInfo for Features {}

/// `VkPhysicalDeviceCooperativeMatrix2PropertiesNV`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct Properties {
    pub s_type: vk::StructureType,
    pub p_next: *mut c_void,
    pub workgroup_scope_max_workgroup_size: u32,
    pub flexible_dimensions_max_dimension: u32,
    pub workgroup_scope_reserved_shared_memory: u32,
}

impl Default for Properties {
    fn default() -> Self {
        Self {
            // VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV
            s_type: vk::StructureType::from_raw(1_000_593_002),
            p_next: std::ptr::null_mut(),
            workgroup_scope_max_workgroup_size: 0,
            flexible_dimensions_max_dimension: 0,
            workgroup_scope_reserved_shared_memory: 0,
        }
    }
}

// SAFETY: starts with sType/pNext; the registry lists it as extending VkPhysicalDeviceProperties2.
unsafe impl vk::ExtendsPhysicalDeviceProperties2 for Properties {}

/// `VkCooperativeMatrixFlexibleDimensionsPropertiesNV`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
struct FlexibleDimensionsRaw {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    m_granularity: u32,
    n_granularity: u32,
    k_granularity: u32,
    a_type: vk::ComponentTypeKHR,
    b_type: vk::ComponentTypeKHR,
    c_type: vk::ComponentTypeKHR,
    result_type: vk::ComponentTypeKHR,
    saturating_accumulation: vk::Bool32,
    scope: vk::ScopeKHR,
    workgroup_invocations: u32,
}

impl Default for FlexibleDimensionsRaw {
    fn default() -> Self {
        Self {
            // VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV
            s_type: vk::StructureType::from_raw(1_000_593_001),
            p_next: std::ptr::null_mut(),
            m_granularity: 0,
            n_granularity: 0,
            k_granularity: 0,
            a_type: vk::ComponentTypeKHR::default(),
            b_type: vk::ComponentTypeKHR::default(),
            c_type: vk::ComponentTypeKHR::default(),
            result_type: vk::ComponentTypeKHR::default(),
            saturating_accumulation: vk::FALSE,
            scope: vk::ScopeKHR::default(),
            workgroup_invocations: 0,
        }
    }
}

type QueryFn = unsafe extern "system" fn(vk::PhysicalDevice, *mut u32, *mut FlexibleDimensionsRaw) -> vk::Result;

/// Reads the flexible-dimension list; empty when the loader does not know the query.
fn flexible_dimensions(instance: &Instance, pdev: vk::PhysicalDevice) -> Result<Vec<FlexibleDimensions>> {
    // SAFETY: a plain proc-address lookup on a live instance.
    let f = unsafe {
        instance
            .entry()
            .get_instance_proc_addr(instance.raw().handle(), QUERY.as_ptr())
    };
    let Some(f) = f else {
        return Ok(Vec::new());
    };
    // SAFETY: the registry gives the command this signature.
    let query: QueryFn = unsafe { std::mem::transmute::<unsafe extern "system" fn(), QueryFn>(f) };
    let fail = |r| Error::vk("vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV", r);
    let mut count = 0u32;
    // SAFETY: the count query with a null array.
    unsafe { query(pdev, &mut count, std::ptr::null_mut()) }
        .result()
        .map_err(fail)?;
    // Every element's sType must be set before the second call (drivers read it).
    let mut raw = vec![FlexibleDimensionsRaw::default(); count as usize];
    // SAFETY: `raw` holds `count` initialised elements.
    unsafe { query(pdev, &mut count, raw.as_mut_ptr()) }
        .result()
        .map_err(fail)?;
    raw.truncate(count as usize);
    Ok(raw
        .iter()
        .map(|p| FlexibleDimensions {
            m_granularity: p.m_granularity,
            n_granularity: p.n_granularity,
            k_granularity: p.k_granularity,
            a_type: RawComponent::from_vk(p.a_type),
            b_type: RawComponent::from_vk(p.b_type),
            c_type: RawComponent::from_vk(p.c_type),
            result_type: RawComponent::from_vk(p.result_type),
            saturating_accumulation: p.saturating_accumulation == vk::TRUE,
            scope: MatrixScope::from_vk(p.scope),
            workgroup_invocations: p.workgroup_invocations,
        })
        .collect())
}

/// Everything the extension reports, from the feature and property structs the caller chained
/// into its own queries.
pub(crate) fn describe(
    instance: &Instance,
    pdev: vk::PhysicalDevice,
    features: &Features,
    properties: &Properties,
) -> Result<CooperativeMatrix2> {
    let b = |v: vk::Bool32| v == vk::TRUE;
    Ok(CooperativeMatrix2 {
        workgroup_scope: b(features.workgroup_scope),
        flexible_dimensions: b(features.flexible_dimensions),
        reductions: b(features.reductions),
        conversions: b(features.conversions),
        per_element_operations: b(features.per_element_operations),
        tensor_addressing: b(features.tensor_addressing),
        block_loads: b(features.block_loads),
        workgroup_scope_max_workgroup_size: properties.workgroup_scope_max_workgroup_size,
        flexible_dimensions_max_dimension: properties.flexible_dimensions_max_dimension,
        workgroup_scope_reserved_shared_memory: properties.workgroup_scope_reserved_shared_memory,
        flexible: if b(features.flexible_dimensions) {
            flexible_dimensions(instance, pdev)?
        } else {
            Vec::new()
        },
    })
}
