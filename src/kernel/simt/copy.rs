//! Each K step's slices from global to shared memory, widened to 32 bits, or packed four 8-bit values to a word.

use super::*;

/// One operand's slice of one K step, global -> shared. `k_outer`: stored `[k][x]` in global
/// memory (vectors along x: stored as whole four-vectors); else `[x][k]` (vectors along k:
/// transposed into scalars). `x0`/`x_limit`: the slice's first row of C (or column) and M (or
/// N). `stored`: the type in global memory.
pub(super) struct Slice {
    pub(super) stored: ComponentType,
    pub(super) buf: Word,
    pub(super) off: Word,
    pub(super) ld: Word,
    pub(super) sh: Word,
    pub(super) pitch: u32,
    pub(super) extent: u32,
    pub(super) k_outer: bool,
    pub(super) x0: Word,
    pub(super) x_limit: Word,
}

/// Non-private pointers: the shared slices are written and read across invocations.
pub(super) const NP: Option<MemoryAccess> = Some(MemoryAccess::NON_PRIVATE_POINTER);

/// Copies `op`'s slice of the K step from `kb` into shared memory, widened to 32 bits. Where
/// the slice has fewer vectors than a whole number of rounds of the workgroup (8-bit operands'
/// K-contiguous slices), the invocations past its end copy nothing.
pub(super) fn copy(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    if d.packed {
        return copy_packed(b, d, st, op, kb);
    }
    let Decl {
        g,
        t_bool,
        t_u32,
        t_s,
        p_wg_v4,
        p_wg_s,
        zero_uvec4,
        ..
    } = *d;
    let (tid, pk) = (st.tid, st.pk);
    let per = per_vector(op.stored);
    let (outer, inner) = if op.k_outer {
        (g.bk, op.extent)
    } else {
        (op.extent, g.bk)
    };
    let inner_vecs = inner / per;
    let total = outer * inner_vecs;
    let (outer_base, outer_limit, inner_base, inner_limit) = if op.k_outer {
        (kb, pk, op.x0, op.x_limit)
    } else {
        (op.x0, op.x_limit, kb, pk)
    };
    let inner_base_vec = b.div_u(inner_base, per)?;
    let row_base = b.b.i_add(t_u32, None, op.off, inner_base_vec)?;
    for_each_item(b, (tid, g.threads, total), |b, v| {
        let o = b.div_u(v, inner_vecs)?;
        let iv = b.mod_u(v, inner_vecs)?;
        let go = b.b.i_add(t_u32, None, outer_base, o)?;
        let iv_el = b.mul_u(iv, per)?;
        let gi = b.b.i_add(t_u32, None, inner_base, iv_el)?;
        let ok_o = b.b.u_less_than(t_bool, None, go, outer_limit)?;
        let ok_i = b.b.u_less_than(t_bool, None, gi, inner_limit)?;
        let ok = b.b.logical_and(t_bool, None, ok_o, ok_i)?;
        let row = b.b.i_mul(t_u32, None, go, op.ld)?;
        let idx = b.b.i_add(t_u32, None, row_base, row)?;
        let idx = b.b.i_add(t_u32, None, idx, iv)?;
        let raw = b.load_vector_or_zero((op.buf, op.off), idx, ok, zero_uvec4)?;
        let glsl = if op.stored == ComponentType::F16 { b.glsl() } else { 0 };
        if op.k_outer {
            // The vector's elements are x = iv*per.. of row o: shared [o][x], whole four-vectors.
            let vals = widen_in_order(b, glsl, op.stored, raw)?;
            let at = b.mul_u(o, op.pitch)?;
            let first = b.mul_u(iv, per / VW)?;
            let at = b.b.i_add(t_u32, None, at, first)?;
            for (j, val) in (0u32..).zip(vals) {
                let at = b.add_u(at, j)?;
                let p = b.b.access_chain(p_wg_v4, None, op.sh, [at])?;
                b.b.store(p, val, NP, [])?;
            }
        } else {
            // Element e of the vector is k = iv*per + e of row o: shared [k][o].
            let comp = b.mod_u(o, VW)?;
            let col_vec = b.div_u(o, VW)?;
            for (val, index) in widen(b, glsl, op.stored, raw)? {
                for (lane, e) in (0u32..).zip(index) {
                    let k = b.add_u(iv_el, e)?;
                    let at = b.mul_u(k, op.pitch)?;
                    let at = b.b.i_add(t_u32, None, at, col_vec)?;
                    let x = b.b.composite_extract(t_s, None, val, [lane])?;
                    let p = b.b.access_chain(p_wg_s, None, op.sh, [at, comp])?;
                    b.b.store(p, x, NP, [])?;
                }
            }
        }
        Ok(())
    })
}

/// Runs `body` for items `tid, tid + threads, ...` below `total` (ids): whole rounds of the
/// workgroup unguarded, a last partial one behind a branch.
pub(super) fn for_each_item(
    b: &mut ModuleBuilder,
    (tid, threads, total): (Word, u32, u32),
    mut body: impl FnMut(&mut ModuleBuilder, Word) -> BuildResult<()>,
) -> BuildResult<()> {
    let t_bool = b.t_bool();
    for t in 0..total.div_ceil(threads) {
        let v = b.add_u(tid, t * threads)?;
        if (t + 1) * threads <= total {
            body(b, v)?;
            continue;
        }
        let c_total = b.c_u32(total);
        let inside = b.b.u_less_than(t_bool, None, v, c_total)?;
        b.if_then(inside, |b| {
            body(b, v)?;
            Ok(())
        })?;
    }
    Ok(())
}

/// [`copy`] for packed 8-bit operands: shared `[k / 4][x]` words, four K-consecutive bytes
/// each. Stored `[x][k]`, a word of a 16-byte vector is such a word already; stored `[k][x]`,
/// an invocation reads four rows' vectors of 16 x and interleaves their bytes.
pub(super) fn copy_packed(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    if op.k_outer {
        copy_interleaved(b, d, st, op, kb)
    } else {
        copy_words(b, d, st, op, kb)
    }
}

/// Bytes per 16-byte vector of an 8-bit operand.
pub(super) const BYTES: u32 = 16;

/// Whether element (`k`, `x`) of `op` lies inside the matrix (ids).
pub(super) fn inside(b: &mut ModuleBuilder, (st, op): (&Setup, &Slice), (k, x): (Word, Word)) -> BuildResult<Word> {
    let t_bool = b.t_bool();
    let ok_k = b.b.u_less_than(t_bool, None, k, st.pk)?;
    let ok_x = b.b.u_less_than(t_bool, None, x, op.x_limit)?;
    b.b.logical_and(t_bool, None, ok_k, ok_x)
}

/// [`copy_packed`] of an operand stored `[x][k]`: each 32-bit word of a vector is four
/// K-consecutive bytes of one x, stored to its word row as it is.
pub(super) fn copy_words(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    let Decl {
        g,
        t_u32,
        p_wg_s,
        zero_uvec4,
        ..
    } = *d;
    let per = BYTES;
    let k_vecs = g.bk / per;
    let kb_vec = b.div_u(kb, per)?;
    let row_base = b.b.i_add(t_u32, None, op.off, kb_vec)?;
    for_each_item(b, (st.tid, g.threads, op.extent * k_vecs), |b, v| {
        let o = b.div_u(v, k_vecs)?;
        let iv = b.mod_u(v, k_vecs)?;
        let x = b.b.i_add(t_u32, None, op.x0, o)?;
        let iv_el = b.mul_u(iv, per)?;
        let k = b.b.i_add(t_u32, None, kb, iv_el)?;
        let ok = inside(b, (st, op), (k, x))?;
        let row = b.b.i_mul(t_u32, None, x, op.ld)?;
        let idx = b.b.i_add(t_u32, None, row_base, row)?;
        let idx = b.b.i_add(t_u32, None, idx, iv)?;
        let raw = b.load_vector_or_zero((op.buf, op.off), idx, ok, zero_uvec4)?;
        let comp = b.mod_u(o, VW)?;
        let col_vec = b.div_u(o, VW)?;
        let first_row = b.mul_u(iv, per / PACK)?;
        for w in 0..per / PACK {
            let word = b.b.composite_extract(t_u32, None, raw, [w])?;
            let krow = b.add_u(first_row, w)?;
            let at = b.mul_u(krow, op.pitch)?;
            let at = b.b.i_add(t_u32, None, at, col_vec)?;
            let p = b.b.access_chain(p_wg_s, None, op.sh, [at, comp])?;
            b.b.store(p, word, NP, [])?;
        }
        Ok(())
    })
}

/// [`copy_packed`] of an operand stored `[k][x]`: an invocation reads four K rows' vectors of
/// the same 16 x and moves byte `e` of row `r` to byte `r` of x's word.
pub(super) fn copy_interleaved(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    let Decl {
        g,
        t_u32,
        t_v4,
        p_wg_v4,
        zero_uvec4,
        ..
    } = *d;
    let per = BYTES;
    let x_vecs = op.extent / per;
    let x0_vec = b.div_u(op.x0, per)?;
    let row_base = b.b.i_add(t_u32, None, op.off, x0_vec)?;
    let splat = |b: &mut ModuleBuilder, v: [u32; 4]| {
        let c = v.map(|x| b.c_u32(x));
        b.b.constant_composite(t_v4, c)
    };
    let (bytes, low) = (splat(b, [0, 8, 16, 24]), splat(b, [0xff; 4]));
    for_each_item(b, (st.tid, g.threads, (g.bk / PACK) * x_vecs), |b, v| {
        let k4 = b.div_u(v, x_vecs)?;
        let xv = b.mod_u(v, x_vecs)?;
        let xv_el = b.mul_u(xv, per)?;
        let x = b.b.i_add(t_u32, None, op.x0, xv_el)?;
        let k_first = b.mul_u(k4, PACK)?;
        let k_first = b.b.i_add(t_u32, None, kb, k_first)?;
        let mut rows = Vec::with_capacity(PACK as usize);
        for r in 0..PACK {
            let k = b.add_u(k_first, r)?;
            let ok = inside(b, (st, op), (k, x))?;
            let row = b.b.i_mul(t_u32, None, k, op.ld)?;
            let idx = b.b.i_add(t_u32, None, row_base, row)?;
            let idx = b.b.i_add(t_u32, None, idx, xv)?;
            rows.push(b.load_vector_or_zero((op.buf, op.off), idx, ok, zero_uvec4)?);
        }
        // Word j of each row holds x = 4j..4j+4: byte e of row r goes to byte r of x's word.
        let at = b.mul_u(k4, op.pitch)?;
        let first = b.mul_u(xv, per / VW)?;
        let at = b.b.i_add(t_u32, None, at, first)?;
        for j in 0..per / VW {
            // Lane e of row r's bytes, moved to byte r: OR over the rows.
            let mut packed = b.b.constant_null(t_v4);
            for (r, &raw) in (0u32..).zip(&rows) {
                let word = b.b.composite_extract(t_u32, None, raw, [j])?;
                let words = b.b.composite_construct(t_v4, None, [word; 4])?;
                let each = b.b.shift_right_logical(t_v4, None, words, bytes)?;
                let each = b.b.bitwise_and(t_v4, None, each, low)?;
                let to = splat(b, [8 * r; 4]);
                let placed = b.b.shift_left_logical(t_v4, None, each, to)?;
                packed = b.b.bitwise_or(t_v4, None, packed, placed)?;
            }
            let at = b.add_u(at, j)?;
            let p = b.b.access_chain(p_wg_v4, None, op.sh, [at])?;
            b.b.store(p, packed, NP, [])?;
        }
        Ok(())
    })
}
