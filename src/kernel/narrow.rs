//! An f32 operand converted for the 16-bit matrix units in a pass of its own, into scratch
//! memory the GEMM then reads as a 16-bit operand: rounded to nearest even in f16 or bf16, or
//! split into f16 `hi` and `lo` planes for the accurate mode ([`super::Load::Planes`], with the
//! scale of `convert::scales`). Converting first costs a read and a narrower write of
//! the operand, and lets the GEMM run the workgroup-scope kernel, whose loads the driver stages
//! itself and which cannot convert as it loads (see docs/perf/JOURNAL.md).
//!
//! Bindings: 0 = the f32 matrix (16-byte vectors), 2 = the copy (16-byte vectors), 3 = the
//! scale words (planes only). Push constants reuse [`super::PushConstants`]: `m` = rows of the
//! copy in storage order, `row0` = rows the source has (later copy rows are zero), `n` = copy
//! vectors per row, `ldc` = source elements per row (later elements are written as zero,
//! whatever the source holds there), `lda_vec` and `a_off_vec` = the source's leading
//! dimension and first vector, `ldb_vec` and `c_off` = the copy's, `b_off_vec` = how far the
//! `lo` plane lies after the `hi` plane and `col0` = the scale word (planes), all in vectors or
//! words; `k` = workgroups dispatched (they stride over the copy together).

use super::builder::{BuildResult, ModuleBuilder};
use super::convert::{plane_scale, store_converted};
use super::push::{copy_windows, Pc};
use crate::config::ComponentType;
use rspirv::spirv::{BuiltIn, FunctionControl};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;
/// Most workgroups per dispatch: enough to keep a large GPU's memory busy.
pub const MAX_GROUPS: u32 = 8192;

/// What the pass writes.
#[derive(Copy, Clone, Debug)]
pub(super) enum Output {
    /// The operand rounded to this type (f16 or bf16).
    Rounded(ComponentType),
    /// The accurate split's scaled f16 `hi` and `lo` planes.
    Planes,
}

pub(super) fn emit(output: Output) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let t_void = b.t_void();
    let t_bool = b.t_bool();
    let t_bvec4 = b.b.type_vector(t_bool, 4);
    let t_u32 = b.t_u32();
    let t_uvec3 = b.t_uvec(3);
    let t_uvec4 = b.t_uvec(4);
    let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = b.push_constant_block(super::push::PC_MEMBERS);
    let v_src = b.storage_buffer(t_uvec4, 16, 0, true);
    let v_dst = b.storage_buffer(t_uvec4, 16, 2, false);
    let (v_scale, to) = match output {
        Output::Rounded(to) => (None, to),
        Output::Planes => (Some(b.storage_buffer(t_u32, 4, 3, true)), ComponentType::F16),
    };
    let u0 = b.c_u32(0);
    let zero4 = b.b.constant_composite(t_uvec4, [u0; 4]);
    // Each element's column within its copy vector, per half: (0..4, 4..8).
    let lanes = [[0, 1, 2, 3], [4, 5, 6, 7]].map(|l| {
        let c = l.map(|x| b.c_u32(x));
        b.b.constant_composite(t_uvec4, c)
    });

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let pc = |b: &mut ModuleBuilder, i: Pc| b.push_constant(v_pc, i as u32);
    let (rows, row_vecs, inner, groups) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::Ldc)?, pc(b, Pc::K)?);
    let [src_ld, src_off, dst_ld, dst_off] = copy_windows(b, v_pc)?;
    let src_rows = pc(b, Pc::Row0)?;
    let planes = plane_scale(b, v_pc, v_scale)?;
    let inner4 = b.b.composite_construct(t_uvec4, None, [inner; 4])?;
    b.grid_stride_rows((v_local, v_wg, THREADS), (rows, row_vecs, groups), |b, r, c| {
        let row = b.b.i_mul(t_u32, None, r, src_ld)?;
        let row = b.b.i_add(t_u32, None, row, src_off)?;
        let first_col = b.mul_u(c, 8)?;
        let first4 = b.b.composite_construct(t_uvec4, None, [first_col; 4])?;
        let row_ok = b.b.u_less_than(t_bool, None, r, src_rows)?;
        let mut halves = [0; 2];
        for (h, out) in halves.iter_mut().enumerate() {
            // Source vector 2c + h holds elements 8c + 4h ..; one that starts past the row's end,
            // or in a row the source lacks, may lie outside the binding, so it is not read.
            let col = b.add_u(first_col, 4 * h as u32)?;
            let in_row = b.b.u_less_than(t_bool, None, col, inner)?;
            let ok = b.b.logical_and(t_bool, None, in_row, row_ok)?;
            let idx = b.mul_u(c, 2)?;
            let idx = b.add_u(idx, h as u32)?;
            let idx = b.b.i_add(t_u32, None, row, idx)?;
            let x = b.load_vector_or_zero((v_src, src_off), idx, ok, zero4)?;
            let cols = b.b.i_add(t_uvec4, None, first4, lanes[h])?;
            let inside = b.b.u_less_than(t_bvec4, None, cols, inner4)?;
            *out = b.b.select(t_uvec4, None, inside, x, zero4)?;
        }
        let at = b.b.i_mul(t_u32, None, r, dst_ld)?;
        let at = b.b.i_add(t_u32, None, at, c)?;
        let at = b.b.i_add(t_u32, None, at, dst_off)?;
        store_converted(b, (v_dst, at), (halves[0], halves[1]), to, planes)
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}
