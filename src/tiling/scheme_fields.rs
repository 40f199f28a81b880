//! A [`TileScheme`]'s stored form (the autotune cache): written whole, read back only through
//! the checks of [`TileScheme::try_from`], with fields that older files lack defaulted.

use super::{default_lookahead, KernelScope, TileScheme};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// A scheme's fields as stored in files (the autotune cache); read back only through
/// [`TileScheme::try_from`], which checks them.
#[derive(Copy, Clone, Debug, Serialize, Deserialize)]
pub(super) struct SchemeFields {
    subgroup_size: u32,
    sg_m: u32,
    sg_n: u32,
    fr_m: u32,
    fr_n: u32,
    k_step: u32,
    pad_bytes: u32,
    stages: u32,
    raster_group: u32,
    #[serde(default)]
    scope: KernelScope,
    /// Absent in files written before it existed: those schemes issued every load first.
    #[serde(default)]
    lookahead: Option<u32>,
    /// Absent in older files: one accumulator.
    #[serde(default)]
    n_parts: Option<u32>,
    /// Absent in older files: C computed as it is.
    #[serde(default)]
    c_transposed: bool,
    /// Absent in older files: the left operand loaded first.
    #[serde(default)]
    right_first: bool,
}

impl TryFrom<SchemeFields> for TileScheme {
    type Error = Error;

    fn try_from(f: SchemeFields) -> Result<Self> {
        let s = Self {
            subgroup_size: f.subgroup_size,
            sg_m: f.sg_m,
            sg_n: f.sg_n,
            fr_m: f.fr_m,
            fr_n: f.fr_n,
            k_step: f.k_step,
            pad_bytes: f.pad_bytes,
            stages: f.stages,
            raster_group: f.raster_group,
            scope: f.scope,
            lookahead: f.lookahead.unwrap_or(default_lookahead(f.scope, f.stages)),
            n_parts: f.n_parts.unwrap_or(1),
            c_transposed: f.c_transposed,
            right_first: f.right_first,
        };
        s.check_bounds()?;
        Ok(s)
    }
}

impl From<TileScheme> for SchemeFields {
    fn from(s: TileScheme) -> Self {
        Self {
            subgroup_size: s.subgroup_size,
            sg_m: s.sg_m,
            sg_n: s.sg_n,
            fr_m: s.fr_m,
            fr_n: s.fr_n,
            k_step: s.k_step,
            pad_bytes: s.pad_bytes,
            stages: s.stages,
            raster_group: s.raster_group,
            scope: s.scope,
            lookahead: Some(s.lookahead),
            n_parts: Some(s.n_parts),
            c_transposed: s.c_transposed,
            right_first: s.right_first,
        }
    }
}
