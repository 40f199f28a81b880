//! Blocks of a ggml format ([`QuantType`]) dequantized into a dense copy, in a pass of its own
//! into scratch memory, which the GEMM then reads as an f16 or f32 operand (llama.cpp's CUDA
//! backend also dequantizes to f16 for its large-batch GEMMs). Each value is
//! `blocks::value`'s, so an f32 copy equals the CPU reference bit for bit; an f16 copy is
//! that value rounded to nearest even.
//!
//! Bindings: 0 = the blocks as 32-bit words (a row's blocks need not start on a word), 2 = the
//! copy (16-byte vectors). Push constants ([`super::PushConstants`]): `m` = rows, `n` = units of
//! [`UNIT`] values per row (K / 32), `k` = workgroups dispatched (they stride over the copy
//! together), `lda_vec` = bytes per row of blocks, `a_off_vec` = the first block's byte in the
//! binding, `ldb_vec` and `c_off` = the copy's leading dimension and first vector (16-byte
//! vectors).

/// Values each invocation dequantizes at a time (a block of the 32-value formats, a sub-block of
/// the others).
pub use super::blocks::UNIT;
use super::blocks::{unit, value};
use super::builder::{BuildResult, ModuleBuilder};
use super::convert::narrow_f32x8;
use super::push::Pc;
use crate::config::ComponentType;
use crate::quant::QuantType;
use rspirv::spirv::{BuiltIn, FunctionControl, StorageClass, Word};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;
/// Most workgroups per dispatch: enough to keep a large GPU's memory busy.
pub const MAX_GROUPS: u32 = 8192;

pub(super) fn emit(q: QuantType, to: ComponentType) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let t_void = b.t_void();
    let t_u32 = b.t_u32();
    let t_uvec3 = b.t_uvec(3);
    let t_uvec4 = b.t_uvec(4);
    let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = b.push_constant_block(super::push::PC_MEMBERS);
    let words = b.storage_buffer(t_u32, 4, 0, true);
    let v_dst = b.storage_buffer(t_uvec4, 16, 2, false);

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    let l_entry = b.b.begin_block(None)?;
    let pc = |b: &mut ModuleBuilder, i: Pc| b.push_constant(v_pc, i as u32);
    let (rows, units, groups) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::K)?);
    let (row_bytes, first_byte) = (pc(b, Pc::LdaVec)?, pc(b, Pc::AOff)?);
    let (dst_ld, dst_off) = (pc(b, Pc::LdbVec)?, pc(b, Pc::COff)?);
    b.grid_stride_rows(l_entry, (v_local, v_wg, THREADS), (rows, units, groups), |b, r, u| {
        let row = b.b.i_mul(t_u32, None, r, row_bytes)?;
        let row = b.b.i_add(t_u32, None, row, first_byte)?;
        let (blk, s) = unit(b, q, words, row, u)?;
        let values = (0..UNIT)
            .map(|l| value(b, q, &blk, s, l))
            .collect::<BuildResult<Vec<Word>>>()?;
        let row_at = b.b.i_mul(t_u32, None, r, dst_ld)?;
        let row_at = b.b.i_add(t_u32, None, row_at, dst_off)?;
        let p_sb_uvec4 = b.ptr(StorageClass::StorageBuffer, t_uvec4);
        let u0 = b.c_u32(0);
        // The unit's 32 values are 8 vectors of f32 or 4 of f16 from vector `u * that`.
        let per = 16 / to.size_bytes();
        let first = b.mul_u(u, UNIT / per)?;
        let first = b.b.i_add(t_u32, None, row_at, first)?;
        for (v, eight) in values.chunks(8).enumerate() {
            let mut bits = [0; 8];
            for (out, &x) in bits.iter_mut().zip(eight) {
                *out = b.b.bitcast(t_u32, None, x)?;
            }
            let lo = b.b.composite_construct(t_uvec4, None, bits[..4].to_vec())?;
            let hi = b.b.composite_construct(t_uvec4, None, bits[4..].to_vec())?;
            let stores = if to == ComponentType::F32 {
                vec![(2 * v as u32, lo), (2 * v as u32 + 1, hi)]
            } else {
                vec![(v as u32, narrow_f32x8(b, lo, hi, to)?)]
            };
            for (at, x) in stores {
                let at = b.add_u(first, at)?;
                let p = b.b.access_chain(p_sb_uvec4, None, v_dst, [u0, at])?;
                b.b.store(p, x, None, [])?;
            }
        }
        Ok(())
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}
