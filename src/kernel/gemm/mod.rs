//! The tiled GEMM kernel.
//!
//! One workgroup computes a `BM x BN` block of C with `sg_m x sg_n` subgroups, each owning
//! `fr_m x fr_n` accumulator fragments. Per K step of `BK`:
//!
//! 1. barrier; the 16-byte vectors prefetched into registers are stored to shared memory (A and B
//!    in their global layouts, rows skewed by `pad_bytes`); barrier;
//! 2. the next step's vectors are loaded from global memory into registers, so the loads overlap
//!    the multiplies below (issued after the barrier so it does not wait on them);
//! 3. for each `k` slice: every A fragment of the subgroup is loaded once, then each B fragment is
//!    loaded and multiplied into the `fr_m` accumulators of its column.
//!
//! Bounds: a vector is loaded only if its row is inside the matrix and its first element is;
//! device matrices keep their padding (up to the 16-byte-aligned leading dimension) zero, so the
//! K tail reads zeros, and everything else is replaced by zero. The loop never relies on robust
//! buffer access. The epilogue of a workgroup whose tile lies inside C stores fragments straight
//! to C; a workgroup on the M/N edge sends every fragment through a per-subgroup staging tile in
//! shared memory and masked scalar stores (decided per workgroup, so barriers stay uniform). The
//! `gemm_store` module emits it.

use super::builder::{mul_add_operands, BuildResult, ModuleBuilder};
use super::epilogue::{store_type, Fused};
use super::gemm_store::{self as store, Store};
use super::push::{Pc, PC_MEMBERS};
use super::raster::{group_table, skip_empty, tile, Tile};
use super::{KernelKey, Load, Probe};
use crate::config::GPUSubgroupMatrixConfig;
use crate::tiling::{shared_unit, Layout, TileGeometry, TileScheme, VECTOR_BYTES};
use rspirv::spirv::{BuiltIn, Capability, FunctionControl, MemoryAccess, MemorySemantics, Scope, StorageClass, Word};

mod declare;
mod k_loop;
mod setup;

use declare::*;
use k_loop::*;
use setup::*;

const ROW_MAJOR: u32 = 0;
const COL_MAJOR: u32 = 1;

/// One operand's staging: how its tile lies in global and shared memory.
struct Operand2d {
    /// Shared array (Workgroup variable) and its unit type/bytes.
    shared: Word,
    unit_t: Word,
    unit_bytes: u32,
    /// Register variables (Function) for the prefetched vectors: per slot, the storage vectors
    /// that hold its one shared vector (two for f32 storage narrowed to 16 bits).
    regs: Vec<Vec<Word>>,
    /// How the operand is stored and converted.
    load: Load,
    /// For [`Load::Split`]: the f32 scale applied before splitting, and where the low parts
    /// start (units after the high parts).
    split: Option<(Word, u32)>,
    /// Per copy slot: (outer row in tile, inner vector in tile, shared index in units).
    slots: Vec<(Word, Word, Word)>,
}

pub(super) fn emit(key: &KernelKey) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    mb.drop_products = key.probe == super::Probe::NoProducts;
    let (d, mut fuse) = declare(&mut mb, key)?;
    let t_fn = mb.b.type_function(d.ty.t_void, []);
    let f_main = mb.b.begin_function(d.ty.t_void, None, FunctionControl::NONE, t_fn)?;
    mb.b.begin_block(None)?;
    let st = setup(&mut mb, key, &d, fuse.as_mut())?;
    main_loop(&mut mb, key, &d, &st)?;
    store::emit(
        &mut mb,
        Store {
            key,
            fuse: fuse.as_ref(),
            scales: st.scales,
            v_pc: d.io.v_pc,
            types: (d.ty.t_u32, d.ty.t_bool, d.ty.t_res, d.ptr.t_res2, d.ty.t_mat_acc),
            c: (
                d.io.v_c,
                d.ptr.p_sb_res,
                d.ptr.p_sb_out,
                st.ldc,
                st.c_off,
                (st.pm, st.pn),
            ),
            tile: (st.m0, st.n0, st.a_sg_rows, st.b_sg_cols, st.sg, st.lane),
            acc_vars: &st.acc_vars,
            staging: (d.sh.sh_host, d.lay.host_unit, d.ptr.p_wg_u32, d.ptr.p_wg_host),
            consts: (d.k.c0, d.k.c_row_major, d.k.zero_res),
            barriers: (d.k.c_scope_wg, d.k.c_scope_sg, d.k.c_sem),
        },
    )?;
    mb.end_compute(f_main, d.g.threads)?;
    Ok(mb.finish())
}
