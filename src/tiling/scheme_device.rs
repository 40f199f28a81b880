//! [`TileScheme::check_device`]: a scheme against a device's `VK_NV_cooperative_matrix2` offer.

use super::TileScheme;
use crate::config::GPUSubgroupMatrixConfig;
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::tiling::KernelScope;

impl TileScheme {
    /// [`TileScheme::check`] against the device's limits, and for workgroup scope, against what
    /// `VK_NV_cooperative_matrix2` offers there: an entry of the config's types whose
    /// granularities divide the tile and whose workgroup size is the scheme's.
    pub fn check_device(&self, config: &GPUSubgroupMatrixConfig, info: &DeviceInfo) -> Result<()> {
        self.check(config, &info.limits)?;
        if self.scope == KernelScope::Subgroup {
            return Ok(());
        }
        let cm2 = match &info.cooperative_matrix2 {
            Some(c) if c.usable() => c,
            _ => {
                return Err(Error::Unsupported(format!(
                    "workgroup-scope schemes need VK_NV_cooperative_matrix2 with cooperativeMatrixWorkgroupScope, \
                     cooperativeMatrixFlexibleDimensions and cooperativeMatrixTensorAddressing; {} {}",
                    info.name,
                    match &info.cooperative_matrix2 {
                        None => "does not offer the extension".to_string(),
                        Some(c) => format!(
                            "offers workgroup scope {}, flexible dimensions {}, tensor addressing {}",
                            c.workgroup_scope, c.flexible_dimensions, c.tensor_addressing
                        ),
                    }
                )))
            }
        };
        // The kernel reads A and B as arrays of their element type; the device enables 8- and
        // 16-bit storage only where it has them.
        let storage = match config.component_type.size_bytes() {
            1 => Some(("storageBuffer8BitAccess", info.features.storage_buffer_8bit_access)),
            2 => Some(("storageBuffer16BitAccess", info.features.storage_buffer_16bit_access)),
            _ => None,
        };
        if let Some((feature, false)) = storage {
            return Err(Error::Unsupported(format!(
                "workgroup-scope schemes for {} -> {} read {}-bit arrays, which needs {feature}; {} lacks it",
                config.component_type,
                config.result_type,
                8 * config.component_type.size_bytes(),
                info.name
            )));
        }
        let g = self.geometry(config);
        let entries = cm2.workgroup_entries(config);
        let (rows, cols) = self.accumulator_shape(config);
        let fits = |&(mg, ng, kg, inv): &(u32, u32, u32, u32)| {
            inv == g.threads && rows % mg == 0 && cols % ng == 0 && g.bk % kg == 0
        };
        if !entries.iter().any(fits) {
            let offered: Vec<String> = entries
                .iter()
                .map(|(mg, ng, kg, inv)| format!("multiples of {mg}x{ng}x{kg} with {inv} invocations"))
                .collect();
            return Err(Error::InvalidTileScheme(format!(
                "a {}x{}x{} workgroup-scope matrix with {} invocations is not offered for {} -> {} (offered: {})",
                rows,
                cols,
                g.bk,
                g.threads,
                config.component_type,
                config.result_type,
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join("; ")
                }
            )));
        }
        let largest = rows.max(cols).max(g.bk);
        if largest > cm2.flexible_dimensions_max_dimension {
            return Err(Error::InvalidTileScheme(format!(
                "a workgroup-scope matrix dimension of {largest} exceeds the device's {}",
                cm2.flexible_dimensions_max_dimension
            )));
        }
        if cm2.workgroup_scope_max_workgroup_size != 0 && g.threads > cm2.workgroup_scope_max_workgroup_size {
            return Err(Error::InvalidTileScheme(format!(
                "{} invocations exceed the device's workgroup-scope limit of {}",
                g.threads, cm2.workgroup_scope_max_workgroup_size
            )));
        }
        Ok(())
    }
}
