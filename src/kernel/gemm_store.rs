//! The subgroup-scope GEMM kernel's epilogue (see the `gemm` module): `alpha * acc + beta * C`,
//! a fused epilogue, or the accurate split's unscaling, on every accumulator fragment. A
//! workgroup whose tile lies inside C stores its fragments straight to C; one on the M/N edge
//! (and every workgroup of a fused epilogue, which stores element by element) sends each
//! fragment through its subgroup's staging tile in shared memory and stores it masked.

use super::builder::{BuildResult, ModuleBuilder};
use super::epilogue::Fused;
use super::push::Pc;
use super::KernelKey;
use rspirv::spirv::{MemoryAccess, SelectionControl, Word};

/// What the epilogue takes from the kernel body: ids of types, of C and its pass, of the
/// workgroup's tile and the subgroup's place in it, and of the shared array that holds the
/// staging tiles.
pub(super) struct Store<'a> {
    pub key: &'a KernelKey,
    /// The fused epilogue's declarations, if any.
    pub fuse: Option<&'a Fused>,
    /// The accurate split's (s, 1/s) of A and of B.
    pub scales: Option<[(Word, Word); 2]>,
    /// The push-constant block.
    pub v_pc: Word,
    /// u32, bool, the result scalar, a pair of results, the accumulator matrix.
    pub types: (Word, Word, Word, Word, Word),
    /// C's buffer, pointers to its result and stored elements, ldc, C's first element, (M, N).
    pub c: (Word, Word, Word, Word, Word, (Word, Word)),
    /// The tile's first row and column, the subgroup's offsets in it, its index and lane.
    pub tile: (Word, Word, Word, Word, Word, Word),
    /// The accumulator fragments' variables, row by row.
    pub acc_vars: &'a [Word],
    /// The shared array holding the staging tiles, its unit in bytes, and pointer types to a
    /// word and to a unit of it.
    pub staging: (Word, u32, Word, Word),
    /// 0u32, the row-major layout constant, the result type's zero.
    pub consts: (Word, Word, Word),
    /// Workgroup scope, subgroup scope, and the barriers' memory semantics.
    pub barriers: (Word, Word, Word),
}

/// The epilogue's view of the kernel: [`Store`]'s ids by name, the sizes of its staging, and the
/// per-fragment terms made once (the split's unscaling, alpha, beta as matrices).
struct Epi<'a> {
    key: &'a KernelKey,
    fuse: Option<&'a Fused>,
    t_u32: Word,
    t_bool: Word,
    t_res: Word,
    t_res2: Word,
    t_mat_acc: Word,
    v_c: Word,
    p_sb_res: Word,
    p_sb_out: Word,
    ldc: Word,
    c_off: Word,
    pm: Word,
    pn: Word,
    m0: Word,
    n0: Word,
    sg: Word,
    lane: Word,
    acc_vars: &'a [Word],
    sh_host: Word,
    host_unit: u32,
    p_wg_u32: Word,
    p_wg_host: Word,
    c0: Word,
    c_row_major: Word,
    zero_res: Word,
    c_scope_wg: Word,
    c_scope_sg: Word,
    c_sem: Word,
    is_float: bool,
    unscale: Option<[Word; 2]>,
    alpha: Option<Word>,
    beta: Option<Word>,
    /// The subgroup's first row and column of C.
    row_sg: Word,
    col_sg: Word,
    /// Results per 32-bit staging word, words per fragment, u32 per unit of the host array.
    per_word: u32,
    frag_words: u32,
    host_comps: u32,
    /// The subgroup's first staging word, and the fragment's row length as a constant.
    stage_word_base: Word,
    c_cn_stride: Word,
}

/// Emits the epilogue and ends in the block after it.
pub(super) fn emit(b: &mut ModuleBuilder, st: Store<'_>) -> BuildResult<()> {
    let e = prepare(b, st)?;
    let (g, fused) = (e.key.scheme.geometry(&e.key.config), e.key.epilogue.is_fused());
    let (l_direct, l_staged, l_done) = (b.b.id(), b.b.id(), b.b.id());
    if fused {
        // A fused epilogue stores element by element: every workgroup takes the staged path.
        b.b.branch(l_staged)?;
    } else {
        // Whether the whole workgroup tile lies inside C decides the path for every subgroup, so the
        // barriers of the staged path sit in workgroup-uniform control flow. (Lavapipe silently drops
        // invocations that reach a subgroup-scope barrier other subgroups of the workgroup skip.)
        let m_end = b.add_u(e.m0, g.bm)?;
        let n_end = b.add_u(e.n0, g.bn)?;
        let in_m = b.b.u_less_than_equal(e.t_bool, None, m_end, e.pm)?;
        let in_n = b.b.u_less_than_equal(e.t_bool, None, n_end, e.pn)?;
        let wg_interior = b.b.logical_and(e.t_bool, None, in_m, in_n)?;
        b.b.selection_merge(l_done, SelectionControl::NONE)?;
        b.b.branch_conditional(wg_interior, l_direct, l_staged, [])?;
        direct(b, &e, l_direct, l_done)?;
    }
    staged(b, &e, l_staged)?;
    b.b.branch(l_done)?;
    b.b.begin_block(Some(l_done))?;
    Ok(())
}

/// [`Store`] by name, with the terms every fragment takes (made here, once) and the staging's
/// sizes.
fn prepare<'a>(b: &mut ModuleBuilder, st: Store<'a>) -> BuildResult<Epi<'a>> {
    let Store {
        key,
        fuse,
        scales,
        v_pc,
        types: (t_u32, t_bool, t_res, t_res2, t_mat_acc),
        c: (v_c, p_sb_res, p_sb_out, ldc, c_off, (pm, pn)),
        tile: (m0, n0, a_sg_rows, b_sg_cols, sg, lane),
        acc_vars,
        staging: (sh_host, host_unit, p_wg_u32, p_wg_host),
        consts: (c0, c_row_major, zero_res),
        barriers: (c_scope_wg, c_scope_sg, c_sem),
    } = st;
    let cfg = key.config;
    let rs = cfg.result_type.size_bytes();
    let fused = key.epilogue.is_fused();
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(v_pc, which as u32);
    let is_float = cfg.result_type.is_float();
    let scalar = |b: &mut ModuleBuilder, which: Pc| -> BuildResult<Word> {
        let bits = pc(b, which)?;
        b.scalar_from_bits(cfg.result_type, t_res, bits)
    };
    // The split's 1/(s_a s_b), applied one factor at a time (their product may leave f32's range).
    let unscale = match scales {
        Some([(_, ua), (_, ub)]) => Some([
            b.b.composite_construct(t_mat_acc, None, [ua])?,
            b.b.composite_construct(t_mat_acc, None, [ub])?,
        ]),
        None => None,
    };
    // A fused epilogue applies alpha and beta per element, in f32.
    let alpha = if key.epilogue.alpha && !fused {
        let a = scalar(b, Pc::Alpha)?;
        Some(b.b.composite_construct(t_mat_acc, None, [a])?)
    } else {
        None
    };
    let beta = if key.epilogue.beta && !fused {
        let v = scalar(b, Pc::Beta)?;
        Some(b.b.composite_construct(t_mat_acc, None, [v])?)
    } else {
        None
    };
    let row_sg = b.b.i_add(t_u32, None, m0, a_sg_rows)?;
    let col_sg = b.b.i_add(t_u32, None, n0, b_sg_cols)?;
    // Staging tiles are addressed in 32-bit words of the host array: one result of 32 bits or
    // two of 16 bits per word.
    let per_word = 4 / rs;
    let frag_words = cfg.m * cfg.n / per_word;
    let host_comps = host_unit / 4;
    let c_frag_words = b.c_u32(frag_words);
    let stage_word_base = b.b.i_mul(t_u32, None, sg, c_frag_words)?;
    let c_cn_stride = b.c_u32(cfg.n);
    Ok(Epi {
        key,
        fuse,
        t_u32,
        t_bool,
        t_res,
        t_res2,
        t_mat_acc,
        v_c,
        p_sb_res,
        p_sb_out,
        ldc,
        c_off,
        pm,
        pn,
        m0,
        n0,
        sg,
        lane,
        acc_vars,
        sh_host,
        host_unit,
        p_wg_u32,
        p_wg_host,
        c0,
        c_row_major,
        zero_res,
        c_scope_wg,
        c_scope_sg,
        c_sem,
        is_float,
        unscale,
        alpha,
        beta,
        row_sg,
        col_sg,
        per_word,
        frag_words,
        host_comps,
        stage_word_base,
        c_cn_stride,
    })
}

/// Non-private pointers: the staging tiles are written and read across invocations.
const NP: Option<MemoryAccess> = Some(MemoryAccess::NON_PRIVATE_POINTER);

/// alpha * acc + beta * c (and the split's unscaling), on whole fragments.
fn combine(b: &mut ModuleBuilder, e: &Epi<'_>, acc: Word, c: Option<Word>) -> BuildResult<Word> {
    let Epi {
        is_float,
        t_mat_acc,
        unscale,
        alpha,
        beta,
        ..
    } = *e;
    let mul = |b: &mut ModuleBuilder, x: Word, y: Word| {
        if is_float {
            b.b.f_mul(t_mat_acc, None, x, y)
        } else {
            b.b.i_mul(t_mat_acc, None, x, y)
        }
    };
    let mut v = acc;
    for u in unscale.iter().flatten() {
        v = mul(b, v, *u)?;
    }
    if let Some(a) = alpha {
        v = mul(b, v, a)?;
    }
    if let (Some(bm), Some(c)) = (beta, c) {
        let t = mul(b, c, bm)?;
        v = if is_float {
            b.b.f_add(t_mat_acc, None, v, t)?
        } else {
            b.b.i_add(t_mat_acc, None, v, t)?
        };
    }
    Ok(v)
}

/// The pointer to staging word `w` of the host array.
fn word_ptr(b: &mut ModuleBuilder, e: &Epi<'_>, w: Word) -> BuildResult<Word> {
    if e.host_comps == 1 {
        b.b.access_chain(e.p_wg_u32, None, e.sh_host, [w])
    } else {
        let unit = b.div_u(w, e.host_comps)?;
        let comp = b.mod_u(w, e.host_comps)?;
        b.b.access_chain(e.p_wg_u32, None, e.sh_host, [unit, comp])
    }
}

/// C's element (row, col) of the pass: `row * ldc + col + c_off`.
fn c_index(b: &mut ModuleBuilder, e: &Epi<'_>, row: Word, col: Word) -> BuildResult<Word> {
    let gi = b.b.i_mul(e.t_u32, None, row, e.ldc)?;
    let gi = b.b.i_add(e.t_u32, None, gi, col)?;
    b.b.i_add(e.t_u32, None, gi, e.c_off)
}

/// A staging word this lane handles: its index and, per result in it, (in bounds, C index,
/// (row, col) in the pass).
type LaneWord = (Word, Vec<(Word, Word, (Word, Word))>);

/// Lane `lane` handles staging words lane, lane + subgroup_size, ... of the fragment at
/// (`row`, `col`).
fn lane_words(b: &mut ModuleBuilder, e: &Epi<'_>, row: Word, col: Word) -> BuildResult<Vec<LaneWord>> {
    let Epi {
        key,
        t_u32,
        t_bool,
        lane,
        pm,
        pn,
        per_word,
        frag_words,
        stage_word_base,
        c_cn_stride,
        ..
    } = *e;
    let s = key.scheme;
    (0..frag_words / s.subgroup_size())
        .map(|t| {
            let c_t = b.c_u32(t * s.subgroup_size());
            let w = b.b.i_add(t_u32, None, lane, c_t)?;
            let elems = (0..per_word)
                .map(|h| {
                    let el = b.mul_u(w, per_word)?;
                    let el = b.add_u(el, h)?;
                    let r = b.b.u_div(t_u32, None, el, c_cn_stride)?;
                    let c = b.b.u_mod(t_u32, None, el, c_cn_stride)?;
                    let gr = b.b.i_add(t_u32, None, row, r)?;
                    let gc = b.b.i_add(t_u32, None, col, c)?;
                    let ok_r = b.b.u_less_than(t_bool, None, gr, pm)?;
                    let ok_c = b.b.u_less_than(t_bool, None, gc, pn)?;
                    let ok = b.b.logical_and(t_bool, None, ok_r, ok_c)?;
                    Ok((ok, c_index(b, e, gr, gc)?, (gr, gc)))
                })
                .collect::<BuildResult<Vec<_>>>()?;
            let sw = b.b.i_add(t_u32, None, stage_word_base, w)?;
            Ok((sw, elems))
        })
        .collect()
}

/// Fragment (i, j) of the subgroup: its first row and column in the pass, and its value.
fn fragment(b: &mut ModuleBuilder, e: &Epi<'_>, i: u32, j: u32) -> BuildResult<(Word, Word, Word)> {
    let (cfg, s) = (e.key.config, e.key.scheme);
    let slot = (i * s.fr_n() + j) as usize;
    let row = b.add_u(e.row_sg, i * cfg.m)?;
    let col = b.add_u(e.col_sg, j * cfg.n)?;
    Ok((row, col, b.b.load(e.t_mat_acc, None, e.acc_vars[slot], None, [])?))
}

/// Interior workgroups: every fragment straight to global memory.
fn direct(b: &mut ModuleBuilder, e: &Epi<'_>, l_direct: Word, l_done: Word) -> BuildResult<()> {
    let Epi {
        key,
        t_mat_acc,
        v_c,
        p_sb_res,
        ldc,
        c0,
        c_row_major,
        beta,
        ..
    } = *e;
    let s = key.scheme;
    b.b.begin_block(Some(l_direct))?;
    for i in 0..s.fr_m() {
        for j in 0..s.fr_n() {
            let (row, col, accv) = fragment(b, e, i, j)?;
            let gi = c_index(b, e, row, col)?;
            let p = b.b.access_chain(p_sb_res, None, v_c, [c0, gi])?;
            let cval = if beta.is_some() {
                Some(b.b.cooperative_matrix_load_khr(t_mat_acc, None, p, c_row_major, Some(ldc), None, [])?)
            } else {
                None
            };
            let out = combine(b, e, accv, cval)?;
            b.b.cooperative_matrix_store_khr(p, out, c_row_major, Some(ldc), None, [])?;
        }
    }
    b.b.branch(l_done)
}

/// Edge workgroups: each fragment through the subgroup's staging tile, masked element-wise. The
/// staging tiles overlay the operand tiles, which other subgroups may still be reading.
fn staged(b: &mut ModuleBuilder, e: &Epi<'_>, l_staged: Word) -> BuildResult<()> {
    let Epi {
        key,
        sg,
        sh_host,
        host_unit,
        p_wg_host,
        c_row_major,
        c_scope_wg,
        c_scope_sg,
        c_sem,
        beta,
        frag_words,
        ..
    } = *e;
    let (cfg, s) = (key.config, key.scheme);
    let rs = cfg.result_type.size_bytes();
    b.b.begin_block(Some(l_staged))?;
    b.b.control_barrier(c_scope_wg, c_scope_wg, c_sem)?;
    let stage_unit_base = b.mul_u(sg, frag_words * 4 / host_unit)?;
    let p_stage0 = b.b.access_chain(p_wg_host, None, sh_host, [stage_unit_base])?;
    let c_stage_stride = b.c_u32(cfg.n * rs / host_unit);
    for i in 0..s.fr_m() {
        for j in 0..s.fr_n() {
            let (row, col, accv) = fragment(b, e, i, j)?;
            // The previous fragment's reads of the staging tile must finish first.
            b.b.control_barrier(c_scope_sg, c_scope_sg, c_sem)?;
            let words = lane_words(b, e, row, col)?;
            let cval = if beta.is_some() {
                Some(stage_c(b, e, &words, (p_stage0, c_stage_stride))?)
            } else {
                None
            };
            let out = combine(b, e, accv, cval)?;
            b.b.cooperative_matrix_store_khr(p_stage0, out, c_row_major, Some(c_stage_stride), NP, [])?;
            b.b.control_barrier(c_scope_sg, c_scope_sg, c_sem)?;
            write_back(b, e, &words)?;
        }
    }
    Ok(())
}

/// C's fragment for beta, read element-wise (masked) into the staging tile and loaded back as a
/// matrix.
fn stage_c(
    b: &mut ModuleBuilder,
    e: &Epi<'_>,
    words: &[LaneWord],
    (p_stage0, c_stage_stride): (Word, Word),
) -> BuildResult<Word> {
    let Epi {
        t_u32,
        t_res,
        t_res2,
        t_mat_acc,
        v_c,
        p_sb_res,
        c_off,
        c0,
        c_row_major,
        zero_res,
        c_scope_sg,
        c_sem,
        per_word,
        ..
    } = *e;
    for (sw, elems) in words {
        let mut vals = Vec::new();
        for &(ok, gi, _) in elems {
            let safe = b.b.select(t_u32, None, ok, gi, c_off)?;
            let p = b.b.access_chain(p_sb_res, None, v_c, [c0, safe])?;
            let x = b.b.load(t_res, None, p, None, [])?;
            vals.push(b.b.select(t_res, None, ok, x, zero_res)?);
        }
        let packed = if per_word == 1 {
            vals[0]
        } else {
            b.b.composite_construct(t_res2, None, vals)?
        };
        let word = b.b.bitcast(t_u32, None, packed)?;
        let ps = word_ptr(b, e, *sw)?;
        b.b.store(ps, word, NP, [])?;
    }
    b.b.control_barrier(c_scope_sg, c_scope_sg, c_sem)?;
    b.b.cooperative_matrix_load_khr(t_mat_acc, None, p_stage0, c_row_major, Some(c_stage_stride), NP, [])
}

/// The staging tile's results out to C, element by element where they are inside it, through a
/// fused epilogue's function where there is one.
fn write_back(b: &mut ModuleBuilder, e: &Epi<'_>, words: &[LaneWord]) -> BuildResult<()> {
    let Epi {
        fuse,
        t_u32,
        t_res,
        t_res2,
        v_c,
        p_sb_out,
        c0,
        per_word,
        ..
    } = *e;
    for (sw, elems) in words {
        let ps = word_ptr(b, e, *sw)?;
        let word = b.b.load(t_u32, None, ps, NP, [])?;
        let vals: Vec<Word> = if per_word == 1 {
            vec![b.b.bitcast(t_res, None, word)?]
        } else {
            let pair = b.b.bitcast(t_res2, None, word)?;
            (0..per_word)
                .map(|h| b.b.composite_extract(t_res, None, pair, [h]))
                .collect::<BuildResult<_>>()?
        };
        for (&(ok, gi, at), x) in elems.iter().zip(vals) {
            b.if_then(ok, |b| {
                let p = b.b.access_chain(p_sb_out, None, v_c, [c0, gi])?;
                let x = match fuse {
                    Some(f) => f.element(b, x, at, p)?,
                    None => x,
                };
                b.b.store(p, x, None, [])?;
                Ok(())
            })?;
        }
    }
    Ok(())
}
