//! Pure device facts: what was queried, which requirements hold, and how devices rank.

use crate::config::{CooperativeMatrix2, FilteredConfigs, GPUSubgroupMatrixConfig, RawMatrixProperty};
use serde::Serialize;

/// Kind of physical device, in ranking order (best first).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// A discrete GPU.
    Discrete,
    /// An integrated GPU.
    Integrated,
    /// A virtual GPU.
    Virtual,
    /// A CPU implementation (lavapipe, SwiftShader).
    Cpu,
    /// Anything else.
    Other,
}

/// Feature bits the kernels depend on (each from the struct that reports it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceFeatures {
    /// The device advertises `VK_KHR_cooperative_matrix`.
    pub ext_cooperative_matrix: bool,
    /// `VkPhysicalDeviceCooperativeMatrixFeaturesKHR::cooperativeMatrix`.
    pub cooperative_matrix: bool,
    /// `...::cooperativeMatrixRobustBufferAccess` (reported, not used: the kernels bound-check).
    pub cooperative_matrix_robust_buffer_access: bool,
    /// `cooperativeMatrixSupportedStages` includes the compute stage.
    pub cooperative_matrix_compute_stage: bool,
    /// `vulkanMemoryModel` (Vulkan 1.2).
    pub vulkan_memory_model: bool,
    /// `vulkanMemoryModelDeviceScope` (Vulkan 1.2).
    pub vulkan_memory_model_device_scope: bool,
    /// `shaderFloat16` (Vulkan 1.2).
    pub shader_float16: bool,
    /// `shaderInt8` (Vulkan 1.2).
    pub shader_int8: bool,
    /// `storageBuffer16BitAccess` (Vulkan 1.1).
    pub storage_buffer_16bit_access: bool,
    /// `storageBuffer8BitAccess` (Vulkan 1.2).
    pub storage_buffer_8bit_access: bool,
    /// `subgroupSizeControl` (Vulkan 1.3).
    pub subgroup_size_control: bool,
    /// `computeFullSubgroups` (Vulkan 1.3).
    pub compute_full_subgroups: bool,
    /// `shaderIntegerDotProduct` (Vulkan 1.3): packed 8-bit dot products, which the 8-bit
    /// kernel without matrix units multiplies with where enabled.
    pub shader_integer_dot_product: bool,
    /// The device advertises `VK_KHR_shader_bfloat16`.
    pub ext_shader_bfloat16: bool,
    /// `shaderBFloat16Type`.
    pub shader_bfloat16_type: bool,
    /// `shaderBFloat16CooperativeMatrix`.
    pub shader_bfloat16_cooperative_matrix: bool,
    /// The device advertises `VK_NV_cooperative_matrix2` (see [`DeviceInfo::cooperative_matrix2`]).
    pub ext_nv_cooperative_matrix2: bool,
    /// `VK_KHR_pipeline_executable_properties`'s `pipelineExecutableInfo` (kernel statistics).
    pub pipeline_executable_info: bool,
    /// The device advertises `VK_KHR_push_descriptor` (every dispatch pushes its bindings, so
    /// recording into any command buffer needs no descriptor memory).
    pub ext_push_descriptor: bool,
    /// `timelineSemaphore` (Vulkan 1.2): streams signal one.
    pub timeline_semaphore: bool,
    /// The device advertises `VK_EXT_external_memory_host` (optional: devices with it copy
    /// [`PinnedMatrix`](crate::PinnedMatrix) memory in place).
    pub ext_external_memory_host: bool,
}

/// Limits the planner and tile schemes are checked against.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeviceLimits {
    /// Default subgroup size (`VkPhysicalDeviceSubgroupProperties::subgroupSize`).
    pub subgroup_size: u32,
    /// `minSubgroupSize` (subgroup size control).
    pub min_subgroup_size: u32,
    /// `maxSubgroupSize`.
    pub max_subgroup_size: u32,
    /// Whether `requiredSubgroupSizeStages` includes compute.
    pub required_subgroup_size_compute: bool,
    /// `maxComputeSharedMemorySize` in bytes.
    pub max_shared_memory: u32,
    /// `maxComputeWorkGroupInvocations`.
    pub max_workgroup_invocations: u32,
    /// `maxComputeWorkGroupSize`.
    pub max_workgroup_size: [u32; 3],
    /// `maxComputeWorkGroupCount`.
    pub max_workgroup_count: [u32; 3],
    /// `maxStorageBufferRange` in bytes.
    pub max_storage_buffer_range: u32,
    /// `minStorageBufferOffsetAlignment` in bytes.
    pub min_storage_buffer_offset_alignment: u64,
    /// `maxPushConstantsSize` in bytes.
    pub max_push_constants_size: u32,
    /// `maxMemoryAllocationSize` in bytes.
    pub max_memory_allocation_size: u64,
    /// `timestampPeriod` in nanoseconds per tick.
    pub timestamp_period: f32,
}

/// Tighter compute limits to plan as a smaller device would
/// ([`ContextOptions::compute_limits`](crate::ContextOptions::compute_limits)): each replaces the
/// device's own where smaller.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ComputeLimits {
    /// Shared memory per workgroup in bytes (small GPUs have 16 or 32 KiB).
    pub max_shared_memory: u32,
    /// Invocations per workgroup (and along its X side; small GPUs allow 256).
    pub max_workgroup_invocations: u32,
    /// `false`: as a device without `storageBuffer16BitAccess` (some mobile and older GPUs):
    /// the feature is not enabled, f16 configs are filtered out as Dawn's rule asks (f16
    /// operands then take the kernels without matrix units, which read 16-bit values as 32-bit
    /// words), and a 16-bit result is a typed error (an f32 one works).
    pub storage_buffer_16bit_access: bool,
}

impl DeviceInfo {
    /// This device as one with `to`'s tighter limits and features would be.
    pub fn within(mut self, to: &ComputeLimits) -> Self {
        self.limits = self.limits.within(to);
        if !to.storage_buffer_16bit_access {
            self.features.storage_buffer_16bit_access = false;
            // Filtered again only where matrix units were usable: a device whose requirements
            // for them were unmet (lavapipe at subgroup 4 or 16) lists raw properties it cannot
            // run, and its configs stay empty.
            if self.has_matrix_units() {
                self.configs = crate::config::filter_configs(&self.raw_properties, self.features.filter_features());
            }
        }
        self
    }
}

impl DeviceFeatures {
    /// What the config filter asks of these features.
    pub fn filter_features(&self) -> crate::config::FilterFeatures {
        crate::config::FilterFeatures {
            shader_f16: self.shader_float16 && self.storage_buffer_16bit_access,
            bf16_cooperative_matrix: self.shader_bfloat16_type && self.shader_bfloat16_cooperative_matrix,
            fp8_cooperative_matrix: false,
        }
    }
}

impl DeviceLimits {
    /// These limits, no larger than `to`'s.
    pub fn within(mut self, to: &ComputeLimits) -> Self {
        self.max_shared_memory = self.max_shared_memory.min(to.max_shared_memory);
        self.max_workgroup_invocations = self.max_workgroup_invocations.min(to.max_workgroup_invocations);
        self.max_workgroup_size[0] = self.max_workgroup_size[0].min(to.max_workgroup_invocations);
        self
    }
}

/// One requirement for running the GEMM kernels, and whether the device meets it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// What is required, in Vulkan's words.
    pub name: &'static str,
    /// Whether the device meets it.
    pub met: bool,
    /// Needed for the matrix units only: a device that misses it runs f32 GEMMs on the exact
    /// kernel and offers no cooperative-matrix config.
    pub matrix_units: bool,
}

/// Everything vk-sgmat knows about one physical device. JSON field names are stable (they are the
/// `vk-sgmat info --json` format, documented in README.md).
#[derive(Clone, Debug, Serialize)]
pub struct DeviceInfo {
    /// Index in enumeration order.
    pub index: usize,
    /// `deviceName`.
    pub name: String,
    /// Device kind.
    pub kind: DeviceKind,
    /// PCI vendor id.
    pub vendor_id: u32,
    /// Device id.
    pub device_id: u32,
    /// Device API version as "major.minor.patch".
    pub api_version: String,
    /// Raw driver version.
    pub driver_version: u32,
    /// `VkDriverId` as a number (stable across releases).
    pub driver_id: i32,
    /// `driverName`.
    pub driver_name: String,
    /// `driverInfo` (for Mesa, the version).
    pub driver_info: String,
    /// `pipelineCacheUUID` in hex.
    pub pipeline_cache_uuid: String,
    /// `deviceUUID` in hex (the same physical device across processes and drivers).
    pub device_uuid: String,
    /// Feature bits.
    pub features: DeviceFeatures,
    /// Limits.
    pub limits: DeviceLimits,
    /// The driver's cooperative-matrix property list, unfiltered.
    pub raw_properties: Vec<RawMatrixProperty>,
    /// The filtered configurations.
    pub configs: FilteredConfigs,
    /// What `VK_NV_cooperative_matrix2` offers, where the device has it: the workgroup-scope
    /// kernels use it.
    pub cooperative_matrix2: Option<CooperativeMatrix2>,
    /// Each requirement and whether it is met.
    pub requirements: Vec<Requirement>,
}

impl DeviceInfo {
    /// Whether every requirement of the kernels without matrix units holds (f32 GEMMs on the
    /// exact kernel run).
    pub fn usable(&self) -> bool {
        self.requirements.iter().all(|r| r.met || r.matrix_units)
    }

    /// Whether the matrix units are usable too (then the device has configs).
    pub fn has_matrix_units(&self) -> bool {
        self.usable() && matrix_units_met(&self.requirements)
    }

    /// The requirements that do not hold and keep the device from being used.
    pub fn missing(&self) -> Vec<String> {
        self.requirements
            .iter()
            .filter(|r| !r.met && !r.matrix_units)
            .map(|r| r.name.to_string())
            .collect()
    }

    /// Standard and extended configs together.
    pub fn all_configs(&self) -> Vec<GPUSubgroupMatrixConfig> {
        self.configs.all().copied().collect()
    }
}

/// Whether every requirement of the matrix units holds (the others aside).
pub fn matrix_units_met(requirements: &[Requirement]) -> bool {
    requirements.iter().all(|r| r.met || !r.matrix_units)
}

/// `VK_DRIVER_ID_INTEL_OPEN_SOURCE_MESA`.
const DRIVER_ID_INTEL_MESA: i32 = 6;
/// `VK_DRIVER_ID_MESA_LLVMPIPE`.
const DRIVER_ID_MESA_LLVMPIPE: i32 = 13;

/// Evaluates the requirements (Dawn's gating plus a non-empty config list). `api_1_3` says whether
/// the device supports Vulkan 1.3 (the feature structs used here are core 1.3).
pub fn evaluate_requirements(
    features: &DeviceFeatures,
    api_1_3: bool,
    (driver_id, driver_info): (i32, &str),
    max_subgroup_size: u32,
    configs: &FilteredConfigs,
) -> Vec<Requirement> {
    let r = |name, met| Requirement {
        name,
        met,
        matrix_units: false,
    };
    // Needed for the matrix units only.
    let m = |name, met| Requirement {
        name,
        met,
        matrix_units: true,
    };
    vec![
        r("Vulkan 1.3", api_1_3),
        m("VK_KHR_cooperative_matrix", features.ext_cooperative_matrix),
        m("cooperativeMatrix", features.cooperative_matrix),
        m(
            "cooperativeMatrixSupportedStages has COMPUTE",
            features.cooperative_matrix_compute_stage,
        ),
        r("vulkanMemoryModel", features.vulkan_memory_model),
        r(
            "vulkanMemoryModelDeviceScope",
            features.vulkan_memory_model_device_scope,
        ),
        r("subgroupSizeControl", features.subgroup_size_control),
        r("computeFullSubgroups", features.compute_full_subgroups),
        r("timelineSemaphore", features.timeline_semaphore),
        r("VK_KHR_push_descriptor", features.ext_push_descriptor),
        m(
            "driver not blocklisted (Intel Mesa < 25.2 mishandles coopmat init)",
            !(driver_id == DRIVER_ID_INTEL_MESA && mesa_version_below(driver_info, (25, 2))),
        ),
        // Mesa 26.1 lavapipe with LP_NATIVE_VECTOR_WIDTH=512 runs subgroups of 16 and crashes
        // (SIGSEGV inside libvulkan_lvp) creating any pipeline with cooperative matrices, our
        // register-only `peak` kernel included, whatever the pipeline's subgroup flags; it builds
        // pipelines without them (the split-K reduction) at that width (docs/devices.md).
        m(
            "driver not blocklisted (lavapipe crashes creating cooperative-matrix pipelines at subgroup size 16)",
            !(driver_id == DRIVER_ID_MESA_LLVMPIPE && max_subgroup_size > 8),
        ),
        m("at least one cooperative-matrix config", configs.all().next().is_some()),
    ]
}

/// Parses "Mesa 25.1.3" style driver info; unknown formats count as new enough.
fn mesa_version_below(info: &str, min: (u32, u32)) -> bool {
    let Some(v) = info
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
    else {
        return false;
    };
    let mut parts = v
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => (major, minor) < min,
        _ => false,
    }
}

/// Orders devices best first: usable before unusable, with matrix units before without, then
/// discrete > integrated > virtual > CPU, then enumeration order.
pub fn rank_devices(devices: &mut [DeviceInfo]) {
    devices.sort_by_key(|d| (!d.usable(), !d.has_matrix_units(), d.kind, d.index));
}

/// A device with these limits and `VK_NV_cooperative_matrix2` facts, for unit tests.
#[cfg(test)]
pub(crate) fn test_device(limits: DeviceLimits, cooperative_matrix2: Option<CooperativeMatrix2>) -> DeviceInfo {
    DeviceInfo {
        index: 0,
        name: "test device".into(),
        kind: DeviceKind::Discrete,
        vendor_id: 0,
        device_id: 0,
        api_version: "1.3.0".into(),
        driver_version: 0,
        driver_id: 0,
        driver_name: String::new(),
        driver_info: String::new(),
        pipeline_cache_uuid: String::new(),
        device_uuid: String::new(),
        features: DeviceFeatures::default(),
        limits,
        raw_properties: vec![],
        configs: FilteredConfigs::default(),
        cooperative_matrix2,
        requirements: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{filter_configs, tests::lavapipe_list, FilterFeatures};

    fn all_features() -> DeviceFeatures {
        DeviceFeatures {
            ext_cooperative_matrix: true,
            cooperative_matrix: true,
            cooperative_matrix_compute_stage: true,
            vulkan_memory_model: true,
            vulkan_memory_model_device_scope: true,
            subgroup_size_control: true,
            compute_full_subgroups: true,
            shader_float16: true,
            timeline_semaphore: true,
            ext_push_descriptor: true,
            ..Default::default()
        }
    }

    fn configs() -> FilteredConfigs {
        filter_configs(
            &lavapipe_list(),
            FilterFeatures {
                shader_f16: true,
                ..Default::default()
            },
        )
    }

    #[test]
    fn all_met() {
        let reqs = evaluate_requirements(&all_features(), true, (13, "Mesa 26.1.0"), 8, &configs());
        assert!(reqs.iter().all(|r| r.met), "{reqs:?}");
    }

    #[test]
    fn names_exactly_what_is_missing() {
        let f = DeviceFeatures {
            compute_full_subgroups: false,
            vulkan_memory_model_device_scope: false,
            ..all_features()
        };
        let reqs = evaluate_requirements(&f, true, (13, ""), 8, &FilteredConfigs::default());
        let missing: Vec<_> = reqs.iter().filter(|r| !r.met).map(|r| r.name).collect();
        assert_eq!(
            missing,
            [
                "vulkanMemoryModelDeviceScope",
                "computeFullSubgroups",
                "at least one cooperative-matrix config"
            ]
        );
        // Only the first two keep the device from being used: no configs means no matrix units.
        let d = DeviceInfo {
            requirements: reqs,
            ..test_device(DeviceLimits::default(), None)
        };
        assert_eq!(d.missing(), ["vulkanMemoryModelDeviceScope", "computeFullSubgroups"]);
        assert!(!d.usable() && !d.has_matrix_units());
    }

    #[test]
    fn intel_mesa_blocklist() {
        let old = evaluate_requirements(
            &all_features(),
            true,
            (DRIVER_ID_INTEL_MESA, "Mesa 25.1.4"),
            32,
            &configs(),
        );
        assert!(old.iter().any(|r| !r.met));
        let new = evaluate_requirements(
            &all_features(),
            true,
            (DRIVER_ID_INTEL_MESA, "Mesa 25.2.0"),
            32,
            &configs(),
        );
        assert!(new.iter().all(|r| r.met));
    }

    #[test]
    fn lavapipe_at_subgroup_16_keeps_only_the_f32_kernel() {
        let at = |sg| evaluate_requirements(&all_features(), true, (13, "Mesa 26.1.6"), sg, &configs());
        assert!(at(8).iter().all(|r| r.met));
        let unmet: Vec<_> = at(16).into_iter().filter(|r| !r.met).collect();
        assert_eq!(unmet.len(), 1, "{unmet:?}");
        assert!(
            unmet[0].name.contains("subgroup size 16") && unmet[0].matrix_units,
            "{unmet:?}"
        );
        // Usable (the exact f32 kernel and the split-K reduction build there), without matrix units.
        let d = DeviceInfo {
            requirements: at(16),
            ..test_device(DeviceLimits::default(), None)
        };
        assert!(d.usable() && !d.has_matrix_units() && d.missing().is_empty());
        // Other drivers at 16 (Intel) are not affected.
        let intel = evaluate_requirements(
            &all_features(),
            true,
            (DRIVER_ID_INTEL_MESA, "Mesa 26.0"),
            16,
            &configs(),
        );
        assert!(intel.iter().all(|r| r.met));
    }

    #[test]
    fn without_16bit_storage_keeps_unusable_matrix_units_unused() {
        let limits = ComputeLimits {
            max_shared_memory: u32::MAX,
            max_workgroup_invocations: u32::MAX,
            storage_buffer_16bit_access: false,
        };
        let at = |sg| DeviceInfo {
            features: all_features(),
            raw_properties: lavapipe_list(),
            configs: configs(),
            requirements: evaluate_requirements(&all_features(), true, (13, "Mesa 26.1.6"), sg, &configs()),
            ..test_device(DeviceLimits::default(), None)
        };
        // Usable matrix units lose their f16 configs and keep the others.
        let d = at(8).within(&limits);
        assert!(!d.features.storage_buffer_16bit_access);
        assert!(d.configs.all().next().is_some());
        assert!(d
            .configs
            .all()
            .all(|c| c.component_type != crate::config::ComponentType::F16));
        // Unusable ones (subgroup 16) had none and get none back from their raw properties.
        let mut d = at(16);
        d.configs = FilteredConfigs::default();
        assert!(!d.has_matrix_units());
        assert!(d.within(&limits).configs.all().next().is_none());
    }

    #[test]
    fn ranking() {
        let mk = |index, kind, usable: bool| DeviceInfo {
            index,
            name: format!("d{index}"),
            kind,
            requirements: vec![Requirement {
                name: "x",
                met: usable,
                matrix_units: false,
            }],
            ..test_device(DeviceLimits::default(), None)
        };
        let mut v = vec![
            mk(0, DeviceKind::Cpu, true),
            mk(1, DeviceKind::Discrete, false),
            mk(2, DeviceKind::Integrated, true),
            mk(3, DeviceKind::Discrete, true),
        ];
        rank_devices(&mut v);
        let order: Vec<_> = v.iter().map(|d| d.index).collect();
        assert_eq!(order, [3, 2, 0, 1]);
        // A usable GPU without matrix units ranks after a CPU driver with them.
        let mut no_units = mk(4, DeviceKind::Discrete, true);
        no_units.requirements.push(Requirement {
            name: "VK_KHR_cooperative_matrix",
            met: false,
            matrix_units: true,
        });
        let mut v = vec![no_units, mk(5, DeviceKind::Cpu, true)];
        rank_devices(&mut v);
        assert_eq!(v.iter().map(|d| d.index).collect::<Vec<_>>(), [5, 4]);
    }
}
