//! The function's first block: the accumulators, the sizes, the tile's place and the operands' tensor layouts.

use super::*;

/// What the loops and the epilogue refer to: the accumulators (and a split's partial sums), the
/// sizes, the tile, the multiply's left and right operands and C as tensors over their
/// buffers, the transposing view, and the zero matrices.
pub(super) struct Setup {
    pub(super) v_acc: Vec<Word>,
    pub(super) v_sum: Vec<Word>,
    pub(super) pm: Word,
    pub(super) pn: Word,
    /// Half of K (split planes: the lo plane follows the hi one) and the scales' reciprocals.
    pub(super) k_half: Option<Word>,
    pub(super) unscale: Option<[Word; 2]>,
    pub(super) k_loop_end: Word,
    pub(super) m0: Word,
    pub(super) n0: Word,
    pub(super) c_off: Word,
    pub(super) group: Option<Word>,
    pub(super) p_c: Word,
    pub(super) left: Tensor,
    pub(super) p_left: Word,
    pub(super) row0: Word,
    pub(super) right: Tensor,
    pub(super) p_right: Word,
    pub(super) col0s: Vec<Word>,
    pub(super) c: Tensor,
    pub(super) view: Word,
    pub(super) operands: Option<CooperativeMatrixOperands>,
    pub(super) zero_a: Word,
    pub(super) zero_b: Word,
    pub(super) zero_acc: Word,
}

/// M, N, K and the leading dimensions, in elements (for a grouped kernel's tensors M is its
/// group's end row: `setup` builds them over the tile's).
#[derive(Clone, Copy)]
pub(super) struct Sizes {
    pm: Word,
    pn: Word,
    pk: Word,
    lda: Word,
    ldb: Word,
    ldc: Word,
}

impl Sizes {
    /// N, K and the leading dimensions: pushed (`per` elements to the pushed unit), or built in
    /// (`KernelKey::fixed`), which the driver compiles into a faster loop (perf/h100-27-10.txt:
    /// `nn` 4096^3 +9%, 2048^3 +7% on the H100), one pipeline per shape. M is always pushed.
    fn read(b: &mut ModuleBuilder, key: &KernelKey, d: &Decl) -> BuildResult<Self> {
        let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(d.io.v_pc, which as u32);
        let size = |b: &mut ModuleBuilder, built_in: Option<u32>, which: Pc, per: u32| -> BuildResult<Word> {
            if let Some(v) = built_in {
                return Ok(b.c_u32(v));
            }
            let v = pc(b, which)?;
            if per == 1 {
                Ok(v)
            } else {
                b.mul_u(v, per)
            }
        };
        let (f, vw) = (key.fixed, d.vw);
        Ok(Sizes {
            pm: pc(b, Pc::M)?,
            pn: size(b, f.map(|f| f.n), Pc::N, 1)?,
            pk: size(b, f.map(|f| f.k), Pc::K, 1)?,
            // Leading dimensions and offsets of A and B come in 16-byte vectors; tensors count
            // elements.
            lda: size(b, f.map(|f| f.lda), Pc::LdaVec, vw)?,
            ldb: size(b, f.map(|f| f.ldb), Pc::LdbVec, vw)?,
            ldc: size(b, f.map(|f| f.ldc), Pc::Ldc, 1)?,
        })
    }

    /// The multiply's left and right operands and its result: A, B and C, or B^T, A^T and C^T
    /// (the same memory, the layouts flipped) when the tile is computed transposed; each
    /// operand with its pointer and its first row (left: the accumulators' first row) or
    /// column (right: the first accumulator's first column).
    #[allow(clippy::type_complexity)]
    fn tensors(
        &self,
        key: &KernelKey,
        s: TileScheme,
        ((p_a, m0), (p_b, n0)): ((Word, Word), (Word, Word)),
    ) -> ((Tensor, Word, Word), (Tensor, Word, Word), Tensor) {
        let Sizes {
            pm,
            pn,
            pk,
            lda,
            ldb,
            ldc,
        } = *self;
        if s.c_transposed() {
            (
                (Tensor::new(key.b_layout.transposed(), (pn, pk), ldb), p_b, n0),
                (Tensor::new(key.a_layout.transposed(), (pk, pm), lda), p_a, m0),
                Tensor::new(Layout::ColMajor, (pn, pm), ldc),
            )
        } else {
            (
                (Tensor::new(key.a_layout, (pm, pk), lda), p_a, m0),
                (Tensor::new(key.b_layout, (pk, pn), ldb), p_b, n0),
                Tensor::new(Layout::RowMajor, (pm, pn), ldc),
            )
        }
    }
}

/// The function's first block: the accumulators' variables, the sizes (pushed or built in),
/// the tile (an empty one returns), the operands' tensors, and zeroed accumulators.
pub(super) fn setup(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl) -> BuildResult<Setup> {
    let Decl {
        cfg,
        s,
        g,
        vw,
        planes,
        ty,
        mt,
        io,
        refs,
        ..
    } = *d;
    let v_acc: Vec<Word> = (0..mt.parts)
        .map(|_| mb.b.variable(refs.p_fn_acc, None, StorageClass::Function, None))
        .collect();
    // Split planes: each loop iteration's partial sums.
    let v_sum: Vec<Word> = (0..if planes { mt.parts } else { 0 })
        .map(|_| mb.b.variable(refs.p_fn_acc, None, StorageClass::Function, None))
        .collect();
    let b = mb;
    let sizes = Sizes::read(b, key, d)?;
    let (pm, pn, pk) = (sizes.pm, sizes.pn, sizes.pk);
    // Split planes: the operands' K holds the hi plane, then the lo plane; the loop runs over
    // the first half. Their scales' reciprocals (A's, B's) unscale the result.
    let (k_half, unscale) = match io.v_scale {
        Some(v) => {
            let half = b.div_u(pk, 2)?;
            let [(_, ua), (_, ub)] = crate::kernel::convert::operand_scales(b, v)?;
            (Some(half), Some([ua, ub]))
        }
        None => (None, None),
    };
    let k_loop_end = k_half.unwrap_or(pk);
    let wg = b.b.load(ty.t_uvec3, None, io.v_workgroup, None, [])?;
    let at = (g.bm, g.bn);
    let here = tile(b, (io.v_pc, wg), (pm, pn), at, s.raster_group(), io.v_groups)?;
    skip_empty(b, &here)?;
    let Tile {
        offsets: [a_off_vec, b_off_vec, c_off],
        pm,
        m0,
        n0,
        group,
    } = here;
    let a_off = b.mul_u(a_off_vec, vw)?;
    let b_off = b.mul_u(b_off_vec, vw)?;
    // Tensor loads and stores start at a 16-byte aligned element: the planner keeps every
    // operand's first element, and every batch stride, so.
    let p_a = b.b.access_chain(refs.p_sb_comp, None, io.v_a, [mt.c0, a_off])?;
    let p_b = b.b.access_chain(refs.p_sb_comp, None, io.v_b, [mt.c0, b_off])?;
    let p_c = b.b.access_chain(refs.p_sb_res, None, io.v_c, [mt.c0, c_off])?;

    let sizes = Sizes { pm, ..sizes };
    let ((left, p_left, row0), (right, p_right, col0), c) = sizes.tensors(key, s, ((p_a, m0), (p_b, n0)));
    let col0s = (0..mt.parts)
        .map(|j| {
            if j == 0 {
                Ok(col0)
            } else {
                b.add_u(col0, j * mt.acc_cols)
            }
        })
        .collect::<BuildResult<Vec<Word>>>()?;
    let view = b.b.create_tensor_view_nv(mt.t_view_transpose, None)?;
    let operands = mul_add_operands(&cfg);
    // Values for elements a load skips (none here: no clipping); zero for clarity.
    let zero_a = b.b.composite_construct(mt.t_mat_a, None, [refs.zero_comp])?;
    let zero_b = b.b.composite_construct(mt.t_mat_b, None, [refs.zero_comp])?;
    let zero_acc = b.b.composite_construct(mt.t_mat_acc, None, [refs.zero_res])?;
    for &v in &v_acc {
        b.b.store(v, zero_acc, None, [])?;
    }
    Ok(Setup {
        v_acc,
        v_sum,
        pm,
        pn,
        k_half,
        unscale,
        k_loop_end,
        m0,
        n0,
        c_off,
        group,
        p_c,
        left,
        p_left,
        row0,
        right,
        p_right,
        col0s,
        c,
        view,
        operands,
        zero_a,
        zero_b,
        zero_acc,
    })
}
