//! Tile schemes and their choice per problem. Pure: nothing here touches Vulkan.
//!
//! A [`TileScheme`] fixes how one workgroup covers a `BM x BN` block of C: `sg_m x sg_n` subgroups,
//! each owning `fr_m x fr_n` accumulator fragments of the config's `m x n` shape, stepping through K
//! `k_step` at a time with A and B staged in shared memory ([`scheme`]). [`candidates`] lists the
//! schemes worth trying on a device and picks the default for a problem. Splitting a problem into
//! passes is [`crate::plan`]'s job.

pub mod candidates;
mod lists;
pub mod preferred;
pub mod scheme;
#[cfg(test)]
pub(crate) mod test_support;
mod tuned;

pub use candidates::*;
pub(crate) use lists::SchemeLists;
pub use preferred::*;
pub use scheme::{shared_unit, TileGeometry, TileScheme};
pub(crate) use tuned::{TuneCache, TuneKey};

use serde::{Deserialize, Serialize};

/// Bytes every global load and shared-memory copy moves at once; also the alignment of every
/// device matrix row (its leading dimension is padded to a multiple of this).
pub const VECTOR_BYTES: u32 = 16;

/// Storage order of a matrix.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Rows are contiguous: element (r, c) at `r * ld + c`.
    #[default]
    RowMajor,
    /// Columns are contiguous: element (r, c) at `c * ld + r`.
    ColMajor,
}

impl Layout {
    /// 'n' for row-major (not transposed), 't' for column-major, as in `--layout nt`.
    pub fn letter(self) -> char {
        match self {
            Layout::RowMajor => 'n',
            Layout::ColMajor => 't',
        }
    }

    /// The storage order of the transpose of a matrix stored this way (same memory).
    pub fn transposed(self) -> Self {
        match self {
            Layout::RowMajor => Layout::ColMajor,
            Layout::ColMajor => Layout::RowMajor,
        }
    }

    /// (outer, inner) extents of a `rows x cols` matrix stored this way: inner is contiguous.
    pub fn outer_inner(self, rows: usize, cols: usize) -> (usize, usize) {
        match self {
            Layout::RowMajor => (rows, cols),
            Layout::ColMajor => (cols, rows),
        }
    }
}

/// Which cooperative matrices a kernel computes with.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelScope {
    /// Subgroup-scope matrices (`VK_KHR_cooperative_matrix`): the tiled kernel, operands staged
    /// through shared memory by the kernel itself.
    #[default]
    Subgroup,
    /// One workgroup-scope accumulator per workgroup (`VK_NV_cooperative_matrix2` with tensor
    /// addressing): the driver stages operands and handles edges; needs a device that offers it
    /// (see [`TileScheme::check_device`]).
    Workgroup,
}
