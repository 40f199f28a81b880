//! Device facts for the pure tests: the H200's and lavapipe's limits as their drivers report them.

use crate::config::ComponentType::*;
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::DeviceLimits;

pub(crate) fn cfg(
    m: u32,
    n: u32,
    k: u32,
    ab: crate::ComponentType,
    r: crate::ComponentType,
) -> GPUSubgroupMatrixConfig {
    GPUSubgroupMatrixConfig {
        component_type: ab,
        result_type: r,
        m,
        n,
        k,
    }
}

pub(crate) fn h200_limits() -> DeviceLimits {
    DeviceLimits {
        subgroup_size: 32,
        min_subgroup_size: 32,
        max_subgroup_size: 32,
        required_subgroup_size_compute: true,
        max_shared_memory: 49152,
        max_workgroup_invocations: 1024,
        max_workgroup_size: [1024, 1024, 64],
        max_workgroup_count: [2147483647, 65535, 65535],
        max_storage_buffer_range: u32::MAX,
        min_storage_buffer_offset_alignment: 16,
        max_push_constants_size: 256,
        max_memory_allocation_size: u64::MAX,
        timestamp_period: 1.0,
    }
}

pub(crate) fn lavapipe_limits() -> DeviceLimits {
    DeviceLimits {
        subgroup_size: 8,
        min_subgroup_size: 8,
        max_subgroup_size: 8,
        max_shared_memory: 65536,
        max_workgroup_invocations: 1024,
        max_workgroup_size: [1024, 1024, 1024],
        max_workgroup_count: [65535, 65535, 65535],
        max_storage_buffer_range: 1 << 31,
        min_storage_buffer_offset_alignment: 16,
        ..h200_limits()
    }
}

/// The H200's coopmat2 facts for f16 -> f32 and f16 -> f16 as its driver reports them (`vk-sgmat info`,
/// docs/devices/h200-info.txt), with the dimension cap lowered to test it.
pub(crate) fn h200_with_cm2() -> crate::device::DeviceInfo {
    use crate::config::{CooperativeMatrix2, FlexibleDimensions, MatrixScope, RawComponent};
    let entry = |(mg, ng), inv, scope| FlexibleDimensions {
        m_granularity: mg,
        n_granularity: ng,
        k_granularity: 16,
        a_type: RawComponent::Known(F16),
        b_type: RawComponent::Known(F16),
        c_type: RawComponent::Known(F32),
        result_type: RawComponent::Known(F32),
        saturating_accumulation: false,
        scope,
        workgroup_invocations: inv,
    };
    let cm2 = CooperativeMatrix2 {
        workgroup_scope: true,
        flexible_dimensions: true,
        tensor_addressing: true,
        workgroup_scope_max_workgroup_size: 256,
        flexible_dimensions_max_dimension: 256,
        workgroup_scope_reserved_shared_memory: 8192,
        flexible: [F32, F16]
            .into_iter()
            .flat_map(|r| {
                let typed = move |mut e: FlexibleDimensions| {
                    e.c_type = RawComponent::Known(r);
                    e.result_type = RawComponent::Known(r);
                    e
                };
                [
                    entry((16, 16), 0, MatrixScope::Subgroup),
                    entry((16, 16), 32, MatrixScope::Workgroup),
                    entry((16, 16), 64, MatrixScope::Workgroup),
                    entry((32, 16), 128, MatrixScope::Workgroup),
                    entry((32, 32), 256, MatrixScope::Workgroup),
                ]
                .map(typed)
            })
            .collect(),
        ..Default::default()
    };
    let mut info = crate::device::test_device(h200_limits(), Some(cm2));
    info.vendor_id = crate::tiling::preferred::VENDOR_NVIDIA;
    info.features.storage_buffer_8bit_access = true;
    info.features.storage_buffer_16bit_access = true;
    info
}

/// Adds to `info` an 8-bit workgroup-scope entry as the H200 lists them (`ab` x `ab` -> `c`,
/// 32x32x32 granularity) for workgroups of `invocations`.
pub(crate) fn push_int8_entry(
    info: &mut crate::device::DeviceInfo,
    (ab, c): (crate::ComponentType, crate::ComponentType),
    invocations: u32,
) {
    use crate::config::{MatrixScope, RawComponent};
    let cm2 = info.cooperative_matrix2.as_mut().expect("a coopmat2 device");
    let mut entry = cm2.flexible[0];
    (entry.m_granularity, entry.n_granularity, entry.k_granularity) = (32, 32, 32);
    (entry.a_type, entry.b_type) = (RawComponent::Known(ab), RawComponent::Known(ab));
    (entry.c_type, entry.result_type) = (RawComponent::Known(c), RawComponent::Known(c));
    (entry.scope, entry.workgroup_invocations) = (MatrixScope::Workgroup, invocations);
    cm2.flexible.push(entry);
}
