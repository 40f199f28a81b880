//! Kernel keys and fixtures shared by the spirv-val tests (`kernels`, `kernels_fused`).
#![allow(dead_code)]

use crate::common;
use vk_sgmat::config::{ComponentType::*, GPUSubgroupMatrixConfig};
use vk_sgmat::device::DeviceLimits;
use vk_sgmat::kernel::{generate, Epilogue, KernelKey, Load, Probe};
use vk_sgmat::tiling::{candidate_schemes, Layout, TileScheme};

pub fn cfg(m: u32, n: u32, k: u32, ab: vk_sgmat::ComponentType, r: vk_sgmat::ComponentType) -> GPUSubgroupMatrixConfig {
    GPUSubgroupMatrixConfig {
        component_type: ab,
        result_type: r,
        m,
        n,
        k,
    }
}

pub fn limits(subgroup: u32, shared: u32) -> DeviceLimits {
    DeviceLimits {
        subgroup_size: subgroup,
        min_subgroup_size: subgroup,
        max_subgroup_size: subgroup,
        required_subgroup_size_compute: true,
        max_shared_memory: shared,
        max_workgroup_invocations: 1024,
        max_workgroup_size: [1024, 1024, 64],
        max_workgroup_count: [65535; 3],
        max_storage_buffer_range: u32::MAX,
        min_storage_buffer_offset_alignment: 16,
        max_push_constants_size: 128,
        max_memory_allocation_size: u64::MAX,
        timestamp_period: 1.0,
    }
}

pub fn lavapipe_configs() -> Vec<GPUSubgroupMatrixConfig> {
    vec![
        cfg(8, 8, 8, F16, F16),
        cfg(8, 8, 8, F16, F32),
        cfg(8, 8, 8, U8, U32),
        cfg(8, 8, 8, I8, I32),
    ]
}

pub fn h200_configs() -> Vec<GPUSubgroupMatrixConfig> {
    let mut v = Vec::new();
    for (m, n, k) in [(16, 16, 16), (16, 8, 16), (16, 8, 8)] {
        v.push(cfg(m, n, k, F16, F16));
        v.push(cfg(m, n, k, F16, F32));
    }
    for (m, n, k) in [(16, 16, 32), (16, 8, 32)] {
        v.push(cfg(m, n, k, U8, U32));
        v.push(cfg(m, n, k, I8, I32));
    }
    v.push(cfg(16, 16, 16, Bf16, F32));
    v
}

pub const LAYOUTS: [Layout; 2] = [Layout::RowMajor, Layout::ColMajor];
pub const LOADS: [[Load; 2]; 4] = [
    [Load::Native, Load::Native],
    [Load::Round, Load::Native],
    [Load::Native, Load::Round],
    [Load::Round, Load::Round],
];
pub const EPILOGUES: [Epilogue; 4] = [
    Epilogue {
        alpha: false,
        beta: false,
        ..Epilogue::NONE
    },
    Epilogue {
        alpha: true,
        beta: false,
        ..Epilogue::NONE
    },
    Epilogue {
        alpha: false,
        beta: true,
        ..Epilogue::NONE
    },
    Epilogue {
        alpha: true,
        beta: true,
        ..Epilogue::NONE
    },
];

/// Every key of `config` and `scheme` with `loads`: each layout of A and B, each of [`EPILOGUES`].
pub fn every_key(
    config: GPUSubgroupMatrixConfig,
    scheme: TileScheme,
    loads: [Load; 2],
) -> impl Iterator<Item = KernelKey> {
    LAYOUTS.into_iter().flat_map(move |a_layout| {
        LAYOUTS.into_iter().flat_map(move |b_layout| {
            EPILOGUES.into_iter().map(move |epilogue| KernelKey {
                config,
                scheme,
                a_layout,
                b_layout,
                epilogue,
                loads,
                probe: Probe::Full,
                grouped: false,
                fixed: None,
            })
        })
    })
}

pub fn validate_all(configs: &[GPUSubgroupMatrixConfig], limits: &DeviceLimits, cpu: bool, all_schemes: bool) -> usize {
    let mut count = 0;
    let mut bf16_unknown = 0;
    let mut failures = Vec::new();
    for config in configs {
        let schemes = candidate_schemes(config, limits, limits.subgroup_size, cpu);
        assert!(!schemes.is_empty(), "no scheme for {config}");
        let schemes = if all_schemes { schemes } else { schemes[..1].to_vec() };
        for key in schemes
            .into_iter()
            .flat_map(|scheme| every_key(*config, scheme, Default::default()))
        {
            let words = generate(&key).unwrap_or_else(|e| panic!("{}: {e}", key.name()));
            match common::spirv_val(&words, &key.name()) {
                Ok(()) => {}
                // Debian trixie's spirv-tools (2025.1, SDK 1.4.309) predates
                // SPV_KHR_bfloat16 and stops at its capability. bf16 kernels share
                // every other instruction with the f16 ones validated here, and are
                // checked on hardware by `vk-sgmat check`. A newer validator must
                // accept them.
                Err(e) if config.component_type == Bf16 && e.contains("Invalid capability operand: 5116") => {
                    bf16_unknown += 1;
                }
                Err(e) => failures.push(format!(
                    "{}:
{e}",
                    key.name()
                )),
            }
            count += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} kernels fail spirv-val:\n{}",
        failures.len(),
        failures.join("\n")
    );
    if bf16_unknown > 0 {
        eprintln!("note: {bf16_unknown} bf16 kernels not validated: this spirv-val predates SPV_KHR_bfloat16");
    }
    count
}
