//! The largest magnitude of an f32 matrix, for the accurate split ([`super::Load::Split`]): its
//! bits (`|x|`'s bits order like `|x|` for every non-NaN f32) are maxed into one word of a
//! zero-filled buffer with an atomic per workgroup.
//!
//! Bindings: 0 = the matrix (16-byte vectors), 2 = the result words. Push constants reuse
//! [`super::PushConstants`]: `m` = rows in storage order (outer), `n` = vectors per row,
//! `lda_vec` = leading dimension in vectors, `a_off_vec` = first vector, `c_off` = the word to
//! max into, `k` = workgroups dispatched (they stride over the matrix together). Padding inside a row's last vector must be zero (vk-sgmat's matrices keep it so).

use super::builder::{BuildResult, ModuleBuilder};
use rspirv::spirv::{BuiltIn, FunctionControl, MemoryAccess, Scope, StorageClass, Word};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;
/// Most workgroups per dispatch: enough to fill a large GPU.
pub const MAX_GROUPS: u32 = 512;

pub(super) fn emit() -> BuildResult<Vec<u32>> {
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
    let v_m = b.storage_buffer(t_uvec4, 16, 0, true);
    let v_out = b.storage_buffer(t_u32, 4, 2, false);
    let v_sh = b.workgroup_array(t_u32, THREADS);
    let p_sb_uvec4 = b.ptr(StorageClass::StorageBuffer, t_uvec4);
    let p_sb_u32 = b.ptr(StorageClass::StorageBuffer, t_u32);
    let p_wg_u32 = b.ptr(StorageClass::Workgroup, t_u32);
    let p_fn_u32 = b.ptr(StorageClass::Function, t_u32);
    let u0 = b.c_u32(0);
    let abs_mask = b.c_u32(0x7fff_ffff);
    let abs4 = b.b.constant_composite(t_uvec4, [abs_mask; 4]);
    let c_scope_qf = b.c_u32(Scope::QueueFamily as u32);
    let c_relaxed = b.c_u32(0);
    let np = Some(MemoryAccess::NON_PRIVATE_POINTER);

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let v_max = b.b.variable(p_fn_u32, None, StorageClass::Function, Some(u0));
    let pc = |b: &mut ModuleBuilder, i: super::push::Pc| b.push_constant(v_pc, i as u32);
    use super::push::Pc;
    let groups = pc(b, Pc::K)?;
    let (rows, row_vecs, ld, off, word) = (
        pc(b, Pc::M)?,
        pc(b, Pc::N)?,
        pc(b, Pc::LdaVec)?,
        pc(b, Pc::AOff)?,
        pc(b, Pc::COff)?,
    );
    b.grid_stride_rows((v_local, v_wg, THREADS), (rows, row_vecs, groups), |b, r, c| {
        let at = b.b.i_mul(t_u32, None, r, ld)?;
        let at = b.b.i_add(t_u32, None, at, c)?;
        let at = b.b.i_add(t_u32, None, at, off)?;
        let p = b.b.access_chain(p_sb_uvec4, None, v_m, [u0, at])?;
        let x = b.b.load(t_uvec4, None, p, None, [])?;
        let x = b.b.bitwise_and(t_uvec4, None, x, abs4)?;
        let mut m = b.b.load(t_u32, None, v_max, None, [])?;
        for e in 0..4 {
            let xe = b.b.composite_extract(t_u32, None, x, [e])?;
            let gt = b.b.u_greater_than(t_bool, None, xe, m)?;
            m = b.b.select(t_u32, None, gt, xe, m)?;
        }
        b.b.store(v_max, m, None, [])
    })?;
    let lid = b.b.load(t_u32, None, v_local, None, [])?;
    let mine = b.b.load(t_u32, None, v_max, None, [])?;
    workgroup_max(b, v_sh, (lid, mine))?;
    // One atomic per workgroup.
    let first = b.b.i_equal(t_bool, None, lid, u0)?;
    b.if_then(first, |b| {
        let p0 = b.b.access_chain(p_wg_u32, None, v_sh, [u0])?;
        let top = b.b.load(t_u32, None, p0, np, [])?;
        let p_out = b.b.access_chain(p_sb_u32, None, v_out, [u0, word])?;
        b.b.atomic_u_max(t_u32, None, p_out, c_scope_qf, c_relaxed, top)?;
        Ok(())
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}

/// The largest of the workgroup's `mine`s into entry 0 of `v_sh` (one entry an invocation):
/// a tree over shared memory, barriers between its steps and after the last.
fn workgroup_max(b: &mut ModuleBuilder, v_sh: Word, (lid, mine): (Word, Word)) -> BuildResult<()> {
    let (t_bool, t_u32) = (b.t_bool(), b.t_u32());
    let p_wg_u32 = b.ptr(StorageClass::Workgroup, t_u32);
    let np = Some(MemoryAccess::NON_PRIVATE_POINTER);
    let p_mine = b.b.access_chain(p_wg_u32, None, v_sh, [lid])?;
    b.b.store(p_mine, mine, np, [])?;
    let mut half = THREADS / 2;
    while half > 0 {
        b.workgroup_barrier()?;
        let c_half = b.c_u32(half);
        let low = b.b.u_less_than(t_bool, None, lid, c_half)?;
        b.if_then(low, |b| {
            let other = b.b.i_add(t_u32, None, lid, c_half)?;
            let p_other = b.b.access_chain(p_wg_u32, None, v_sh, [other])?;
            let y = b.b.load(t_u32, None, p_other, np, [])?;
            let x = b.b.load(t_u32, None, p_mine, np, [])?;
            let gt = b.b.u_greater_than(t_bool, None, y, x)?;
            let z = b.b.select(t_u32, None, gt, y, x)?;
            b.b.store(p_mine, z, np, [])
        })?;
        half /= 2;
    }
    b.workgroup_barrier()
}
