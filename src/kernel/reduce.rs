//! The split-K reduction: `C = alpha * sum(partials) + beta * C`, one invocation per element.
//!
//! Split-K runs a GEMM's K range as several concurrent dispatches, each writing its partial product
//! to its own slice of a scratch buffer; this kernel then sums the slices. Bindings: 0 = partials
//! (result type, slices `slice_stride` elements apart, rows `ldc` apart), 2 = C. Push constants
//! reuse [`super::PushConstants`]: `m`, `n`, `k` = number of slices, `ldc`, `lda_vec` = slice
//! stride in elements, `ldb_vec` = workgroups along x, `c_off`, `alpha_bits`, `beta_bits`.

use super::builder::{BuildResult, ModuleBuilder};
use super::push::Pc;
use super::Epilogue;
use crate::config::ComponentType;
use rspirv::spirv::{BuiltIn, Capability, FunctionControl, LoopControl, StorageClass, Word};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;

pub(super) fn emit(result_type: ComponentType, epilogue: Epilogue) -> BuildResult<Vec<u32>> {
    let rs = result_type.size_bytes();
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

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let pc = |b: &mut ModuleBuilder, i: Pc| b.push_constant(v_pc, i as u32);
    let (pm, pn, splits) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::K)?);
    let (ldc, stride, gx) = (pc(b, Pc::Ldc)?, pc(b, Pc::LdaVec)?, pc(b, Pc::LdbVec)?);
    let c_off = pc(b, Pc::COff)?;
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
    let res = Res {
        ty: result_type,
        t_res,
        p_sb_res,
    };
    b.if_then(inside, |b| {
        let r = b.b.u_div(t_u32, None, gid, pn)?;
        let c = b.b.u_mod(t_u32, None, gid, pn)?;
        let idx = b.b.i_mul(t_u32, None, r, ldc)?;
        let idx = b.b.i_add(t_u32, None, idx, c)?;
        let sum = res.sum_slices(b, (v_part, stride, splits), idx)?;
        res.store(b, (v_pc, v_c, c_off), epilogue, (sum, idx))
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}

/// The result type as the stages use it: its component type, its SPIR-V type and the pointer
/// type of its elements in a storage buffer.
struct Res {
    ty: ComponentType,
    t_res: Word,
    p_sb_res: Word,
}

impl Res {
    /// The sum of the element at `idx` over the `splits` slices of `v_part`, `stride`
    /// elements apart, in a loop entered from the current block.
    fn sum_slices(
        &self,
        b: &mut ModuleBuilder,
        (v_part, stride, splits): (Word, Word, Word),
        idx: Word,
    ) -> BuildResult<Word> {
        let entry = b.current_label()?;
        let (t_bool, t_u32, t_res, u0) = (b.t_bool(), b.t_u32(), self.t_res, b.c_u32(0));
        let zero = b.c_bits(t_res, 0);
        let (l_head, l_body, l_cont, l_merge) = (b.b.id(), b.b.id(), b.b.id(), b.b.id());
        let (s_next, acc_next) = (b.b.id(), b.b.id());
        b.b.branch(l_head)?;
        b.b.begin_block(Some(l_head))?;
        let s = b.b.phi(t_u32, None, [(u0, entry), (s_next, l_cont)])?;
        let acc = b.b.phi(t_res, None, [(zero, entry), (acc_next, l_cont)])?;
        let more = b.b.u_less_than(t_bool, None, s, splits)?;
        b.b.loop_merge(l_merge, l_cont, LoopControl::NONE, [])?;
        b.b.branch_conditional(more, l_body, l_merge, [])?;
        b.b.begin_block(Some(l_body))?;
        let off = b.b.i_mul(t_u32, None, s, stride)?;
        let at = b.b.i_add(t_u32, None, off, idx)?;
        let p = b.b.access_chain(self.p_sb_res, None, v_part, [u0, at])?;
        let x = b.b.load(t_res, None, p, None, [])?;
        if self.ty.is_float() {
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
        Ok(acc)
    }

    /// C's element at `idx` (after `c_off`) set to `alpha * sum + beta * C`, each term where
    /// the epilogue has it.
    fn store(
        &self,
        b: &mut ModuleBuilder,
        (v_pc, v_c, c_off): (Word, Word, Word),
        epilogue: Epilogue,
        (sum, idx): (Word, Word),
    ) -> BuildResult<()> {
        let (t_u32, t_res, u0) = (b.t_u32(), self.t_res, b.c_u32(0));
        let is_float = self.ty.is_float();
        let scalar = |b: &mut ModuleBuilder, i: Pc| -> BuildResult<u32> {
            let bits = b.push_constant(v_pc, i as u32)?;
            b.scalar_from_bits(self.ty, t_res, bits)
        };
        let mul = |b: &mut ModuleBuilder, x, y| {
            if is_float {
                b.b.f_mul(t_res, None, x, y)
            } else {
                b.b.i_mul(t_res, None, x, y)
            }
        };
        let mut out = sum;
        if epilogue.alpha {
            let a = scalar(b, Pc::Alpha)?;
            out = mul(b, out, a)?;
        }
        let ci = b.b.i_add(t_u32, None, idx, c_off)?;
        let pc_c = b.b.access_chain(self.p_sb_res, None, v_c, [u0, ci])?;
        if epilogue.beta {
            let beta = scalar(b, Pc::Beta)?;
            let old = b.b.load(t_res, None, pc_c, None, [])?;
            let t = mul(b, old, beta)?;
            out = if is_float {
                b.b.f_add(t_res, None, out, t)?
            } else {
                b.b.i_add(t_res, None, out, t)?
            };
        }
        b.b.store(pc_c, out, None, [])
    }
}
