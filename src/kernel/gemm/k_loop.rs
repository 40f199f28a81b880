//! The loop over K: the prefetch from global memory, the stores to shared memory, and the fragments' loads and multiply-adds.

use super::*;

/// Non-private pointers: the shared tiles are written and read across invocations.
pub(super) const NP: Option<MemoryAccess> = Some(MemoryAccess::NON_PRIVATE_POINTER);

/// Global -> register prefetch of one K step of `op`, from `buf` at `off` with leading dimension
/// `ld` (in 16-byte vectors of the stored type; a shared vector of f32 storage is two of them),
/// its rows and columns bounded by `outer` and `inner` (first, limit).
#[allow(clippy::too_many_arguments)]
pub(super) fn prefetch(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    d: &Decl,
    c_vw: Word,
    op: &Operand2d,
    (buf, off, ld): (Word, Word, Word),
    outer: (Word, Word),
    inner: (Word, Word),
) -> BuildResult<()> {
    let Decl {
        vw,
        ty: Types {
            t_u32, t_bool, t_uvec4, ..
        },
        ptr: Pointers { p_sb_uvec4, .. },
        k: Consts { c0, zero_uvec4, .. },
        ..
    } = *d;
    let (outer_base, outer_limit) = outer;
    let (inner_base, inner_limit) = inner;
    let parts = op.load.storage_vectors();
    let inner_base_vec = b.div_u(inner_base, vw / parts)?;
    let row_base = b.b.i_add(t_u32, None, off, inner_base_vec)?;
    for (t, &(o, iv, _)) in op.slots.iter().enumerate() {
        let go = b.b.i_add(t_u32, None, outer_base, o)?;
        let iv_el = b.b.i_mul(t_u32, None, iv, c_vw)?;
        let gi = b.b.i_add(t_u32, None, inner_base, iv_el)?;
        let ok_o = b.b.u_less_than(t_bool, None, go, outer_limit)?;
        let row = b.b.i_mul(t_u32, None, go, ld)?;
        let idx = b.b.i_add(t_u32, None, row_base, row)?;
        let iv_st = if parts == 1 { iv } else { b.mul_u(iv, parts)? };
        let idx = b.b.i_add(t_u32, None, idx, iv_st)?;
        for h in 0..parts {
            // The second storage vector of a slot: its first element and index, one on.
            let (gi_h, idx_h) = if h == 0 {
                (gi, idx)
            } else {
                (b.add_u(gi, h * vw / parts)?, b.add_u(idx, h)?)
            };
            let ok_i = b.b.u_less_than(t_bool, None, gi_h, inner_limit)?;
            let ok = b.b.logical_and(t_bool, None, ok_o, ok_i)?;
            let val = if key.probe == Probe::Unchecked {
                let p = b.b.access_chain(p_sb_uvec4, None, buf, [c0, idx_h])?;
                b.b.load(t_uvec4, None, p, None, [])?
            } else {
                b.load_vector_or_zero((buf, off), idx_h, ok, zero_uvec4)?
            };
            b.b.store(op.regs[t][h as usize], val, None, [])?;
        }
    }
    Ok(())
}

/// An operand's (outer, inner) bounds for a K step from `kb`: A's rows are M, B's columns N.
pub(super) fn bounds(
    layout: Layout,
    (mn0, mn_limit): (Word, Word),
    (kb, pk): (Word, Word),
    is_a: bool,
) -> ((Word, Word), (Word, Word)) {
    match (layout, is_a) {
        (Layout::RowMajor, true) | (Layout::ColMajor, false) => ((mn0, mn_limit), (kb, pk)),
        (Layout::ColMajor, true) | (Layout::RowMajor, false) => ((kb, pk), (mn0, mn_limit)),
    }
}

/// Both operands' prefetch of the K step from `kb`.
pub(super) fn prefetch_all(b: &mut ModuleBuilder, key: &KernelKey, d: &Decl, st: &Setup, kb: Word) -> BuildResult<()> {
    let (o, i) = bounds(key.a_layout, (st.m0, st.pm), (kb, st.pk), true);
    prefetch(b, key, d, st.c_vw, &st.op_a, (d.io.v_a, st.a_off, st.lda), o, i)?;
    let (o, i) = bounds(key.b_layout, (st.n0, st.pn), (kb, st.pk), false);
    prefetch(b, key, d, st.c_vw, &st.op_b, (d.io.v_b, st.b_off, st.ldb), o, i)
}

/// Stores `op`'s prefetched vectors into its shared tile at `stage_off` units, converted here
/// rather than as loaded, so the loads stay in flight over the multiplies.
pub(super) fn store_shared(
    b: &mut ModuleBuilder,
    d: &Decl,
    op: &Operand2d,
    p_unit: Word,
    stage_off: u32,
) -> BuildResult<()> {
    let Decl {
        cfg,
        ty: Types { t_uvec4, .. },
        ..
    } = *d;
    let parts = VECTOR_BYTES / op.unit_bytes;
    for (t, &(_, _, sidx)) in op.slots.iter().enumerate() {
        // Converted here rather than as loaded, so the loads stay in flight over the multiplies.
        // (vector, shared offset): one, or a split's high and low parts.
        let vals: Vec<(Word, u32)> = match (op.regs[t].as_slice(), op.split) {
            ([one], _) => vec![(b.b.load(t_uvec4, None, *one, None, [])?, 0)],
            ([lo, hi], split) => {
                let lo = b.b.load(t_uvec4, None, *lo, None, [])?;
                let hi = b.b.load(t_uvec4, None, *hi, None, [])?;
                match split {
                    None => vec![(crate::kernel::convert::narrow_f32x8(b, lo, hi, cfg.component_type)?, 0)],
                    Some((scale, lo_units)) => {
                        let (h, l) = crate::kernel::convert::split_f32x8(b, lo, hi, scale)?;
                        vec![(h, 0), (l, lo_units)]
                    }
                }
            }
            _ => unreachable!("one or two storage vectors per slot"),
        };
        for (val, part_off) in vals {
            for h in 0..parts {
                let part = match parts {
                    1 => val,
                    2 => b.b.vector_shuffle(op.unit_t, None, val, val, [2 * h, 2 * h + 1])?,
                    _ => b.b.composite_extract(op.unit_t, None, val, [h])?,
                };
                let at = b.add_u(sidx, h + stage_off + part_off)?;
                let p = b.b.access_chain(p_unit, None, op.shared, [at])?;
                b.b.store(p, part, NP, [])?;
            }
        }
    }
    Ok(())
}

/// The main loop's constants (emitted before it, in this order).
pub(super) struct LoopConsts {
    pub(super) c_pitch_a: Word,
    pub(super) c_pitch_b: Word,
    pub(super) c_bk_bit: Word,
    pub(super) operands: Option<rspirv::spirv::CooperativeMatrixOperands>,
}

/// The workgroup barrier between K steps (none under [`Probe::NoBarrier`]).
pub(super) fn barrier(b: &mut ModuleBuilder, key: &KernelKey, d: &Decl) -> BuildResult<()> {
    if key.probe != Probe::NoBarrier {
        b.b.control_barrier(d.k.c_scope_wg, d.k.c_scope_wg, d.k.c_sem)?;
    }
    Ok(())
}

/// One K step from shared buffer `stage`. With two stages, the step writes buffer `stage` while
/// slower subgroups may still read the other one; a subgroup can only come back to this buffer
/// after all passed the barrier below, so one barrier per step suffices. The buffer is a
/// compile-time constant (the loop is unrolled by two) so fragment addresses stay immediate.
pub(super) fn step(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    (d, st, lc): (&Decl, &Setup, &LoopConsts),
    kb: Word,
    stage: u32,
) -> BuildResult<()> {
    let Decl {
        s,
        ty: Types { t_u32, .. },
        lay: SharedLayout {
            stage_units_a,
            stage_units_b,
            ..
        },
        ptr: Pointers {
            p_wg_unit_a,
            p_wg_unit_b,
            ..
        },
        k: Consts { c_bk, .. },
        ..
    } = *d;
    let probe = key.probe;
    if s.stages() == 1 {
        barrier(b, key, d)?;
    }
    if probe != Probe::MmaOnly {
        store_shared(b, d, &st.op_a, p_wg_unit_a, stage * stage_units_a)?;
        store_shared(b, d, &st.op_b, p_wg_unit_b, stage * stage_units_b)?;
    }
    barrier(b, key, d)?;
    let kb_next = b.b.i_add(t_u32, None, kb, c_bk)?;
    match probe {
        Probe::MmaOnly => {}
        // Alternate between the first two steps' addresses: L1 hits, no L2 traffic.
        Probe::NoGlobal => {
            let k_alt = b.b.bitwise_and(t_u32, None, kb_next, lc.c_bk_bit)?;
            prefetch_all(b, key, d, st, k_alt)?;
        }
        _ => prefetch_all(b, key, d, st, kb_next)?,
    }
    if probe == Probe::NoMma {
        return Ok(());
    }
    multiply(b, key, (d, st, lc), stage)
}

/// The step's multiplies over the tile in shared buffer `stage`, one K slice of the config at a
/// time, into the accumulators.
pub(super) fn multiply(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    (d, st, lc): (&Decl, &Setup, &LoopConsts),
    stage: u32,
) -> BuildResult<()> {
    let Decl {
        cfg,
        s,
        g,
        split,
        ty: Types { t_mat_acc, .. },
        lay: SharedLayout {
            lo_units_a, lo_units_b, ..
        },
        ..
    } = *d;
    let n_frag = (s.fr_m() * s.fr_n()) as usize;
    let mut acc: Vec<Word> = Vec::with_capacity(n_frag);
    for &v in &st.acc_vars {
        acc.push(b.b.load(t_mat_acc, None, v, None, [])?);
    }
    // The split sums each K step's products from zero and adds them to the accumulators with
    // f32 adds: matrix units may round their f32 accumulation less carefully (on the H100,
    // f16 products summed over K=4096 in the accumulator came out 4x further from f64 than
    // cuBLAS's SGEMM), and the split must match SGEMM.
    let mut step_sums: Vec<Word> = if split {
        vec![st.zero_acc; acc.len()]
    } else {
        Vec::new()
    };
    // Fragments of each part: the high parts, then (split) the low parts.
    let part_offs: &[(u32, u32)] = if split {
        &[(0, 0), (lo_units_a, lo_units_b)]
    } else {
        &[(0, 0)]
    };
    for kk in 0..g.bk / cfg.k {
        let sums = if split { &mut step_sums } else { &mut acc };
        slice(b, key, (d, st, lc), (kk, stage), part_offs, sums)?;
    }
    for (slot, sum) in step_sums.into_iter().enumerate() {
        acc[slot] = b.b.f_add(t_mat_acc, None, acc[slot], sum)?;
    }
    for (&v, &val) in st.acc_vars.iter().zip(&acc) {
        b.b.store(v, val, None, [])?;
    }
    Ok(())
}

/// K slice `kk` of the step: each A fragment of the subgroup loaded once (each part: the high,
/// then a split's low), then each B fragment loaded and multiplied into the `fr_m` sums of its
/// column.
pub(super) fn slice(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    (d, st, lc): (&Decl, &Setup, &LoopConsts),
    (kk, stage): (u32, u32),
    part_offs: &[(u32, u32)],
    sums: &mut [Word],
) -> BuildResult<()> {
    let Decl {
        cfg,
        s,
        es,
        split,
        ty: Types {
            t_mat_a,
            t_mat_b,
            t_mat_acc,
            ..
        },
        lay:
            SharedLayout {
                unit_a,
                unit_b,
                pitch_a,
                pitch_b,
                stage_units_a,
                stage_units_b,
                ..
            },
        sh: SharedArrays { sh_a, sh_b, .. },
        ptr: Pointers {
            p_wg_unit_a,
            p_wg_unit_b,
            ..
        },
        ..
    } = *d;
    let a_frag_off = |i: u32| match key.a_layout {
        Layout::RowMajor => i * cfg.m * pitch_a + kk * cfg.k * es / unit_a,
        Layout::ColMajor => kk * cfg.k * pitch_a + i * cfg.m * es / unit_a,
    };
    let b_frag_off = |j: u32| match key.b_layout {
        Layout::RowMajor => kk * cfg.k * pitch_b + j * cfg.n * es / unit_b,
        Layout::ColMajor => j * cfg.n * pitch_b + kk * cfg.k * es / unit_b,
    };
    let mut a_frags: Vec<Vec<Word>> = vec![Vec::new(); part_offs.len()];
    for (part, &(off_a, _)) in part_offs.iter().enumerate() {
        for i in 0..s.fr_m() {
            let at = b.add_u(st.a_base, a_frag_off(i) + stage * stage_units_a + off_a)?;
            let p = b.b.access_chain(p_wg_unit_a, None, sh_a, [at])?;
            a_frags[part].push(b.b.cooperative_matrix_load_khr(
                t_mat_a,
                None,
                p,
                st.a_layout_id,
                Some(lc.c_pitch_a),
                NP,
                [],
            )?);
        }
    }
    for j in 0..s.fr_n() {
        let mut b_frags = Vec::new();
        for &(_, off_b) in part_offs {
            let at = b.add_u(st.b_base, b_frag_off(j) + stage * stage_units_b + off_b)?;
            let p = b.b.access_chain(p_wg_unit_b, None, sh_b, [at])?;
            b_frags.push(b.b.cooperative_matrix_load_khr(
                t_mat_b,
                None,
                p,
                st.b_layout_id,
                Some(lc.c_pitch_b),
                NP,
                [],
            )?);
        }
        // (A part, B part) products: hi*hi alone, or the small lo*hi and hi*lo first.
        let terms: &[(usize, usize)] = if split { &[(1, 0), (0, 1), (0, 0)] } else { &[(0, 0)] };
        for i in 0..s.fr_m() {
            let sum = &mut sums[(i * s.fr_n() + j) as usize];
            for &(pa, pb) in terms {
                *sum = b.mul_add(t_mat_acc, (a_frags[pa][i as usize], b_frags[pb], *sum), lc.operands)?;
            }
        }
    }
    Ok(())
}

/// The loop over K: the first step's prefetch, then the steps (two per iteration with two
/// shared buffers, the second where K has one more).
pub(super) fn main_loop(b: &mut ModuleBuilder, key: &KernelKey, d: &Decl, st: &Setup) -> BuildResult<()> {
    let Decl {
        cfg,
        s,
        g,
        ty: Types { t_u32, t_bool, .. },
        lay: SharedLayout { pitch_a, pitch_b, .. },
        k: Consts { c0, c_bk, .. },
        ..
    } = *d;
    let Setup { pk, .. } = *st;
    let lc = LoopConsts {
        c_pitch_a: b.c_u32(pitch_a),
        c_pitch_b: b.c_u32(pitch_b),
        operands: mul_add_operands(&cfg),
        c_bk_bit: b.c_u32(g.bk),
    };
    let step = |b: &mut ModuleBuilder, kb: Word, stage: u32| step(b, key, (d, st, &lc), kb, stage);
    prefetch_all(b, key, d, st, c0)?;
    b.counted_loop((c0, pk, s.stages() * g.bk), |b, kb| {
        step(b, kb, 0)?;
        if s.stages() == 2 {
            // The second buffer's step, if K has one more (workgroup-uniform, so its barrier is too).
            let kb1 = b.b.i_add(t_u32, None, kb, c_bk)?;
            let more1 = b.b.u_less_than(t_bool, None, kb1, pk)?;
            b.if_then(more1, |b| {
                step(b, kb1, 1)?;
                Ok(())
            })?;
        }
        Ok(())
    })?;
    Ok(())
}
