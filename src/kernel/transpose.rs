//! An operand copied into the other storage order in a pass of its own, into scratch memory the
//! GEMM then reads in that order: a 16-bit operand as it is, an f32 operand rounded to f16 or
//! bf16 on the way, or split into the accurate mode's f16 `hi` and `lo` planes (the converting
//! passes of [`super::narrow`], transposed). On NVIDIA's
//! workgroup-scope kernel the layout with A column-major and B row-major (each operand
//! contiguous along M or N) runs 5-11% faster than the others (docs/performance.md), which
//! repays a copy of an operand where the GEMM is large against it.
//!
//! Each workgroup moves 64 x 64 tiles through shared memory, in a grid-stride loop over the
//! tiles: it reads a tile's rows as 16-byte vectors, and writes its columns as the copy's rows,
//! 16-byte vectors of 16-bit elements. Source rows past the last are read as zero, so a copy
//! row's padding up to its leading dimension is zero (the GEMM's K may run along it); copy rows
//! past the source's row length (its padding) are not written.
//!
//! Bindings: 0 = the source (16-byte vectors), 2 = the copy (16-byte vectors), 3 = the scale
//! words (planes only). Push constants reuse [`super::PushConstants`]: `m` and `n` = the
//! source's rows and elements per row in storage order, `ldc` = the copy's rows (at least `n`;
//! those past it are zero), `lda_vec` and `a_off_vec` = the source's leading dimension and
//! first vector, `ldb_vec` and `c_off` = the copy's, in vectors; `k` = workgroups dispatched;
//! planes: `b_off_vec` = how far the `lo` plane lies after the `hi` plane, in vectors, and
//! `col0` = the scale word.

use super::builder::{BuildResult, ModuleBuilder};
use super::convert::{plane_scale, store_converted};
use super::push::{copy_windows, Pc};
use crate::config::ComponentType;
use rspirv::spirv::{BuiltIn, FunctionControl, MemoryAccess, MemorySemantics, Scope, SelectionControl, StorageClass};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;
/// The tile's edge, in elements.
pub const TILE: u32 = 64;
/// Most workgroups per dispatch: enough to keep a large GPU's memory busy.
pub const MAX_GROUPS: u32 = 8192;

/// What the pass writes.
#[derive(Copy, Clone, Debug)]
pub(super) enum Output {
    /// A 16-bit source, bit for bit.
    Copy16,
    /// An f32 source rounded to this type (f16 or bf16).
    Rounded(ComponentType),
    /// An f32 source split into the accurate mode's scaled f16 `hi` and `lo` planes.
    Planes,
}

/// Emits the pass writing `output`.
pub(super) fn emit(output: Output) -> BuildResult<Vec<u32>> {
    // Elements per source vector.
    let per_vec = if matches!(output, Output::Copy16) { 8 } else { 4 };
    let src_vecs = TILE / per_vec;
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let t_void = b.t_void();
    let t_bool = b.t_bool();
    let t_u32 = b.t_u32();
    let t_uvec3 = b.t_uvec(3);
    let t_uvec4 = b.t_uvec(4);
    let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = b.push_constant_block(super::push::PC_MEMBERS);
    let v_src = b.storage_buffer(t_uvec4, 16, 0, true);
    let v_dst = b.storage_buffer(t_uvec4, 16, 2, false);
    let v_scale = matches!(output, Output::Planes).then(|| b.storage_buffer(t_u32, 4, 3, true));
    // One u32 per element (a 16-bit element in its low half): 16 KiB, the least any Vulkan
    // device offers, with each row rotated by its index instead of padded (no bank conflicts
    // beyond two-way either way round).
    let c_len = b.c_u32(TILE * TILE);
    let t_sh = b.b.type_array(t_u32, c_len);
    let p_sh = b.ptr(StorageClass::Workgroup, t_sh);
    let v_sh = b.b.variable(p_sh, None, StorageClass::Workgroup, None);
    b.interface.push(v_sh);
    let p_wg_u32 = b.ptr(StorageClass::Workgroup, t_u32);
    let p_sb_uvec4 = b.ptr(StorageClass::StorageBuffer, t_uvec4);
    let u0 = b.c_u32(0);
    let zero4 = b.b.constant_null(t_uvec4);
    let c_scope_wg = b.c_u32(Scope::Workgroup as u32);
    let c_sem = b.c_u32((MemorySemantics::ACQUIRE_RELEASE | MemorySemantics::WORKGROUP_MEMORY).bits());
    // Shared accesses the barriers order (the Vulkan memory model's non-private ones).
    let np = Some(MemoryAccess::NON_PRIVATE_POINTER);
    let (c16, low16, last) = (b.c_u32(16), b.c_u32(0xffff), b.c_u32(TILE - 1));

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    let l_entry = b.b.begin_block(None)?;
    let pc = |b: &mut ModuleBuilder, i: Pc| b.push_constant(v_pc, i as u32);
    let (outer, inner, rows_out, groups) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::Ldc)?, pc(b, Pc::K)?);
    let [src_ld, src_off, dst_ld, dst_off] = copy_windows(b, v_pc)?;
    let planes = plane_scale(b, v_pc, v_scale)?;
    let lid = b.b.load(t_u32, None, v_local, None, [])?;
    let wg = b.b.load(t_uvec3, None, v_wg, None, [])?;
    let first = b.b.composite_extract(t_u32, None, wg, [0])?;
    // Tiles cover the copy's rows, the source's columns and any zero rows after them.
    let tiles_x = b.add_u(rows_out, TILE - 1)?;
    let tiles_x = b.div_u(tiles_x, TILE)?;
    let tiles_y = b.add_u(outer, TILE - 1)?;
    let tiles_y = b.div_u(tiles_y, TILE)?;
    let tiles = b.b.i_mul(t_u32, None, tiles_x, tiles_y)?;
    // Element (row `r`, column `c`) of the tile as the copy stores it: copy row `c`.
    let slot = |b: &mut ModuleBuilder, c: u32, r: u32| -> BuildResult<u32> {
        let t_u32 = b.t_u32();
        let rot = b.b.i_add(t_u32, None, r, c)?;
        let rot = b.b.bitwise_and(t_u32, None, rot, last)?;
        let row = b.mul_u(c, TILE)?;
        let i = b.b.i_add(t_u32, None, row, rot)?;
        b.b.access_chain(p_wg_u32, None, v_sh, [i])
    };
    // The workgroup's tiles, in turn; the trip count is the workgroup's, so barriers are
    // reached uniformly.
    b.counted_loop_by(l_entry, (first, tiles, groups), |b, t| {
        let ty = b.b.u_div(t_u32, None, t, tiles_x)?;
        let tx = b.b.u_mod(t_u32, None, t, tiles_x)?;
        let r0 = b.mul_u(ty, TILE)?;
        let c0 = b.mul_u(tx, TILE)?;
        let c0_vec = b.mul_u(tx, src_vecs)?;
        let src_base = b.b.i_add(t_u32, None, src_off, c0_vec)?;
        for i in 0..TILE * src_vecs / THREADS {
            let v = b.add_u(lid, i * THREADS)?;
            let rl = b.div_u(v, src_vecs)?;
            let cv = b.mod_u(v, src_vecs)?;
            let r = b.b.i_add(t_u32, None, r0, rl)?;
            let cl = b.mul_u(cv, per_vec)?;
            let c = b.b.i_add(t_u32, None, c0, cl)?;
            let r_ok = b.b.u_less_than(t_bool, None, r, outer)?;
            let c_ok = b.b.u_less_than(t_bool, None, c, inner)?;
            let ok = b.b.logical_and(t_bool, None, r_ok, c_ok)?;
            let idx = b.b.i_mul(t_u32, None, r, src_ld)?;
            let idx = b.b.i_add(t_u32, None, idx, src_base)?;
            let idx = b.b.i_add(t_u32, None, idx, cv)?;
            let x = b.load_vector_or_zero((v_src, src_off), idx, ok, zero4)?;
            for l in 0..per_vec {
                let e = if per_vec == 4 {
                    b.b.composite_extract(t_u32, None, x, [l])?
                } else {
                    let w = b.b.composite_extract(t_u32, None, x, [l / 2])?;
                    if l % 2 == 0 {
                        b.b.bitwise_and(t_u32, None, w, low16)?
                    } else {
                        b.b.shift_right_logical(t_u32, None, w, c16)?
                    }
                };
                let col = b.add_u(cl, l)?;
                let p = slot(b, col, rl)?;
                b.b.store(p, e, np, [])?;
            }
        }
        b.b.control_barrier(c_scope_wg, c_scope_wg, c_sem)?;
        let r0_vec = b.mul_u(ty, TILE / 8)?;
        let dst_base = b.b.i_add(t_u32, None, dst_off, r0_vec)?;
        for i in 0..TILE * (TILE / 8) / THREADS {
            let v = b.add_u(lid, i * THREADS)?;
            let cl = b.div_u(v, TILE / 8)?;
            let rv = b.mod_u(v, TILE / 8)?;
            let row = b.b.i_add(t_u32, None, c0, cl)?;
            let rl = b.mul_u(rv, 8)?;
            let col = b.b.i_add(t_u32, None, r0, rl)?;
            let row_ok = b.b.u_less_than(t_bool, None, row, rows_out)?;
            let col_ok = b.b.u_less_than(t_bool, None, col, outer)?;
            let ok = b.b.logical_and(t_bool, None, row_ok, col_ok)?;
            let (l_store, l_next) = (b.b.id(), b.b.id());
            b.b.selection_merge(l_next, SelectionControl::NONE)?;
            b.b.branch_conditional(ok, l_store, l_next, [])?;
            b.b.begin_block(Some(l_store))?;
            let mut w = [0; 8];
            for (l, w) in w.iter_mut().enumerate() {
                let r = b.add_u(rl, l as u32)?;
                let p = slot(b, cl, r)?;
                *w = b.b.load(t_u32, None, p, np, [])?;
            }
            let quad = |b: &mut ModuleBuilder, w: &[u32]| b.b.composite_construct(t_uvec4, None, w.iter().copied());
            let at = b.b.i_mul(t_u32, None, row, dst_ld)?;
            let at = b.b.i_add(t_u32, None, at, dst_base)?;
            let at = b.b.i_add(t_u32, None, at, rv)?;
            match output {
                Output::Copy16 => {
                    let mut words = [0; 4];
                    for (j, word) in words.iter_mut().enumerate() {
                        let high = b.b.shift_left_logical(t_u32, None, w[2 * j + 1], c16)?;
                        *word = b.b.bitwise_or(t_u32, None, w[2 * j], high)?;
                    }
                    let packed = quad(b, &words)?;
                    let p = b.b.access_chain(p_sb_uvec4, None, v_dst, [u0, at])?;
                    b.b.store(p, packed, None, [])?;
                }
                Output::Rounded(to) => {
                    let halves = (quad(b, &w[..4])?, quad(b, &w[4..])?);
                    store_converted(b, (v_dst, at), halves, to, None)?;
                }
                Output::Planes => {
                    // The planes are f16 (the type is not used: they are split, not rounded).
                    let halves = (quad(b, &w[..4])?, quad(b, &w[4..])?);
                    store_converted(b, (v_dst, at), halves, ComponentType::F16, planes)?;
                }
            }
            b.b.branch(l_next)?;
            b.b.begin_block(Some(l_next))?;
        }
        // The next tile overwrites shared memory.
        b.b.control_barrier(c_scope_wg, c_scope_wg, c_sem)?;
        Ok(())
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}
