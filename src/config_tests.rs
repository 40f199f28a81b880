//! Tests of config.rs: Dawn's filter, type names, and config choice.

use super::*;
use ComponentType::*;

fn prop(m: u32, n: u32, k: u32, ab: ComponentType, cr: ComponentType) -> RawMatrixProperty {
    RawMatrixProperty {
        m,
        n,
        k,
        a_type: RawComponent::Known(ab),
        b_type: RawComponent::Known(ab),
        c_type: RawComponent::Known(cr),
        result_type: RawComponent::Known(cr),
        saturating_accumulation: false,
        scope: MatrixScope::Subgroup,
    }
}

/// What Mesa 26.1 lavapipe reports.
pub(crate) fn lavapipe_list() -> Vec<RawMatrixProperty> {
    vec![
        prop(8, 8, 8, F16, F16),
        prop(8, 8, 8, F16, F32),
        prop(8, 8, 8, U8, U32),
        prop(8, 8, 8, I8, I32),
    ]
}

/// What NVIDIA driver 580 reports on the H200 (KHR list).
pub(crate) fn h200_list() -> Vec<RawMatrixProperty> {
    vec![
        prop(16, 16, 16, F16, F16),
        prop(16, 16, 16, F16, F32),
        prop(16, 8, 16, F16, F16),
        prop(16, 8, 16, F16, F32),
        prop(16, 8, 8, F16, F16),
        prop(16, 8, 8, F16, F32),
        prop(16, 16, 32, U8, U32),
        prop(16, 16, 32, I8, I32),
        prop(16, 8, 32, U8, U32),
        prop(16, 8, 32, I8, I32),
        prop(16, 16, 16, Bf16, F32),
    ]
}

const ALL: FilterFeatures = FilterFeatures {
    shader_f16: true,
    bf16_cooperative_matrix: true,
    fp8_cooperative_matrix: true,
};

#[test]
fn lavapipe_keeps_all_four() {
    let f = filter_configs(&lavapipe_list(), ALL);
    assert_eq!(f.standard.len(), 4);
    assert!(f.extended.is_empty());
    assert_eq!(f.standard[2].to_string(), "8x8x8 u8->u32");
}

#[test]
fn h200_has_ten_standard_and_bf16_extended() {
    let f = filter_configs(&h200_list(), ALL);
    assert_eq!(f.standard.len(), 10);
    assert_eq!(
        f.extended,
        vec![GPUSubgroupMatrixConfig {
            component_type: Bf16,
            result_type: F32,
            m: 16,
            n: 16,
            k: 16
        }]
    );
}

#[test]
fn f16_needs_shader_f16() {
    let f = filter_configs(
        &h200_list(),
        FilterFeatures {
            shader_f16: false,
            ..ALL
        },
    );
    assert_eq!(f.standard.len(), 4, "only the integer configs remain");
    assert!(f.all().all(|c| c.component_type != F16 && c.result_type != F16));
}

#[test]
fn bf16_needs_its_feature() {
    let f = filter_configs(
        &h200_list(),
        FilterFeatures {
            bf16_cooperative_matrix: false,
            ..ALL
        },
    );
    assert!(f.extended.is_empty());
}

#[test]
fn structural_rules() {
    let good = prop(16, 16, 16, F32, F32);
    let mut mixed_ab = good;
    mixed_ab.b_type = RawComponent::Known(F16);
    let mut mixed_cr = good;
    mixed_cr.c_type = RawComponent::Known(F16);
    let mut saturating = good;
    saturating.saturating_accumulation = true;
    let mut workgroup = good;
    workgroup.scope = MatrixScope::Workgroup;
    let mut unknown = good;
    unknown.a_type = RawComponent::Unknown(77);
    unknown.b_type = RawComponent::Unknown(77);
    let i16 = prop(16, 16, 16, I16, I32);
    let f64p = prop(8, 8, 8, F64, F64);
    let list = [
        mixed_ab, mixed_cr, saturating, workgroup, unknown, i16, f64p, good, good,
    ];
    let f = filter_configs(&list, ALL);
    assert_eq!(
        f.standard,
        vec![GPUSubgroupMatrixConfig {
            component_type: F32,
            result_type: F32,
            m: 16,
            n: 16,
            k: 16
        }]
    );
    assert!(
        f.extended.is_empty(),
        "i16 and f64 are neither Dawn types nor our extension"
    );
}

#[test]
fn dawn_accepts_8bit_results_and_odd_shapes() {
    let list = [prop(16, 16, 16, I8, I8), prop(7, 3, 5, U32, U32)];
    let f = filter_configs(&list, ALL);
    assert_eq!(f.standard.len(), 2);
}

#[test]
fn from_vk_reads_every_field() {
    let p = vk::CooperativeMatrixPropertiesKHR::default()
        .m_size(16)
        .n_size(8)
        .k_size(32)
        .a_type(vk::ComponentTypeKHR::SINT8)
        .b_type(vk::ComponentTypeKHR::SINT8)
        .c_type(vk::ComponentTypeKHR::SINT32)
        .result_type(vk::ComponentTypeKHR::SINT32)
        .saturating_accumulation(false)
        .scope(vk::ScopeKHR::SUBGROUP);
    let r = RawMatrixProperty::from_vk(&p);
    assert_eq!(r, prop(16, 8, 32, I8, I32));
    let bf = vk::ComponentTypeKHR::from_raw(COMPONENT_TYPE_BFLOAT16_KHR);
    assert_eq!(ComponentType::from_vk(bf), Some(Bf16));
}

#[test]
fn parse_names() {
    assert_eq!(ComponentType::parse("s8"), Some(I8));
    assert_eq!(ComponentType::parse("BF16"), Some(Bf16));
    assert_eq!(ComponentType::parse("q4"), None);
}

#[test]
fn largest_shape_wins_and_override_is_exact() {
    let f = filter_configs(
        &h200_list(),
        FilterFeatures {
            shader_f16: true,
            bf16_cooperative_matrix: true,
            fp8_cooperative_matrix: false,
        },
    );
    let all: Vec<_> = f.all().copied().collect();
    let c = choose_config(&all, ComponentType::F16, ComponentType::F32, None).unwrap();
    assert_eq!((c.m, c.n, c.k), (16, 16, 16));
    let c = choose_config(&all, ComponentType::I8, ComponentType::I32, None).unwrap();
    assert_eq!((c.m, c.n, c.k), (16, 16, 32));
    let c = choose_config(&all, ComponentType::F16, ComponentType::F16, Some((16, 8, 8))).unwrap();
    assert_eq!((c.m, c.n, c.k), (16, 8, 8));
    assert!(choose_config(&all, ComponentType::F16, ComponentType::F16, Some((8, 8, 8))).is_none());
    assert!(choose_config(&all, ComponentType::Bf16, ComponentType::Bf16, None).is_none());
}
