//! The epilogue: each element inside C, alpha * acc (+ beta * C), or the fused terms.

use super::*;

/// `alpha * x + beta * C` of one element (C at `p`), each term where present, in the
/// arithmetic's type (wrapping for integers).
pub(super) fn scaled(
    b: &mut ModuleBuilder,
    d: &Decl,
    (x, p): (Word, Word),
    (alpha, beta): (Option<Word>, Option<Word>),
) -> BuildResult<Word> {
    let t = d.t_s;
    let mul = |b: &mut ModuleBuilder, x, y| {
        if d.int {
            b.b.i_mul(t, None, x, y)
        } else {
            b.b.f_mul(t, None, x, y)
        }
    };
    let mut x = x;
    if let Some(a) = alpha {
        x = mul(b, x, a)?;
    }
    if let Some(bt) = beta {
        let old = b.b.load(t, None, p, None, [])?;
        let term = mul(b, old, bt)?;
        x = if d.int {
            b.b.i_add(t, None, x, term)?
        } else {
            b.b.f_add(t, None, x, term)?
        };
    }
    Ok(x)
}

/// The epilogue: each element inside C, alpha * acc (+ beta * C), or the fused terms.
pub(super) fn epilogue(
    mb: &mut ModuleBuilder,
    key: &KernelKey,
    d: &Decl,
    st: &Setup,
    fuse: Option<&mut Fused>,
) -> BuildResult<()> {
    let Decl {
        fused,
        int,
        t_bool,
        t_u32,
        t_f32,
        t_s,
        t_v4,
        t_out,
        v_pc,
        v_c,
        c0,
        ..
    } = *d;
    let Setup {
        ref acc,
        pm,
        pn,
        ldc,
        c_off,
        m0,
        n0,
        group,
        tr,
        tc,
        ..
    } = *st;
    let b = mb;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(v_pc, which as u32);
    // alpha and beta in the arithmetic's type: f32, or the integer result's bits.
    let scalar_of = |b: &mut ModuleBuilder, which: Pc| -> BuildResult<Word> {
        let bits = pc(b, which)?;
        if int {
            Ok(bits)
        } else {
            b.b.bitcast(t_f32, None, bits)
        }
    };
    let fuse = match fuse {
        Some(f) => {
            f.prepare(b, v_pc, group)?;
            Some(&*f)
        }
        None => None,
    };
    let p_sb_out = b.ptr(StorageClass::StorageBuffer, t_out);
    let alpha = if key.epilogue.alpha && !fused {
        Some(scalar_of(b, Pc::Alpha)?)
    } else {
        None
    };
    let beta = if key.epilogue.beta && !fused {
        Some(scalar_of(b, Pc::Beta)?)
    } else {
        None
    };
    let row0 = b.mul_u(tr, BLOCK)?;
    let row0 = b.b.i_add(t_u32, None, m0, row0)?;
    let col0 = b.mul_u(tc, BLOCK)?;
    let col0 = b.b.i_add(t_u32, None, n0, col0)?;
    for i in 0..BLOCK {
        let row = b.add_u(row0, i)?;
        let ok_r = b.b.u_less_than(t_bool, None, row, pm)?;
        let base = b.b.i_mul(t_u32, None, row, ldc)?;
        let base = b.b.i_add(t_u32, None, base, c_off)?;
        for h in 0..2 {
            let sum = b.b.load(t_v4, None, acc[(2 * i + h) as usize], None, [])?;
            for e in 0..VW {
                let col = b.add_u(col0, h * VW + e)?;
                let ok_c = b.b.u_less_than(t_bool, None, col, pn)?;
                let ok = b.b.logical_and(t_bool, None, ok_r, ok_c)?;
                b.if_then(ok, |b| {
                    let gi = b.b.i_add(t_u32, None, base, col)?;
                    let p = b.b.access_chain(p_sb_out, None, v_c, [c0, gi])?;
                    let mut x = b.b.composite_extract(t_s, None, sum, [e])?;
                    if let Some(f) = fuse {
                        x = f.element(b, x, (row, col), p)?;
                    }
                    let x = scaled(b, d, (x, p), (alpha, beta))?;
                    b.b.store(p, x, None, [])?;
                    Ok(())
                })?;
            }
        }
    }
    Ok(())
}
