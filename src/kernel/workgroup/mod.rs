//! The workgroup-scope GEMM kernel (`VK_NV_cooperative_matrix2` with `SPV_NV_tensor_addressing`).
//!
//! One `BM x BN` accumulator covers the workgroup's tile. Each K step loads a `BM x BK` slice of A
//! and a `BK x BN` slice of B through tensor layouts and multiplies them: the driver chooses how
//! to stage the slices through shared memory and how to split the work among subgroups, which a
//! subgroup-scope kernel has to spell out (see the `gemm` submodule). Column-major operands are
//! read through a transposing tensor view. A scheme with `c_transposed` computes the tile of
//! C^T instead, `B^T A^T` (each operand read through its flipped layout), and stores it
//! through that view, which NVIDIA's driver does faster than a direct store.
//!
//! Bounds: a workgroup whose tile lies inside C runs a loop with unclamped layouts, `stages` K
//! steps per iteration, over the largest multiple of `stages * BK` in K, then K's whole steps
//! left one at a time unclamped, then a partial last step with clamped layouts. A workgroup on
//! C's edge runs the clamped loop throughout. The clamped layouts' tensor dimensions are the
//! problem's, so reads outside A, B or C return zero and stores outside C are dropped by the
//! hardware's addressing rather than by kernel code.
//! Same bindings and push constants as the subgroup-scope kernel. A kernel with sizes built in
//! (`KernelKey::fixed`) takes N, K and the leading dimensions as constants instead, and NVIDIA's
//! driver compiles it a faster loop.
//!
//! A fused epilogue runs on the accumulator through `OpCooperativeMatrixPerElementOpNV`: the
//! driver calls a function of (row, column, value) for every element, wherever it holds it, so
//! no staging tile is needed; an f16 C is then one conversion of the whole matrix.

use super::builder::{mul_add_operands, BuildResult, ModuleBuilder};
use super::epilogue::{store_type, Fused};
use super::push::{Pc, PC_MEMBERS};
use super::raster::{group_table, skip_empty, tile, Tile};
use super::{KernelKey, Load};
use crate::config::GPUSubgroupMatrixConfig;
use crate::tiling::{Layout, TileGeometry, TileScheme, VECTOR_BYTES};
use rspirv::dr::{InsertPoint, Instruction, Operand};
use rspirv::spirv::{
    BuiltIn, Capability, CooperativeMatrixOperands, FunctionControl, LoopControl, MemoryAccess, Op, Scope,
    SelectionControl, StorageClass, TensorAddressingOperands, Word,
};

mod declare;
mod k_loop;
mod setup;
mod store;

use declare::*;
use k_loop::*;
use setup::*;
use store::*;

/// `TensorClampMode` values (SPV_NV_tensor_addressing).
const CLAMP_UNDEFINED: u32 = 0;
const CLAMP_CONSTANT: u32 = 1;

/// How one operand lies in memory: the tensor's dimensions in storage order, and whether the
/// matrix is its transpose.
#[derive(Clone, Copy)]
struct Tensor {
    dims: (Word, Word),
    stride: Word,
    transposed: bool,
}

impl Tensor {
    /// A `rows x cols` matrix stored `layout` with leading dimension `ld`.
    fn new(layout: Layout, (rows, cols): (Word, Word), ld: Word) -> Self {
        match layout {
            Layout::RowMajor => Self {
                dims: (rows, cols),
                stride: ld,
                transposed: false,
            },
            Layout::ColMajor => Self {
                dims: (cols, rows),
                stride: ld,
                transposed: true,
            },
        }
    }
}

pub(super) fn emit(key: &KernelKey) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    mb.drop_products = key.probe == super::Probe::NoProducts;
    let d = declare(&mut mb, key)?;
    let t_fn = mb.b.type_function(d.ty.t_void, []);
    let f_main = mb.b.begin_function(d.ty.t_void, None, FunctionControl::NONE, t_fn)?;
    mb.b.begin_block(None)?;
    let st = setup(&mut mb, key, &d)?;
    loops(&mut mb, &d, &st)?;
    epilogue(&mut mb, key, &d, &st)?;
    mb.end_compute(f_main, d.g.threads)?;
    Ok(mb.finish())
}

/// A tensor layout of `t` over the operand.
fn layout(b: &mut ModuleBuilder, d: &Decl, t_layout: Word, t: &Tensor) -> BuildResult<Word> {
    let l = b.b.create_tensor_layout_nv(t_layout, None)?;
    let l =
        b.b.tensor_layout_set_dimension_nv(t_layout, None, l, [t.dims.0, t.dims.1])?;
    b.b.tensor_layout_set_stride_nv(t_layout, None, l, [t.stride, d.mt.c1])
}

/// Layout `l` of `t` sliced to the matrix at (row0, col0) of the matrix's (not the storage's)
/// coordinates.
fn slice(
    b: &mut ModuleBuilder,
    (t_layout, l, t): (Word, Word, &Tensor),
    (row0, rows): (Word, Word),
    (col0, cols): (Word, Word),
) -> BuildResult<Word> {
    if t.transposed {
        b.b.tensor_layout_slice_nv(t_layout, None, l, [col0, cols, row0, rows])
    } else {
        b.b.tensor_layout_slice_nv(t_layout, None, l, [row0, rows, col0, cols])
    }
}

/// How a load or store addresses `t`: through the transposing `view` where it is transposed.
fn addressing(t: &Tensor, view: Word) -> (TensorAddressingOperands, Vec<rspirv::dr::Operand>) {
    if t.transposed {
        (
            TensorAddressingOperands::TENSOR_VIEW,
            vec![rspirv::dr::Operand::IdRef(view)],
        )
    } else {
        (TensorAddressingOperands::NONE, vec![])
    }
}
