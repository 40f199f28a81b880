//! The push-constant layout the kernels of a GEMM's passes share (the GEMM kernels of every
//! scope, the SIMT kernel, fused epilogues, the accurate split's largest-magnitude pass; the host
//! side is [`super::PushConstants`]), and the batch offsets the GEMM kernels derive from it.

use super::builder::{BuildResult, ModuleBuilder};
use rspirv::spirv::Word;

/// Push-constant member indices (see `PushConstants`).
#[derive(Copy, Clone)]
pub(super) enum Pc {
    M = 0,
    N,
    K,
    LdaVec,
    LdbVec,
    Ldc,
    AOff,
    BOff,
    COff,
    Alpha,
    Beta,
    ABatch,
    BBatch,
    CBatch,
    Row0,
    Col0,
}
pub(super) const PC_MEMBERS: u32 = 16;

/// The offsets of A and B (vectors) and C (elements) in batch entry `z` (the workgroup's z, or
/// a grouped GEMM's group): `off + z * batch stride`. A grid of one entry has z = 0 and costs
/// three integer ops.
pub(super) fn batch_offsets(b: &mut ModuleBuilder, v_pc: Word, z: Word) -> BuildResult<[Word; 3]> {
    let t_u32 = b.t_u32();
    let mut out = [0; 3];
    for (slot, (off, stride)) in
        out.iter_mut()
            .zip([(Pc::AOff, Pc::ABatch), (Pc::BOff, Pc::BBatch), (Pc::COff, Pc::CBatch)])
    {
        let off = b.push_constant(v_pc, off as u32)?;
        let stride = b.push_constant(v_pc, stride as u32)?;
        let step = b.b.i_mul(t_u32, None, z, stride)?;
        *slot = b.b.i_add(t_u32, None, off, step)?;
    }
    Ok(out)
}

/// A copying pass's (the converting and transposing passes') source and copy: the source's
/// leading dimension and first vector, then the copy's, all in vectors (`LdaVec`, `AOff`,
/// `LdbVec`, `COff`).
pub(super) fn copy_windows(b: &mut ModuleBuilder, v_pc: Word) -> BuildResult<[Word; 4]> {
    Ok([
        b.push_constant(v_pc, Pc::LdaVec as u32)?,
        b.push_constant(v_pc, Pc::AOff as u32)?,
        b.push_constant(v_pc, Pc::LdbVec as u32)?,
        b.push_constant(v_pc, Pc::COff as u32)?,
    ])
}
