//! Each workgroup's set-up: the accumulators, the operands' copy slots and registers, the push constants, the tile's place and the fragments' bases in shared memory.

use super::*;

/// What the stages after the set-up refer to: the accumulators, each operand's copy slots and
/// registers, the push constants and the tile's coordinates, and the fragments' bases in shared
/// memory.
pub(super) struct Setup {
    pub(super) acc_vars: Vec<Word>,
    pub(super) op_a: Operand2d,
    pub(super) op_b: Operand2d,
    pub(super) a_off: Word,
    pub(super) b_off: Word,
    pub(super) c_off: Word,
    pub(super) pm: Word,
    pub(super) pn: Word,
    pub(super) pk: Word,
    pub(super) lda: Word,
    pub(super) ldb: Word,
    pub(super) ldc: Word,
    pub(super) m0: Word,
    pub(super) n0: Word,
    pub(super) sg: Word,
    pub(super) lane: Word,
    pub(super) scales: Option<[(Word, Word); 2]>,
    pub(super) zero_acc: Word,
    pub(super) c_vw: Word,
    pub(super) a_sg_rows: Word,
    pub(super) b_sg_cols: Word,
    pub(super) a_base: Word,
    pub(super) a_layout_id: Word,
    pub(super) b_base: Word,
    pub(super) b_layout_id: Word,
}

/// The function's first block: its variables (accumulators, prefetch registers), then the
/// invocation's ids, the push constants, the tile (an empty one returns), the epilogue's and the
/// split's values, the copy slots, zeroed accumulators and the fragments' bases.
pub(super) fn setup(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl, fuse: Option<&mut Fused>) -> BuildResult<Setup> {
    let Decl {
        s, g, vw, ty, io, k, ..
    } = *d;
    let Variables {
        acc_vars,
        regs: (regs_a, regs_b),
        per_thread: (a_per_thread, b_per_thread),
    } = function_variables(mb, key, d);
    let [load_a, load_b] = key.loads;
    let b = mb;
    macro_rules! u {
        ($v:expr) => {
            b.c_u32($v)
        };
    }
    let Ids {
        tid,
        wg,
        sg,
        lane,
        pc: [pn, pk, lda, ldb, ldc, pm],
    } = invocation_ids(b, d)?;
    let at = (g.bm, g.bn);
    let here = tile(b, (io.v_pc, wg), (pm, pn), at, s.raster_group(), io.v_groups)?;
    skip_empty(b, &here)?;
    let Tile {
        offsets: [a_off, b_off, c_off],
        pm,
        m0,
        n0,
        group,
    } = here;
    if let Some(f) = fuse {
        f.prepare(b, io.v_pc, group)?;
    }
    // The split's scales: (s_a, 1/s_a), (s_b, 1/s_b).
    let scales = match io.v_scale {
        Some(v) => Some(crate::kernel::convert::operand_scales(b, v)?),
        None => None,
    };

    let c_sgn = u!(s.sg_n());
    let sg_m = b.b.u_div(ty.t_u32, None, sg, c_sgn)?;
    let sg_n = b.b.u_mod(ty.t_u32, None, sg, c_sgn)?;

    let per_thread = (a_per_thread, b_per_thread);
    let (op_a, op_b) = operands(b, d, (tid, per_thread), (regs_a, regs_b), (load_a, load_b), scales)?;

    // Zero accumulators: a one-constituent composite (splat), not OpConstantNull (Intel Mesa < 25.2).
    let zero_acc = b.b.composite_construct(ty.t_mat_acc, None, [k.zero_res])?;
    for &v in &acc_vars {
        b.b.store(v, zero_acc, None, [])?;
    }

    let c_vw = u!(vw);
    let Bases {
        a_sg_rows,
        b_sg_cols,
        a_base,
        a_layout_id,
        b_base,
        b_layout_id,
    } = fragment_bases(b, key, d, (sg_m, sg_n), c_sgn)?;
    Ok(Setup {
        acc_vars,
        op_a,
        op_b,
        a_off,
        b_off,
        c_off,
        pm,
        pn,
        pk,
        lda,
        ldb,
        ldc,
        m0,
        n0,
        sg,
        lane,
        scales,
        zero_acc,
        c_vw,
        a_sg_rows,
        b_sg_cols,
        a_base,
        a_layout_id,
        b_base,
        b_layout_id,
    })
}

/// The function's variables ([`function_variables`]).
struct Variables {
    acc_vars: Vec<Word>,
    /// A's and B's prefetch registers: per copy slot, the stored type's vectors.
    regs: (Vec<Vec<Word>>, Vec<Vec<Word>>),
    /// Vectors of A's and of B's tile each invocation copies.
    per_thread: (u32, u32),
}

/// The function-scope variables, which must open the first block: an accumulator per fragment
/// and each operand's prefetch registers.
fn function_variables(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl) -> Variables {
    let Decl { s, g, es, ptr, .. } = *d;
    let n_frag = (s.fr_m() * s.fr_n()) as usize;
    let acc_vars: Vec<Word> = (0..n_frag)
        .map(|_| mb.b.variable(ptr.p_fn_acc, None, StorageClass::Function, None))
        .collect();
    let a_per_thread = g.bm * g.bk * es / VECTOR_BYTES / g.threads;
    let b_per_thread = g.bn * g.bk * es / VECTOR_BYTES / g.threads;
    let [load_a, load_b] = key.loads;
    let mut regs = |per_thread: u32, load: Load| -> Vec<Vec<Word>> {
        (0..per_thread)
            .map(|_| {
                (0..load.storage_vectors())
                    .map(|_| mb.b.variable(ptr.p_fn_uvec4, None, StorageClass::Function, None))
                    .collect()
            })
            .collect()
    };
    let regs_a = regs(a_per_thread, load_a);
    let regs_b = regs(b_per_thread, load_b);
    Variables {
        acc_vars,
        regs: (regs_a, regs_b),
        per_thread: (a_per_thread, b_per_thread),
    }
}

/// The invocation's ids ([`invocation_ids`]).
struct Ids {
    tid: Word,
    wg: Word,
    sg: Word,
    lane: Word,
    /// N, K, A's and B's leading dimensions in vectors, C's, and M.
    pc: [Word; 6],
}

/// The invocation's local index, workgroup, subgroup and lane, and the push constants the
/// kernel reads first.
fn invocation_ids(b: &mut ModuleBuilder, d: &Decl) -> BuildResult<Ids> {
    let Decl { ty, io, .. } = *d;
    let tid = b.b.load(ty.t_u32, None, io.v_local_index, None, [])?;
    let wg = b.b.load(ty.t_uvec3, None, io.v_workgroup, None, [])?;
    let sg = b.b.load(ty.t_u32, None, io.v_subgroup, None, [])?;
    let lane = b.b.load(ty.t_u32, None, io.v_lane, None, [])?;
    let mut pc = [0; 6];
    for (slot, which) in pc
        .iter_mut()
        .zip([Pc::N, Pc::K, Pc::LdaVec, Pc::LdbVec, Pc::Ldc, Pc::M])
    {
        *slot = b.push_constant(io.v_pc, which as u32)?;
    }
    Ok(Ids { tid, wg, sg, lane, pc })
}

/// Each operand's copy slots (invocation `tid` copies vectors tid, tid + threads, ... of each
/// tile) with its prefetch registers and loads.
pub(super) fn operands(
    b: &mut ModuleBuilder,
    d: &Decl,
    (tid, (a_per_thread, b_per_thread)): (Word, (u32, u32)),
    (regs_a, regs_b): (Vec<Vec<Word>>, Vec<Vec<Word>>),
    (load_a, load_b): (Load, Load),
    scales: Option<[(Word, Word); 2]>,
) -> BuildResult<(Operand2d, Operand2d)> {
    let Decl {
        g,
        es,
        ty: Types { t_u32, .. },
        lay:
            SharedLayout {
                a_inner,
                b_inner,
                unit_a,
                unit_b,
                pitch_a,
                pitch_b,
                lo_units_a,
                lo_units_b,
                ..
            },
        sh:
            SharedArrays {
                sh_a,
                sh_b,
                unit_a_t,
                unit_b_t,
                ..
            },
        ..
    } = *d;
    let slots = |b: &mut ModuleBuilder,
                 per_thread: u32,
                 inner: u32,
                 unit: u32,
                 pitch: u32|
     -> BuildResult<Vec<(Word, Word, Word)>> {
        let inner_vecs = inner * es / VECTOR_BYTES;
        let c_iv = b.c_u32(inner_vecs);
        let c_pitch = b.c_u32(pitch);
        let c_vec_units = b.c_u32(VECTOR_BYTES / unit);
        (0..per_thread)
            .map(|t| {
                let c_t = b.c_u32(t * g.threads);
                let v = b.b.i_add(t_u32, None, tid, c_t)?;
                let o = b.b.u_div(t_u32, None, v, c_iv)?;
                let iv = b.b.u_mod(t_u32, None, v, c_iv)?;
                let so = b.b.i_mul(t_u32, None, o, c_pitch)?;
                let si = b.b.i_mul(t_u32, None, iv, c_vec_units)?;
                let sidx = b.b.i_add(t_u32, None, so, si)?;
                Ok((o, iv, sidx))
            })
            .collect()
    };
    let op_a = Operand2d {
        shared: sh_a,
        unit_t: unit_a_t,
        unit_bytes: unit_a,
        slots: slots(b, a_per_thread, a_inner, unit_a, pitch_a)?,
        regs: regs_a,
        load: load_a,
        split: scales.map(|s| (s[0].0, lo_units_a)),
    };
    let op_b = Operand2d {
        shared: sh_b,
        unit_t: unit_b_t,
        unit_bytes: unit_b,
        slots: slots(b, b_per_thread, b_inner, unit_b, pitch_b)?,
        regs: regs_b,
        load: load_b,
        split: scales.map(|s| (s[1].0, lo_units_b)),
    };
    Ok((op_a, op_b))
}

/// Where a subgroup's fragments start: its rows of A and columns of B in the tile, and each
/// operand's base in shared units with the layout id its fragment loads take.
pub(super) struct Bases {
    pub(super) a_sg_rows: Word,
    pub(super) b_sg_cols: Word,
    pub(super) a_base: Word,
    pub(super) a_layout_id: Word,
    pub(super) b_base: Word,
    pub(super) b_layout_id: Word,
}

/// The subgroup's [`Bases`] from its position (`sg_m`, `sg_n`) in the workgroup's grid of
/// subgroups; fragment offsets are then compile-time constants above them.
pub(super) fn fragment_bases(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    d: &Decl,
    (sg_m, sg_n): (Word, Word),
    c_sgn: Word,
) -> BuildResult<Bases> {
    let Decl {
        s,
        g,
        es,
        ty: Types { t_u32, .. },
        lay:
            SharedLayout {
                unit_a,
                unit_b,
                pitch_a,
                pitch_b,
                ..
            },
        k: Consts {
            c_row_major,
            c_col_major,
            ..
        },
        ..
    } = *d;
    macro_rules! u {
        ($v:expr) => {
            b.c_u32($v)
        };
    }
    let c_bm = u!(g.bm);
    let c_bn = u!(g.bn);
    let a_sg_rows = b.b.i_mul(t_u32, None, sg_m, c_bm)?;
    let c_sgm = u!(s.sg_m());
    let a_sg_rows = b.b.u_div(t_u32, None, a_sg_rows, c_sgm)?; // sg_m * fr_m * cm
    let b_sg_cols = b.b.i_mul(t_u32, None, sg_n, c_bn)?;
    let b_sg_cols = b.b.u_div(t_u32, None, b_sg_cols, c_sgn)?; // sg_n * fr_n * cn
    let (a_base, a_layout_id) = match key.a_layout {
        Layout::RowMajor => (b.mul_u(a_sg_rows, pitch_a)?, c_row_major),
        Layout::ColMajor => (b.mul_u(a_sg_rows, es)?, c_col_major),
    };
    let a_base = if key.a_layout == Layout::ColMajor {
        b.div_u(a_base, unit_a)?
    } else {
        a_base
    };
    let (b_base, b_layout_id) = match key.b_layout {
        Layout::RowMajor => (b.mul_u(b_sg_cols, es)?, c_row_major),
        Layout::ColMajor => (b.mul_u(b_sg_cols, pitch_b)?, c_col_major),
    };
    let b_base = if key.b_layout == Layout::RowMajor {
        b.div_u(b_base, unit_b)?
    } else {
        b_base
    };

    Ok(Bases {
        a_sg_rows,
        b_sg_cols,
        a_base,
        a_layout_id,
        b_base,
        b_layout_id,
    })
}
