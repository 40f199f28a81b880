//! The K loops, one per kind of W (vectors of f16/bf16/f32, blocks dequantized in f32, blocks' codes beside 8-bit activations a unit or a block at a time), and the vector loads and sums they share.

use super::*;

/// What each K loop works on: the invocation's place along its rows (its first step: every
/// invocation's index where all read along each row), K, the bindings of W and X with the
/// start of each of the invocation's rows of them, and its sums (`acc[r * w_rows.len() + c]`
/// for row `r` of X and `c` of W).
#[derive(Copy, Clone)]
pub(super) struct KLoop<'a> {
    pub(super) lane: Word,
    pub(super) pk: Word,
    pub(super) v_w: Word,
    /// W's binding seen as 16-byte vectors, where blocks are read so ([`GemvKey::wide_loads`]).
    pub(super) v_w_vectors: Option<Word>,
    pub(super) w_rows: &'a [Word],
    pub(super) v_x: Word,
    pub(super) x_rows: &'a [Word],
    pub(super) acc: &'a [Word],
    /// The table of W's code values, where W's codes are a table's (IQ4) and X 8-bit codes.
    pub(super) table: Option<CodeTable>,
    /// X's element type where the kernel rounds X to 8 bits itself ([`GemvKey::round_x`]).
    pub(super) round_x: Option<ComponentType>,
}

/// The K loop over vectors of W of `key.elem`: each invocation every `GEMV_THREADS`-th vector,
/// `unroll` at a time, masked past K.
pub(super) fn vectors_loop(b: &mut ModuleBuilder, ids: &Ids, key: &GemvKey, k: KLoop) -> BuildResult<()> {
    let (t_u32, t_bool, t_f32) = (ids.t_u32, ids.t_bool, ids.t_f32);
    let per = key.per_vector();
    let kvecs = b.add_u(k.pk, per - 1)?;
    let kvecs = b.div_u(kvecs, per)?;
    let last_vec = b.add_u(kvecs, u32::MAX)?;
    b.counted_loop((k.lane, kvecs, GEMV_THREADS * key.unroll), |b, kv| {
        // Each step takes `unroll` vectors GEMV_THREADS apart, all loads issued before the
        // sums; one past the row reads its last vector with nothing left of it (all masked).
        let mut steps = Vec::new();
        for u in 0..key.unroll {
            let at = b.add_u(kv, u * GEMV_THREADS)?;
            let inside = b.b.u_less_than(t_bool, None, at, kvecs)?;
            let at_safe = b.b.select(t_u32, None, inside, at, last_vec)?;
            let first = b.mul_u(at, per)?;
            let left = b.b.i_sub(t_u32, None, k.pk, first)?;
            let left = b.b.select(t_u32, None, inside, left, ids.c0)?;
            steps.push((at_safe, left));
        }
        let load = |b: &mut ModuleBuilder, buf: Word, row: Word, (at, left): (Word, Word)| -> BuildResult<Vec<Word>> {
            let at = b.b.i_add(t_u32, None, row, at)?;
            let raw = load_vector(b, ids, buf, at)?;
            widen(b, ids, key.elem, raw, left)
        };
        let mut ws = Vec::new();
        let mut xs = Vec::new();
        for &step in &steps {
            ws.push(
                k.w_rows
                    .iter()
                    .map(|&row| load(b, k.v_w, row, step))
                    .collect::<BuildResult<Vec<_>>>()?,
            );
            xs.push(
                k.x_rows
                    .iter()
                    .map(|&row| load(b, k.v_x, row, step))
                    .collect::<BuildResult<Vec<_>>>()?,
            );
        }
        for (ws, xs) in ws.iter().zip(&xs) {
            for (r, x) in xs.iter().enumerate() {
                for (c, w) in ws.iter().enumerate() {
                    accumulate(b, t_f32, k.acc[r * k.w_rows.len() + c], x, w)?;
                }
            }
        }
        Ok(())
    })
}

/// The K loop over W in a block format: each invocation every `GEMV_THREADS`-th unit of 32
/// values (K is a whole number of blocks), dequantized in f32 as ggml does
/// (`blocks::value`) and multiplied with the X values of the same K.
pub(super) fn blocks_loop(b: &mut ModuleBuilder, ids: &Ids, key: &GemvKey, q: QuantType, k: KLoop) -> BuildResult<()> {
    let (t_f32, t_vec4) = (ids.t_f32, ids.t_vec4);
    let units = b.div_u(k.pk, UNIT)?;
    let per = key.per_vector();
    b.counted_loop((k.lane, units, GEMV_THREADS), |b, u| {
        let blocks = k
            .w_rows
            .iter()
            .map(|&row| crate::kernel::blocks::unit(b, (q, key.interleaved), (k.v_w, k.v_w_vectors), row, u))
            .collect::<BuildResult<Vec<_>>>()?;
        // Each X row's first vector of the unit.
        let x_first = b.mul_u(u, UNIT / per)?;
        let x_units = k
            .x_rows
            .iter()
            .map(|&row| b.b.i_add(ids.t_u32, None, row, x_first))
            .collect::<Result<Vec<Word>, _>>()?;
        // Eight values at a time (one f16 vector of X, two of f32): the unit's values and the
        // X rows' stay few in registers however many rows there are.
        for eighth in 0..UNIT / 8 {
            let ws = blocks
                .iter()
                .map(|(blk, s)| {
                    let v = (8 * eighth..8 * eighth + 8)
                        .map(|l| crate::kernel::blocks::value(b, q, blk, *s, l))
                        .collect::<BuildResult<Vec<Word>>>()?;
                    Ok(vec![
                        b.b.composite_construct(t_vec4, None, v[..4].to_vec())?,
                        b.b.composite_construct(t_vec4, None, v[4..].to_vec())?,
                    ])
                })
                .collect::<BuildResult<Vec<_>>>()?;
            for (r, &first) in x_units.iter().enumerate() {
                let mut x = Vec::new();
                for v in 0..8 / per {
                    let at = b.add_u(first, eighth * 8 / per + v)?;
                    let raw = load_vector(b, ids, k.v_x, at)?;
                    x.extend(crate::kernel::widen::widen_in_order(b, ids.glsl, key.elem, raw)?);
                }
                for (c, w) in ws.iter().enumerate() {
                    accumulate(b, t_f32, k.acc[r * k.w_rows.len() + c], &x, w)?;
                }
            }
        }
        Ok(())
    })
}

/// The K loop over W in a block format with X rounded to 8 bits ([`crate::kernel::act8`]'s
/// blocks of [`BLOCK_VECTORS`] vectors, or X's values rounded as loaded: [`GemvKey::round_x`]):
/// each invocation every `GEMV_THREADS`-th unit of 32 values, the codes of each row of W four
/// to a word (`blocks::packed`) in packed dot products with X's, each half unit's integer sum
/// turned into values' by the format's scale and offset and X's scale:
/// `a (d_x sum(code q)) + b (d_x sum(q))`.
pub(super) fn packed_loop(b: &mut ModuleBuilder, ids: &Ids, layout: (QuantType, bool), k: KLoop) -> BuildResult<()> {
    let units = b.div_u(k.pk, UNIT)?;
    b.counted_loop((k.lane, units, GEMV_THREADS), |b, u| {
        let xs = X8Unit::each_row(b, ids, &k, u)?;
        for (c, &row) in k.w_rows.iter().enumerate() {
            let (blk, s) = crate::kernel::blocks::unit(b, layout, (k.v_w, k.v_w_vectors), row, u)?;
            let w = crate::kernel::blocks::packed(b, layout.0, &blk, s, (k.x_rows.len() as u32, k.table))?;
            for (r, x) in xs.iter().enumerate() {
                x.add_product(b, ids, &w, k.acc[r * k.w_rows.len() + c])?;
            }
        }
        Ok(())
    })
}

/// The K loop where `key.lanes` invocations share each row of W: each invocation (at `lane`
/// of its row) takes every `lanes`-th run of [`BLOCK_LANE_VALUES`] values, its eight units
/// one after another: for the 256-value formats one block, each unit's index within it a
/// constant (so its scales' and codes' positions are known when the kernel is generated and
/// the block's shared words are the same loads for all eight), for the 32-value ones eight
/// consecutive blocks (NVFP4's 64: four). X as in [`packed_loop`].
pub(super) fn block_lanes_loop(
    b: &mut ModuleBuilder,
    ids: &Ids,
    key: &GemvKey,
    q: QuantType,
    k: KLoop,
) -> BuildResult<()> {
    let units_per_step = BLOCK_LANE_VALUES / UNIT;
    let per_block = q.block_values() as u32 / UNIT;
    let steps = b.div_u(k.pk, BLOCK_LANE_VALUES)?;
    b.counted_loop((k.lane, steps, key.lanes), |b, step| {
        let first_unit = b.mul_u(step, units_per_step)?;
        for j in 0..units_per_step {
            let u = b.add_u(first_unit, j)?;
            let xs = X8Unit::each_row(b, ids, &k, u)?;
            // The unit's block among the step's (one of 256 values, four of 64, eight of 32)
            // and its index in it.
            let block = b.mul_u(step, units_per_step / per_block)?;
            let block = b.add_u(block, j / per_block)?;
            let s = b.c_u32(j % per_block);
            for (c, &row) in k.w_rows.iter().enumerate() {
                let layout = (q, key.interleaved);
                let blk = crate::kernel::blocks::Block::nth(b, layout, (k.v_w, k.v_w_vectors), row, block)?;
                let w = crate::kernel::blocks::packed(b, q, &blk, s, (k.x_rows.len() as u32, k.table))?;
                for (r, x) in xs.iter().enumerate() {
                    x.add_product(b, ids, &w, k.acc[r * k.w_rows.len() + c])?;
                }
            }
        }
        Ok(())
    })
}

/// `slot += sum of dot(x[i], w[i])` over the four-vectors of X and W.
pub(super) fn accumulate(b: &mut ModuleBuilder, t_f32: Word, slot: Word, x: &[Word], w: &[Word]) -> BuildResult<()> {
    let mut s = b.b.load(t_f32, None, slot, None, [])?;
    for (&xv, &wv) in x.iter().zip(w) {
        let p = b.b.dot(t_f32, None, xv, wv)?;
        s = b.b.f_add(t_f32, None, s, p)?;
    }
    b.b.store(slot, s, None, [])
}

/// The 16-byte vector `at` of `buf`.
pub(super) fn load_vector(b: &mut ModuleBuilder, ids: &Ids, buf: Word, at: Word) -> BuildResult<Word> {
    let p_sb = b.ptr(StorageClass::StorageBuffer, ids.t_uvec4);
    let p = b.b.access_chain(p_sb, None, buf, [ids.c0, at])?;
    b.b.load(ids.t_uvec4, None, p, None, [])
}

/// A vector's elements as f32 four-vectors, those at or past `left` (the elements of the row
/// from this vector on) zeroed. The order of elements across the four-vectors is the same for
/// every operand of one type, which is all a dot product needs.
pub(super) fn widen(
    b: &mut ModuleBuilder,
    ids: &Ids,
    elem: ComponentType,
    raw: Word,
    left: Word,
) -> BuildResult<Vec<Word>> {
    let parts = crate::kernel::widen::widen(b, ids.glsl, elem, raw)?;
    let left4 = b.b.composite_construct(ids.t_uvec4, None, [left; 4])?;
    let mut out = Vec::new();
    for (v, index) in parts {
        let index = index.map(|i| b.c_u32(i));
        let index = b.b.constant_composite(ids.t_uvec4, index);
        let inside = b.b.u_less_than(ids.t_bvec4, None, index, left4)?;
        out.push(b.b.select(ids.t_vec4, None, inside, v, ids.zero_vec4)?);
    }
    Ok(out)
}
