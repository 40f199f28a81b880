//! Cooperative-matrix configurations: the element types, the raw property list a driver reports, and
//! the filter that turns it into [`GPUSubgroupMatrixConfig`]s. Everything here is pure: the device
//! layer converts `VkCooperativeMatrixPropertiesKHR` into [`RawMatrixProperty`] at the edge.

use ash::vk;
use serde::Serialize;
use std::fmt;

/// `VK_COMPONENT_TYPE_BFLOAT16_KHR` (VK_KHR_shader_bfloat16); ash 0.38 predates it.
pub const COMPONENT_TYPE_BFLOAT16_KHR: i32 = 1_000_141_000;
/// `VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT` (VK_EXT_shader_float8).
pub const COMPONENT_TYPE_FLOAT8_E4M3_EXT: i32 = 1_000_491_002;
/// `VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT` (VK_EXT_shader_float8).
pub const COMPONENT_TYPE_FLOAT8_E5M2_EXT: i32 = 1_000_491_003;

/// An element type of a cooperative matrix.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ComponentType {
    /// IEEE binary16.
    F16,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// bfloat16 (our extension beyond Dawn's set).
    Bf16,
    /// fp8 E4M3 (our extension).
    F8E4M3,
    /// fp8 E5M2 (our extension).
    F8E5M2,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
}

impl ComponentType {
    /// Converts a Vulkan component type; `None` for values this library does not know.
    pub fn from_vk(t: vk::ComponentTypeKHR) -> Option<Self> {
        Some(match t {
            vk::ComponentTypeKHR::FLOAT16 => Self::F16,
            vk::ComponentTypeKHR::FLOAT32 => Self::F32,
            vk::ComponentTypeKHR::FLOAT64 => Self::F64,
            vk::ComponentTypeKHR::SINT8 => Self::I8,
            vk::ComponentTypeKHR::SINT16 => Self::I16,
            vk::ComponentTypeKHR::SINT32 => Self::I32,
            vk::ComponentTypeKHR::SINT64 => Self::I64,
            vk::ComponentTypeKHR::UINT8 => Self::U8,
            vk::ComponentTypeKHR::UINT16 => Self::U16,
            vk::ComponentTypeKHR::UINT32 => Self::U32,
            vk::ComponentTypeKHR::UINT64 => Self::U64,
            t if t.as_raw() == COMPONENT_TYPE_BFLOAT16_KHR => Self::Bf16,
            t if t.as_raw() == COMPONENT_TYPE_FLOAT8_E4M3_EXT => Self::F8E4M3,
            t if t.as_raw() == COMPONENT_TYPE_FLOAT8_E5M2_EXT => Self::F8E5M2,
            _ => return None,
        })
    }

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> u32 {
        match self {
            Self::I8 | Self::U8 | Self::F8E4M3 | Self::F8E5M2 => 1,
            Self::F16 | Self::Bf16 | Self::I16 | Self::U16 => 2,
            Self::F32 | Self::I32 | Self::U32 => 4,
            Self::F64 | Self::I64 | Self::U64 => 8,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Self::F16 | Self::F32 | Self::F64 | Self::Bf16 | Self::F8E4M3 | Self::F8E5M2
        )
    }

    /// Whether this is a signed integer type.
    pub fn is_signed_int(self) -> bool {
        matches!(self, Self::I8 | Self::I16 | Self::I32 | Self::I64)
    }

    /// Dawn's subgroup-matrix element types: f32, f16, u32, i32, u8, i8.
    pub fn is_dawn_type(self) -> bool {
        matches!(
            self,
            Self::F32 | Self::F16 | Self::U32 | Self::I32 | Self::U8 | Self::I8
        )
    }

    /// The short name used in the CLI and in messages ("f16", "bf16", "i8", ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::F16 => "f16",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::Bf16 => "bf16",
            Self::F8E4M3 => "f8e4m3",
            Self::F8E5M2 => "f8e5m2",
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::U8 => "u8",
            Self::U16 => "u16",
            Self::U32 => "u32",
            Self::U64 => "u64",
        }
    }

    /// Parses [`ComponentType::name`] (also accepts "s8"/"s32" for i8/i32).
    pub fn parse(s: &str) -> Option<Self> {
        let all = [
            Self::F16,
            Self::F32,
            Self::F64,
            Self::Bf16,
            Self::F8E4M3,
            Self::F8E5M2,
            Self::I8,
            Self::I16,
            Self::I32,
            Self::I64,
            Self::U8,
            Self::U16,
            Self::U32,
            Self::U64,
        ];
        let s = s.to_ascii_lowercase();
        let s = match s.as_str() {
            "s8" => "i8",
            "s32" => "i32",
            other => other,
        };
        all.into_iter().find(|t| t.name() == s)
    }
}

impl fmt::Display for ComponentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A component type as reported by the driver: known, or a raw value we do not recognise.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum RawComponent {
    /// A type this library knows.
    Known(ComponentType),
    /// An unknown `VkComponentTypeKHR` value.
    Unknown(i32),
}

impl RawComponent {
    /// Converts a Vulkan component type.
    pub fn from_vk(t: vk::ComponentTypeKHR) -> Self {
        ComponentType::from_vk(t).map_or(Self::Unknown(t.as_raw()), Self::Known)
    }

    fn known(self) -> Option<ComponentType> {
        match self {
            Self::Known(t) => Some(t),
            Self::Unknown(_) => None,
        }
    }
}

impl fmt::Display for RawComponent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Known(t) => t.fmt(f),
            Self::Unknown(v) => write!(f, "type#{v}"),
        }
    }
}

impl Serialize for RawComponent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// Scope of a cooperative-matrix property.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MatrixScope {
    /// `VK_SCOPE_SUBGROUP_KHR`: the only scope the KHR kernels use.
    Subgroup,
    /// `VK_SCOPE_WORKGROUP_KHR`.
    Workgroup,
    /// `VK_SCOPE_DEVICE_KHR`.
    Device,
    /// `VK_SCOPE_QUEUE_FAMILY_KHR`.
    QueueFamily,
    /// Anything else.
    Other(i32),
}

impl MatrixScope {
    /// Converts a Vulkan scope.
    pub fn from_vk(s: vk::ScopeKHR) -> Self {
        match s {
            vk::ScopeKHR::SUBGROUP => Self::Subgroup,
            vk::ScopeKHR::WORKGROUP => Self::Workgroup,
            vk::ScopeKHR::DEVICE => Self::Device,
            vk::ScopeKHR::QUEUE_FAMILY => Self::QueueFamily,
            other => Self::Other(other.as_raw()),
        }
    }
}

/// One entry of `vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR`, in our own types.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct RawMatrixProperty {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
    /// Element type of A.
    pub a_type: RawComponent,
    /// Element type of B.
    pub b_type: RawComponent,
    /// Element type of C.
    pub c_type: RawComponent,
    /// Element type of the result.
    pub result_type: RawComponent,
    /// Whether accumulation saturates.
    pub saturating_accumulation: bool,
    /// Scope of the matrices.
    pub scope: MatrixScope,
}

impl RawMatrixProperty {
    /// Converts the Vulkan struct (pure: only reads fields).
    pub fn from_vk(p: &vk::CooperativeMatrixPropertiesKHR<'_>) -> Self {
        Self {
            m: p.m_size,
            n: p.n_size,
            k: p.k_size,
            a_type: RawComponent::from_vk(p.a_type),
            b_type: RawComponent::from_vk(p.b_type),
            c_type: RawComponent::from_vk(p.c_type),
            result_type: RawComponent::from_vk(p.result_type),
            saturating_accumulation: p.saturating_accumulation == vk::TRUE,
            scope: MatrixScope::from_vk(p.scope),
        }
    }
}

impl fmt::Display for RawMatrixProperty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{} A={} B={} C={} R={} scope={:?}{}",
            self.m,
            self.n,
            self.k,
            self.a_type,
            self.b_type,
            self.c_type,
            self.result_type,
            self.scope,
            if self.saturating_accumulation {
                " saturating"
            } else {
                ""
            }
        )
    }
}

/// One entry of `vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV`
/// (`VK_NV_cooperative_matrix2`), in our own types: matrices of these types may have any
/// dimensions that are multiples of the granularities.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct FlexibleDimensions {
    /// Rows of A and C must be a multiple of this.
    pub m_granularity: u32,
    /// Columns of B and C must be a multiple of this.
    pub n_granularity: u32,
    /// Columns of A and rows of B must be a multiple of this.
    pub k_granularity: u32,
    /// Element type of A.
    pub a_type: RawComponent,
    /// Element type of B.
    pub b_type: RawComponent,
    /// Element type of C.
    pub c_type: RawComponent,
    /// Element type of the result.
    pub result_type: RawComponent,
    /// Whether accumulation saturates.
    pub saturating_accumulation: bool,
    /// Scope of the matrices.
    pub scope: MatrixScope,
    /// For workgroup scope, the workgroup size (in invocations) these dimensions need.
    pub workgroup_invocations: u32,
}

/// What `VK_NV_cooperative_matrix2` offers on a device (features, properties and the
/// flexible-dimension list). The workgroup-scope GEMM kernel needs [`Self::usable`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CooperativeMatrix2 {
    /// `cooperativeMatrixWorkgroupScope`.
    pub workgroup_scope: bool,
    /// `cooperativeMatrixFlexibleDimensions`.
    pub flexible_dimensions: bool,
    /// `cooperativeMatrixReductions`.
    pub reductions: bool,
    /// `cooperativeMatrixConversions`.
    pub conversions: bool,
    /// `cooperativeMatrixPerElementOperations` (cleared on an adopted device whose creator did
    /// not enable it: fused epilogues on workgroup-scope kernels need it).
    pub per_element_operations: bool,
    /// `cooperativeMatrixTensorAddressing`.
    pub tensor_addressing: bool,
    /// `cooperativeMatrixBlockLoads`.
    pub block_loads: bool,
    /// `cooperativeMatrixWorkgroupScopeMaxWorkgroupSize`.
    pub workgroup_scope_max_workgroup_size: u32,
    /// `cooperativeMatrixFlexibleDimensionsMaxDimension`.
    pub flexible_dimensions_max_dimension: u32,
    /// `cooperativeMatrixWorkgroupScopeReservedSharedMemory` in bytes.
    pub workgroup_scope_reserved_shared_memory: u32,
    /// The flexible-dimension list, unfiltered.
    pub flexible: Vec<FlexibleDimensions>,
}

impl CooperativeMatrix2 {
    /// Whether the features the workgroup-scope kernel uses are all there.
    pub fn usable(&self) -> bool {
        self.workgroup_scope && self.flexible_dimensions && self.tensor_addressing
    }

    /// The workgroup-scope entries usable for `config`'s types (A == B, C == result, not
    /// saturating), as (granularity M, N, K, workgroup invocations).
    pub fn workgroup_entries(&self, config: &GPUSubgroupMatrixConfig) -> Vec<(u32, u32, u32, u32)> {
        if !self.usable() {
            return Vec::new();
        }
        let (ab, res) = (
            RawComponent::Known(config.component_type),
            RawComponent::Known(config.result_type),
        );
        self.flexible
            .iter()
            .filter(|f| {
                f.scope == MatrixScope::Workgroup
                    && !f.saturating_accumulation
                    && f.a_type == ab
                    && f.b_type == ab
                    && f.c_type == res
                    && f.result_type == res
            })
            .map(|f| {
                (
                    f.m_granularity,
                    f.n_granularity,
                    f.k_granularity,
                    f.workgroup_invocations,
                )
            })
            .collect()
    }
}

/// A cooperative-matrix configuration usable by the GEMM kernels: A and B of `component_type`,
/// C and the result of `result_type`, fragment shape M x N x K, subgroup scope.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[allow(clippy::upper_case_acronyms)]
pub struct GPUSubgroupMatrixConfig {
    /// Element type of A and B.
    pub component_type: ComponentType,
    /// Element type of C and of the result.
    pub result_type: ComponentType,
    /// Rows of the A and C fragments.
    pub m: u32,
    /// Columns of the B and C fragments.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
}

/// The config the kernels without matrix units carry (`kernel::Load::Simt`): f32 in and out. Its
/// 8x8x8 "fragments" only size a scheme's tile (`sg_m * fr_m * 8` rows); no matrix unit runs
/// them. Here, below the tiling layer that sizes tiles by it.
pub const SIMT_CONFIG: GPUSubgroupMatrixConfig = GPUSubgroupMatrixConfig {
    component_type: ComponentType::F32,
    result_type: ComponentType::F32,
    m: 8,
    n: 8,
    k: 8,
};

/// The config the kernels without matrix units carry for A and B of `component`
/// (`kernel::Load::Simt` and `kernel::Load::Widen`): f32 products for f32, f16 and bf16, i32 and
/// u32 ones for i8 and u8; [`SIMT_CONFIG`] for f32. `None` for other types. Like [`SIMT_CONFIG`],
/// its 8x8x8 only sizes a scheme's tile.
pub fn simt_config(component: ComponentType) -> Option<GPUSubgroupMatrixConfig> {
    let result_type = match component {
        ComponentType::F32 | ComponentType::F16 | ComponentType::Bf16 => ComponentType::F32,
        ComponentType::I8 => ComponentType::I32,
        ComponentType::U8 => ComponentType::U32,
        _ => return None,
    };
    Some(GPUSubgroupMatrixConfig {
        component_type: component,
        result_type,
        ..SIMT_CONFIG
    })
}

impl GPUSubgroupMatrixConfig {
    /// Multiply-accumulates per fragment MulAdd (used to rank shapes).
    pub fn volume(&self) -> u64 {
        u64::from(self.m) * u64::from(self.n) * u64::from(self.k)
    }
}

impl fmt::Display for GPUSubgroupMatrixConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{} {}->{}",
            self.m, self.n, self.k, self.component_type, self.result_type
        )
    }
}

/// Device facts the filter depends on.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterFeatures {
    /// `shaderFloat16` and `storageBuffer16BitAccess` (Dawn's ShaderF16).
    pub shader_f16: bool,
    /// `VK_KHR_shader_bfloat16`'s `shaderBFloat16CooperativeMatrix`.
    pub bf16_cooperative_matrix: bool,
    /// `VK_EXT_shader_float8`'s `shaderFloat8CooperativeMatrix`.
    pub fp8_cooperative_matrix: bool,
}

/// The filtered configuration lists.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FilteredConfigs {
    /// Configs that pass Dawn's subgroup-matrix rules exactly.
    pub standard: Vec<GPUSubgroupMatrixConfig>,
    /// Our extension: subgroup-scope, non-saturating, A==B, C==R configs whose types are outside
    /// Dawn's set (bf16, fp8), offered only when the device enables the matching feature.
    pub extended: Vec<GPUSubgroupMatrixConfig>,
}

impl FilteredConfigs {
    /// Both lists, standard first.
    pub fn all(&self) -> impl Iterator<Item = &GPUSubgroupMatrixConfig> {
        self.standard.iter().chain(self.extended.iter())
    }
}

/// Filters a raw property list with Dawn's subgroup-matrix rules (A type == B type, C type ==
/// result type, subgroup scope, no saturating accumulation, types in {f32, f16, u32, i32, u8, i8},
/// f16 only with `shader_f16`). Entries that pass every structural rule but use bf16 or fp8 go to
/// [`FilteredConfigs::extended`] when the device has the matching feature. Order is the driver's
/// (drivers list preferred shapes first); duplicates are dropped.
pub fn filter_configs(raw: &[RawMatrixProperty], features: FilterFeatures) -> FilteredConfigs {
    let mut out = FilteredConfigs::default();
    for p in raw {
        if p.a_type != p.b_type
            || p.c_type != p.result_type
            || p.scope != MatrixScope::Subgroup
            || p.saturating_accumulation
        {
            continue;
        }
        let (Some(ab), Some(res)) = (p.a_type.known(), p.result_type.known()) else {
            continue;
        };
        let config = GPUSubgroupMatrixConfig {
            component_type: ab,
            result_type: res,
            m: p.m,
            n: p.n,
            k: p.k,
        };
        let type_ok = |t: ComponentType| match t {
            ComponentType::F16 => Some(features.shader_f16),
            t if t.is_dawn_type() => Some(true),
            _ => None,
        };
        let list = match (type_ok(ab), type_ok(res)) {
            (Some(true), Some(true)) => &mut out.standard,
            (Some(false), _) | (_, Some(false)) => continue,
            _ => {
                let ext_ok = |t: ComponentType| match t {
                    ComponentType::Bf16 => features.bf16_cooperative_matrix,
                    ComponentType::F8E4M3 | ComponentType::F8E5M2 => features.fp8_cooperative_matrix,
                    ComponentType::F16 => features.shader_f16,
                    t => t.is_dawn_type(),
                };
                if !(ext_ok(ab) && ext_ok(res)) {
                    continue;
                }
                &mut out.extended
            }
        };
        if !list.contains(&config) {
            list.push(config);
        }
    }
    out
}

/// Picks the config for `component_type x component_type -> result_type` among `configs`: the
/// shape `shape` (m, n, k) when given, else the largest fragment (most multiply-adds per
/// instruction), ties broken by the driver's order (drivers list preferred shapes first).
pub fn choose_config(
    configs: &[GPUSubgroupMatrixConfig],
    component_type: ComponentType,
    result_type: ComponentType,
    shape: Option<(u32, u32, u32)>,
) -> Option<GPUSubgroupMatrixConfig> {
    let mut best: Option<GPUSubgroupMatrixConfig> = None;
    for c in configs {
        if c.component_type != component_type || c.result_type != result_type {
            continue;
        }
        if shape.is_some_and(|s| s != (c.m, c.n, c.k)) {
            continue;
        }
        if best.is_none_or(|b| c.volume() > b.volume()) {
            best = Some(*c);
        }
    }
    best
}

#[cfg(test)]
#[path = "config_tests.rs"]
pub(crate) mod tests;
