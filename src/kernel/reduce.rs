//! The split-K reduction: `C = alpha * sum(partials) + beta * C`, one invocation per element.
//!
//! Split-K runs a GEMM's K range as several concurrent dispatches, each writing its partial product
//! to its own slice of a scratch buffer; this kernel then sums the slices. Bindings: 0 = partials
//! (result type, slices `slice_stride` elements apart, rows `ldc` apart), 2 = C. Push constants
//! reuse [`super::PushConstants`]: `m`, `n`, `k` = number of slices, `ldc`, `lda_vec` = slice
//! stride in elements, `ldb_vec` = workgroups along x, `c_off`, `alpha_bits`, `beta_bits`.

use super::builder::{BuildResult, ModuleBuilder};
use super::Epilogue;
use crate::config::ComponentType;
use rspirv::spirv::{BuiltIn, Capability, FunctionControl, LoopControl, SelectionControl, StorageClass};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;

pub(super) fn emit(result_type: ComponentType, epilogue: Epilogue) -> BuildResult<Vec<u32>> {
    let rs = result_type.size_bytes();
    let is_float = result_type.is_float();
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let t_void = b.t_void();
    let t_bool = b.t_bool();
    let t_u32 = b.t_u32();
    let t_uvec3 = b.t_uvec(3);
    let t_res = b.t_scalar(result_type);
    if rs == 2 {
        b.need(Capability::StorageBuffer16BitAccess);
    }
    let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = b.push_constant_block(11);
    let v_part = b.storage_buffer(t_res, rs, 0, true);
    let v_c = b.storage_buffer(t_res, rs, 2, false);
    let p_sb_res = b.ptr(StorageClass::StorageBuffer, t_res);
    let u0 = b.c_u32(0);

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let pc = |b: &mut ModuleBuilder, i: u32| b.push_constant(v_pc, i);
    let (pm, pn, splits, ldc, stride, gx) = (pc(b, 0)?, pc(b, 1)?, pc(b, 2)?, pc(b, 5)?, pc(b, 3)?, pc(b, 4)?);
    let c_off = pc(b, 8)?;
    let lid = b.b.load(t_u32, None, v_local, None, [])?;
    let wg = b.b.load(t_uvec3, None, v_wg, None, [])?;
    let wx = b.b.composite_extract(t_u32, None, wg, [0])?;
    let wy = b.b.composite_extract(t_u32, None, wg, [1])?;
    let row = b.b.i_mul(t_u32, None, wy, gx)?;
    let group = b.b.i_add(t_u32, None, row, wx)?;
    let base = b.mul_u(group, THREADS)?;
    let gid = b.b.i_add(t_u32, None, base, lid)?;
    let total = b.b.i_mul(t_u32, None, pm, pn)?;
    let inside = b.b.u_less_than(t_bool, None, gid, total)?;
    let (l_work, l_end) = (b.b.id(), b.b.id());
    b.b.selection_merge(l_end, SelectionControl::NONE)?;
    b.b.branch_conditional(inside, l_work, l_end, [])?;
    b.b.begin_block(Some(l_work))?;
    let r = b.b.u_div(t_u32, None, gid, pn)?;
    let c = b.b.u_mod(t_u32, None, gid, pn)?;
    let idx = b.b.i_mul(t_u32, None, r, ldc)?;
    let idx = b.b.i_add(t_u32, None, idx, c)?;
    let zero = b.c_bits(t_res, 0);
    // sum over slices
    let (l_head, l_body, l_cont, l_merge) = (b.b.id(), b.b.id(), b.b.id(), b.b.id());
    let (s_next, acc_next) = (b.b.id(), b.b.id());
    b.b.branch(l_head)?;
    b.b.begin_block(Some(l_head))?;
    let s = b.b.phi(t_u32, None, [(u0, l_work), (s_next, l_cont)])?;
    let acc = b.b.phi(t_res, None, [(zero, l_work), (acc_next, l_cont)])?;
    let more = b.b.u_less_than(t_bool, None, s, splits)?;
    b.b.loop_merge(l_merge, l_cont, LoopControl::NONE, [])?;
    b.b.branch_conditional(more, l_body, l_merge, [])?;
    b.b.begin_block(Some(l_body))?;
    let off = b.b.i_mul(t_u32, None, s, stride)?;
    let at = b.b.i_add(t_u32, None, off, idx)?;
    let p = b.b.access_chain(p_sb_res, None, v_part, [u0, at])?;
    let x = b.b.load(t_res, None, p, None, [])?;
    if is_float {
        b.b.f_add(t_res, Some(acc_next), acc, x)?;
    } else {
        b.b.i_add(t_res, Some(acc_next), acc, x)?;
    }
    b.b.branch(l_cont)?;
    b.b.begin_block(Some(l_cont))?;
    let c1 = b.c_u32(1);
    b.b.i_add(t_u32, Some(s_next), s, c1)?;
    b.b.branch(l_head)?;
    b.b.begin_block(Some(l_merge))?;
    let scalar = |b: &mut ModuleBuilder, i: u32| -> BuildResult<u32> {
        let bits = pc(b, i)?;
        b.scalar_from_bits(result_type, t_res, bits)
    };
    let mul = |b: &mut ModuleBuilder, x, y| {
        if is_float {
            b.b.f_mul(t_res, None, x, y)
        } else {
            b.b.i_mul(t_res, None, x, y)
        }
    };
    let mut out = acc;
    if epilogue.alpha {
        let a = scalar(b, 9)?;
        out = mul(b, out, a)?;
    }
    let ci = b.b.i_add(t_u32, None, idx, c_off)?;
    let pc_c = b.b.access_chain(p_sb_res, None, v_c, [u0, ci])?;
    if epilogue.beta {
        let beta = scalar(b, 10)?;
        let old = b.b.load(t_res, None, pc_c, None, [])?;
        let t = mul(b, old, beta)?;
        out = if is_float {
            b.b.f_add(t_res, None, out, t)?
        } else {
            b.b.i_add(t_res, None, out, t)?
        };
    }
    b.b.store(pc_c, out, None, [])?;
    b.b.branch(l_end)?;
    b.b.begin_block(Some(l_end))?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}
