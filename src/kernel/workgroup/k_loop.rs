//! The loops over K: each step's tensor loads of the operands and the multiply-adds, clamped only where a workgroup needs it.

use super::*;

/// A K loop's view of the kernel: the type of its layouts and the operands' layouts of it.
pub(super) struct LoopCtx<'a> {
    pub(super) d: &'a Decl,
    pub(super) st: &'a Setup,
    pub(super) t_layout: Word,
    pub(super) la: Word,
    pub(super) lb: Word,
}

/// One K step's loads at `k`: the left operand's slice, and the right's for each accumulator.
pub(super) fn load_operands(b: &mut ModuleBuilder, x: &LoopCtx<'_>, k: Word) -> BuildResult<(Word, Vec<Word>)> {
    let Decl {
        s,
        mt:
            Tensors {
                parts,
                t_mat_a,
                t_mat_b,
                c_rows,
                c_cols,
                c_bk,
                ..
            },
        ..
    } = *x.d;
    let Setup {
        ref left,
        ref right,
        p_left,
        p_right,
        row0,
        ref col0s,
        view,
        zero_a,
        zero_b,
        ..
    } = *x.st;
    let (t_layout, la, lb) = (x.t_layout, x.la, x.lb);
    // The order of a step's loads is the scheme's (`right_first`): the driver schedules
    // them differently (docs/perf/JOURNAL.md, "Deeper iterations").
    let load_left = |b: &mut ModuleBuilder| -> BuildResult<Word> {
        let sa = slice(b, (t_layout, la, left), (row0, c_rows), (k, c_bk))?;
        let (ta, xa) = addressing(left, view);
        b.b.cooperative_matrix_load_tensor_nv(t_mat_a, None, p_left, zero_a, sa, MemoryAccess::NONE, ta, xa)
    };
    let ma = if s.right_first() { None } else { Some(load_left(b)?) };
    let mut mbs = Vec::with_capacity(parts as usize);
    for &cj in col0s {
        let sb = slice(b, (t_layout, lb, right), (k, c_bk), (cj, c_cols))?;
        let (tb, xb) = addressing(right, view);
        mbs.push(b.b.cooperative_matrix_load_tensor_nv(
            t_mat_b,
            None,
            p_right,
            zero_b,
            sb,
            MemoryAccess::NONE,
            tb,
            xb,
        )?);
    }
    let ma = match ma {
        Some(ma) => ma,
        None => load_left(b)?,
    };
    Ok((ma, mbs))
}

/// A K step's operands at `k`: (left, rights), and with split planes the lo plane's too.
pub(super) fn load_step(b: &mut ModuleBuilder, x: &LoopCtx<'_>, k: Word) -> BuildResult<Step> {
    let hi = load_operands(b, x, k)?;
    let lo = match x.st.k_half {
        Some(half) => {
            let k_lo = b.b.i_add(x.d.ty.t_u32, None, k, half)?;
            Some(load_operands(b, x, k_lo)?)
        }
        None => None,
    };
    Ok((hi, lo))
}

/// `x` plus the step's product for accumulator `j`: with split planes `lo*hi + hi*lo + hi*hi`,
/// summed into a partial sum that starts from zero each loop iteration and is then added to the
/// accumulator in f32 (the matrix units accumulate f32 less carefully than an add: see
/// docs/perf/JOURNAL.md, f32 and mixed types).
pub(super) fn multiply(
    b: &mut ModuleBuilder,
    (d, st): (&Decl, &Setup),
    ((ma, mbs), lo): &Step,
    j: usize,
    x: Word,
) -> BuildResult<Word> {
    let (t_mat_acc, operands) = (d.mt.t_mat_acc, st.operands);
    let Some((la, lbs)) = lo else {
        return b.mul_add(t_mat_acc, (*ma, mbs[j], x), operands);
    };
    let t = b.mul_add(t_mat_acc, (*la, mbs[j], x), operands)?;
    let t = b.mul_add(t_mat_acc, (*ma, lbs[j], t), operands)?;
    b.mul_add(t_mat_acc, (*ma, mbs[j], t), operands)
}

/// Adds a split's partial sums into the accumulators (nothing without split planes).
pub(super) fn add_sums(b: &mut ModuleBuilder, d: &Decl, st: &Setup) -> BuildResult<()> {
    for (&v, &t) in st.v_acc.iter().zip(&st.v_sum) {
        let x = b.b.load(d.mt.t_mat_acc, None, v, None, [])?;
        let y = b.b.load(d.mt.t_mat_acc, None, t, None, [])?;
        let x = b.b.f_add(d.mt.t_mat_acc, None, x, y)?;
        b.b.store(v, x, None, [])?;
    }
    Ok(())
}

/// The K loop with layouts of type `t_layout`, entered from the current block, `steps` K steps
/// per iteration; ends in the block after the loop. Each step's loads are issued `ahead` steps
/// before its multiply: `steps - 1` puts all of an iteration's loads first, so the driver may
/// overlap the later steps' staging with the earlier steps' math; fewer keeps fewer operand
/// matrices live at once.
pub(super) fn k_loop(
    b: &mut ModuleBuilder,
    (d, st): (&Decl, &Setup),
    t_layout: Word,
    (steps, ahead): (u32, u32),
    range: (Word, Word),
) -> BuildResult<()> {
    let la = layout(b, d, t_layout, &st.left)?;
    let lb = layout(b, d, t_layout, &st.right)?;
    let x = LoopCtx {
        d,
        st,
        t_layout,
        la,
        lb,
    };
    if ahead == 0 && steps > 1 {
        inner_loop_iterations(b, &x, steps, range)
    } else {
        unrolled_iterations(b, &x, (steps, ahead), range)
    }
}

/// Where an iteration's products go: the partial sums (split planes) or the accumulators.
fn products<'a>(d: &Decl, st: &'a Setup) -> &'a [Word] {
    if d.planes {
        &st.v_sum
    } else {
        &st.v_acc
    }
}

/// Load, multiply, step by step: each iteration an inner loop of `steps` K steps that the
/// driver unrolls (its hint), not unrolled here. The driver pipelines this form's loads better:
/// +7% at 4096^3 `nt` on the H200 for the same kernel unrolled by hand. The inner loop counts
/// its steps from 0, so its trip count is a constant the driver sees (counting K from `kb` to
/// `kb + steps * BK` was 1.4% slower).
fn inner_loop_iterations(
    b: &mut ModuleBuilder,
    x: &LoopCtx<'_>,
    steps: u32,
    (k_start, k_end): (Word, Word),
) -> BuildResult<()> {
    let (d, st) = (x.d, x.st);
    let (g, t_u32, t_mat_acc) = (d.g, d.ty.t_u32, d.mt.t_mat_acc);
    let into = products(d, st);
    let c_steps = b.c_u32(steps);
    b.counted_loop((k_start, k_end, steps * g.bk), |b, kb| {
        for &t in &st.v_sum {
            b.b.store(t, st.zero_acc, None, [])?;
        }
        b.counted_loop_ctl((d.mt.c0, c_steps, d.mt.c1), LoopControl::UNROLL, |b, step| {
            let dk = b.mul_u(step, g.bk)?;
            let k = b.b.i_add(t_u32, None, kb, dk)?;
            let step = load_step(b, x, k)?;
            for (j, &v) in into.iter().enumerate() {
                let acc = b.b.load(t_mat_acc, None, v, None, [])?;
                let acc = multiply(b, (d, st), &step, j, acc)?;
                b.b.store(v, acc, None, [])?;
            }
            Ok(())
        })?;
        add_sums(b, d, st)
    })
}

/// Each iteration's `steps` K steps unrolled here, every step's loads issued `ahead` steps
/// before its multiply, the accumulators kept in values through the iteration.
fn unrolled_iterations(
    b: &mut ModuleBuilder,
    x: &LoopCtx<'_>,
    (steps, ahead): (u32, u32),
    (k_start, k_end): (Word, Word),
) -> BuildResult<()> {
    let (d, st) = (x.d, x.st);
    let (g, t_mat_acc) = (d.g, d.mt.t_mat_acc);
    let into = products(d, st);
    b.counted_loop((k_start, k_end, steps * g.bk), |b, kb| {
        let load_at = |b: &mut ModuleBuilder, step: u32| -> BuildResult<Step> {
            let k = if step == 0 { kb } else { b.add_u(kb, step * g.bk)? };
            load_step(b, x, k)
        };
        let mut pending = std::collections::VecDeque::with_capacity(steps as usize);
        let (mut loaded, mut acc) = (0, Vec::new());
        for step in 0..steps {
            while loaded <= (step + ahead).min(steps - 1) {
                pending.push_back(load_at(b, loaded)?);
                loaded += 1;
            }
            if acc.is_empty() {
                for &v in &st.v_acc {
                    acc.push(if d.planes {
                        st.zero_acc
                    } else {
                        b.b.load(t_mat_acc, None, v, None, [])?
                    });
                }
            }
            let step = pending.pop_front().expect("step loaded above");
            for (j, a) in acc.iter_mut().enumerate() {
                *a = multiply(b, (d, st), &step, j, *a)?;
            }
        }
        for (&v, a) in into.iter().zip(acc) {
            b.b.store(v, a, None, [])?;
        }
        add_sums(b, d, st)
    })
}

/// The loops over K. Workgroups inside C need no clamping but in K's last partial step: after
/// the whole loop iterations, an unclamped loop of single steps takes the whole steps left (all
/// of K when K is under one iteration, as in attention's K of 64 to 128), and a clamped one the
/// partial step. Workgroups on C's edge clamp throughout. The choice is workgroup-uniform.
pub(super) fn loops(mb: &mut ModuleBuilder, d: &Decl, st: &Setup) -> BuildResult<()> {
    let Decl {
        s,
        g,
        ty: Types { t_bool, t_u32, .. },
        mt:
            Tensors {
                t_layout_clamped,
                t_layout_unclamped,
                c0,
                ..
            },
        ..
    } = *d;
    let Setup {
        pm,
        pn,
        m0,
        n0,
        k_loop_end,
        ..
    } = *st;
    let b = mb;
    let k_loop = |b: &mut ModuleBuilder, t_layout, steps, ks| k_loop(b, (d, st), t_layout, steps, ks);
    let m_end = b.add_u(m0, g.bm)?;
    let n_end = b.add_u(n0, g.bn)?;
    let in_m = b.b.u_less_than_equal(t_bool, None, m_end, pm)?;
    let in_n = b.b.u_less_than_equal(t_bool, None, n_end, pn)?;
    let k_rem = b.mod_u(k_loop_end, s.stages() * g.bk)?;
    let k_main = b.b.i_sub(t_u32, None, k_loop_end, k_rem)?;
    let inside = b.b.logical_and(t_bool, None, in_m, in_n)?;
    let (l_fast, l_edge, l_joined) = (b.b.id(), b.b.id(), b.b.id());
    b.b.selection_merge(l_joined, SelectionControl::NONE)?;
    b.b.branch_conditional(inside, l_fast, l_edge, [])?;
    b.b.begin_block(Some(l_fast))?;
    k_loop(b, t_layout_unclamped, (s.stages(), s.lookahead()), (c0, k_main))?;
    let k_whole = if s.stages() > 1 {
        let k_part = b.mod_u(k_loop_end, g.bk)?;
        let k_whole = b.b.i_sub(t_u32, None, k_loop_end, k_part)?;
        k_loop(b, t_layout_unclamped, (1, 0), (k_main, k_whole))?;
        k_whole
    } else {
        k_main
    };
    k_loop(b, t_layout_clamped, (1, 0), (k_whole, k_loop_end))?;
    b.b.branch(l_joined)?;
    b.b.begin_block(Some(l_edge))?;
    k_loop(b, t_layout_clamped, (1, 0), (c0, k_loop_end))?;
    b.b.branch(l_joined)?;
    b.b.begin_block(Some(l_joined))?;
    Ok(())
}

/// One K step's operands: the left matrix and the right ones (one per accumulator), and with
/// split planes the same from the lo plane.
pub(super) type Step = ((Word, Vec<Word>), Option<(Word, Vec<Word>)>);
