//! One K step's multiply-adds: the slices read back from shared memory, as f32 or integer four-vectors, or as packed 8-bit dot products.

use super::*;

/// One K step: both slices to shared memory between barriers, then 16 four-vector
/// multiply-adds per `k` into the accumulators (f32, or wrapping 32-bit integers).
pub(super) fn k_step(b: &mut ModuleBuilder, d: &Decl, st: &Setup, kb: Word) -> BuildResult<()> {
    let Decl {
        g,
        int,
        t_s,
        t_v4,
        pitch_a,
        pitch_b,
        sh_a,
        sh_b,
        p_wg_v4,
        c_scope_wg,
        c_sem,
        ..
    } = *d;
    let Setup {
        ref acc,
        a_at,
        b_at,
        ref slice_a,
        ref slice_b,
        ..
    } = *st;
    b.b.control_barrier(c_scope_wg, c_scope_wg, c_sem)?;
    copy(b, d, st, slice_a, kb)?;
    copy(b, d, st, slice_b, kb)?;
    b.b.control_barrier(c_scope_wg, c_scope_wg, c_sem)?;
    let mut sums: Vec<Word> = Vec::with_capacity(acc.len());
    for &v in acc {
        sums.push(b.b.load(t_v4, None, v, None, [])?);
    }
    if d.packed {
        packed_products(b, d, st, &mut sums)?;
        for (&v, &s) in acc.iter().zip(&sums) {
            b.b.store(v, s, None, [])?;
        }
        return Ok(());
    }
    let read = |b: &mut ModuleBuilder, sh, base, at| shared_vector(b, (p_wg_v4, t_v4), (sh, base, at));
    for kk in 0..g.bk {
        let a_row = b.add_u(a_at, kk * pitch_a)?;
        let b_row = b.add_u(b_at, kk * pitch_b)?;
        let av = [read(b, sh_a, a_row, 0)?, read(b, sh_a, a_row, 1)?];
        let bv = [read(b, sh_b, b_row, 0)?, read(b, sh_b, b_row, 1)?];
        for i in 0..BLOCK {
            let a = b.b.composite_extract(t_s, None, av[(i / VW) as usize], [i % VW])?;
            let a4 = if int {
                Some(b.b.composite_construct(t_v4, None, [a; 4])?)
            } else {
                None
            };
            for h in 0..2 {
                let slot = (2 * i + h) as usize;
                sums[slot] = match a4 {
                    Some(a4) => {
                        let prod = b.b.i_mul(t_v4, None, bv[h as usize], a4)?;
                        b.b.i_add(t_v4, None, sums[slot], prod)?
                    }
                    None => {
                        let prod = b.b.vector_times_scalar(t_v4, None, bv[h as usize], a)?;
                        b.b.f_add(t_v4, None, sums[slot], prod)?
                    }
                };
            }
        }
    }
    for (&v, &s) in acc.iter().zip(&sums) {
        b.b.store(v, s, None, [])?;
    }
    Ok(())
}

/// A K step's products of packed 8-bit slices into `sums`: per word row (four K), 64 packed
/// dot products (each exact in 32 bits), added wrapping like the widened kernel's.
pub(super) fn packed_products(b: &mut ModuleBuilder, d: &Decl, st: &Setup, sums: &mut [Word]) -> BuildResult<()> {
    let Decl {
        g,
        t_u32,
        t_v4,
        pitch_a,
        pitch_b,
        sh_a,
        sh_b,
        p_wg_v4,
        ..
    } = *d;
    let signed = st.slice_a.stored == ComponentType::I8;
    let t_i32 = b.b.type_int(32, 1);
    let read = |b: &mut ModuleBuilder, sh, base, at| shared_vector(b, (p_wg_v4, t_v4), (sh, base, at));
    let packed = Some(rspirv::spirv::PackedVectorFormat::PackedVectorFormat4x8Bit);
    for kk in 0..g.bk / PACK {
        let a_row = b.add_u(st.a_at, kk * pitch_a)?;
        let b_row = b.add_u(st.b_at, kk * pitch_b)?;
        let av = [read(b, sh_a, a_row, 0)?, read(b, sh_a, a_row, 1)?];
        let bv = [read(b, sh_b, b_row, 0)?, read(b, sh_b, b_row, 1)?];
        let b_words: Vec<Word> = (0..BLOCK)
            .map(|j| b.b.composite_extract(t_u32, None, bv[(j / VW) as usize], [j % VW]))
            .collect::<BuildResult<_>>()?;
        for i in 0..BLOCK {
            let a = b.b.composite_extract(t_u32, None, av[(i / VW) as usize], [i % VW])?;
            for h in 0..2 {
                let mut lanes = [0; VW as usize];
                for (e, lane) in lanes.iter_mut().enumerate() {
                    let bw = b_words[h * VW as usize + e];
                    *lane = if signed {
                        let dot = b.b.s_dot(t_i32, None, a, bw, packed)?;
                        b.b.bitcast(t_u32, None, dot)?
                    } else {
                        b.b.u_dot(t_u32, None, a, bw, packed)?
                    };
                }
                let dots = b.b.composite_construct(t_v4, None, lanes)?;
                let slot = 2 * i as usize + h;
                sums[slot] = b.b.i_add(t_v4, None, sums[slot], dots)?;
            }
        }
    }
    Ok(())
}

/// Vector `base + at` of the shared-memory slice `sh` (`p_wg_v4` points at its `t_v4`s).
pub(super) fn shared_vector(
    b: &mut ModuleBuilder,
    (p_wg_v4, t_v4): (Word, Word),
    (sh, base, at): (Word, Word, u32),
) -> BuildResult<Word> {
    let i = b.add_u(base, at)?;
    let p = b.b.access_chain(p_wg_v4, None, sh, [i])?;
    b.b.load(t_v4, None, p, NP, [])
}
