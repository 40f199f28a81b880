//! The matrix-vector kernel (decode: a few rows of activations times a weight matrix), without
//! matrix units, bound by reading the weights once.
//!
//! `X` (binding 0, `rows x K`) and `W` (binding 1, `N x K`) are both stored contiguous along K;
//! the kernel writes `C[r][n] = alpha * sum_k X[r][k] W[n][k] + beta * C[r][n]` in f32 (binding 2,
//! `C^T` where [`GemvKey::c_transposed`]). A workgroup of [`GEMV_THREADS`] invocations owns
//! [`GemvKey::cols`] rows of W: each invocation reads every `GEMV_THREADS`-th 16-byte vector of
//! them along K (so a workgroup's loads of one row are contiguous), widens them to f32 and
//! multiplies them with the X vectors of the same K, keeping `rows x cols` sums. The
//! sums then meet in a tree over shared memory (no subgroup operations, so any subgroup size
//! and any Vulkan 1.3 device will do). Elements past K inside the last vector are masked to
//! zero in both operands, whatever the padding holds.

use super::act8::BLOCK_VECTORS;
use super::blocks::UNIT;
use super::builder::{BuildResult, ModuleBuilder};
use super::epilogue::{store_type, Epilogue, Fused};
use super::push::{Pc, PC_MEMBERS};
use crate::config::ComponentType;
use crate::quant::QuantType;
use crate::tiling::VECTOR_BYTES;
use rspirv::spirv::{BuiltIn, Capability, FunctionControl, MemoryAccess, MemorySemantics, Scope, StorageClass, Word};
use serde::Serialize;

/// Invocations per workgroup.
pub const GEMV_THREADS: u32 = 128;
/// The most rows of X one kernel takes (its sums live in registers).
pub const GEMV_MAX_ROWS: u32 = 8;
/// The most rows of W one workgroup takes where every invocation reads along each of them
/// ([`GemvKey::lanes`] = [`GEMV_THREADS`]).
pub const GEMV_MAX_COLS: u32 = 8;
/// Values of K each invocation takes per step where invocations share a row of W
/// ([`GemvKey::lanes`] below [`GEMV_THREADS`]): a block of the 256-value formats.
pub const BLOCK_LANE_VALUES: u32 = 256;
/// The most rows of W each invocation takes where invocations share a row ([`GemvKey::lanes`]).
pub const GEMV_MAX_ROWS_PER_LANE: u32 = 4;

/// One matrix-vector kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct GemvKey {
    /// The element type of X and W: f16, bf16 or f32 (widened to f32 as loaded).
    pub elem: ComponentType,
    /// Rows of X (1 to [`GEMV_MAX_ROWS`]).
    pub rows: u32,
    /// Rows of W per workgroup.
    pub cols: u32,
    /// Invocations per row of W. [`GEMV_THREADS`]: every invocation reads along each of the
    /// workgroup's `cols` rows, a unit (or `unroll` vectors) a step, for any K. Fewer (16, 32
    /// or 64, with `int8_x` only): `lanes` invocations share a row, each taking
    /// [`BLOCK_LANE_VALUES`] values a step (a block of the 256-value formats, whose scales
    /// then sit at positions known when the kernel is generated and are read once for its
    /// eight units, or eight blocks of the 32-value ones; K a multiple of that), and the
    /// workgroup's `cols` rows fall to its `GEMV_THREADS / lanes` groups of invocations,
    /// `cols * lanes / GEMV_THREADS` consecutive rows each.
    pub lanes: u32,
    /// Vectors of each row each invocation loads per step of the K loop (1 or 2).
    pub unroll: u32,
    /// Whether C is stored transposed (`C[n][r]`: the GEMM's M side was the weights).
    pub c_transposed: bool,
    /// alpha and beta, and the fused terms applied to the f32 sums (bias, activation, an
    /// f16 or bf16 C), indexed as the GEMM's rows and columns whatever the orientation.
    pub epilogue: Epilogue,
    /// W held in a block format: read as 32-bit words, a row `ldb` bytes of blocks from byte
    /// `b_off`, each invocation dequantizing a unit of 32 values per step
    /// (`blocks::value`, in f32) where it would read a vector. `None`: W is `elem`.
    pub quant: Option<QuantType>,
    /// With `quant`: X is not the activations but their blocks rounded to 8 bits
    /// ([`super::act8`]), and each unit's weight codes, four to a word, multiply them in packed
    /// integer dot products, the format's scale and offset applied per half unit, rather than
    /// each weight dequantized to f32.
    pub int8_x: bool,
    /// Whether workgroup row `y` takes row `y` of a grouped GEMM's tile table (binding 3, three
    /// words a row: group, first row, end row, as [`super::group_table`] builds it from counts
    /// on the device): the group's rows of X and C from its first row (fewer than `rows` where
    /// it has fewer), its weight `b_batch_vec` units of `ldb_vec` after the group before's. An
    /// empty table row returns at once. C not transposed; fused column vectors are the
    /// group's (`N` values each).
    pub grouped: bool,
}

impl GemvKey {
    /// A short name for reports: `gemv_f16_r1_c4`, `_t` where C is transposed.
    pub fn name(&self) -> String {
        format!(
            "gemv_{}_r{}_c{}{}{}{}",
            self.elem,
            self.rows,
            self.cols,
            if self.unroll > 1 {
                format!("_u{}", self.unroll)
            } else {
                String::new()
            },
            if self.c_transposed { "_t" } else { "" },
            self.epilogue.fused_suffix()
        ) + &if self.lanes < GEMV_THREADS {
            format!("_l{}", self.lanes)
        } else {
            String::new()
        } + &self.quant.map_or(String::new(), |q| format!("_{q}"))
            + if self.int8_x { "_x8" } else { "" }
            + if self.grouped { "_g" } else { "" }
    }

    /// Rows of W each invocation takes: all the workgroup's where every invocation reads along
    /// each row, else its group's share ([`GemvKey::lanes`]).
    pub fn rows_per_invocation(&self) -> u32 {
        self.cols * self.lanes / GEMV_THREADS
    }

    /// Elements of X and W per 16-byte vector.
    pub fn per_vector(&self) -> u32 {
        VECTOR_BYTES / self.elem.size_bytes()
    }
}

/// Element types the kernel widens to f32 as it loads.
pub fn gemv_takes(elem: ComponentType) -> bool {
    matches!(elem, ComponentType::F16 | ComponentType::Bf16 | ComponentType::F32)
}

/// Module-level ids the stages share.
struct Ids {
    t_u32: Word,
    t_bool: Word,
    t_f32: Word,
    t_vec4: Word,
    t_uvec4: Word,
    t_bvec4: Word,
    glsl: Word,
    zero_vec4: Word,
    c0: Word,
}

pub(super) fn emit(key: &GemvKey) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let t_void = mb.t_void();
    let t_u32 = mb.t_u32();
    let t_f32 = mb.t_f32();
    let t_uvec3 = mb.t_uvec(3);
    let t_uvec4 = mb.t_uvec(4);
    let t_bool = mb.t_bool();
    let t_vec4 = mb.b.type_vector(t_f32, 4);
    let t_bvec4 = mb.b.type_vector(t_bool, 4);
    let glsl = mb.glsl();
    let ids = Ids {
        t_u32,
        t_bool,
        t_f32,
        t_vec4,
        t_uvec4,
        t_bvec4,
        glsl,
        zero_vec4: mb.b.constant_null(t_vec4),
        c0: mb.c_u32(0),
    };

    let v_local = mb.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_workgroup = mb.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = mb.push_constant_block(PC_MEMBERS);
    let v_x = mb.storage_buffer(t_uvec4, VECTOR_BYTES, 0, true);
    let v_w = match key.quant {
        Some(_) => mb.storage_buffer(t_u32, 4, 1, true),
        None => mb.storage_buffer(t_uvec4, VECTOR_BYTES, 1, true),
    };
    if key.int8_x {
        mb.need(Capability::DotProduct);
        mb.need(Capability::DotProductInput4x8BitPacked);
    }
    let fused = key.epilogue.is_fused();
    let (t_out, out_bytes) = if fused {
        store_type(&mut mb, key.epilogue.output_type(ComponentType::F32))
    } else {
        (t_f32, 4)
    };
    if out_bytes == 2 {
        mb.need(Capability::StorageBuffer16BitAccess);
    }
    let v_c = mb.storage_buffer(t_out, out_bytes, 2, false);
    let v_table = key.grouped.then(|| mb.storage_buffer(t_u32, 4, 3, true));
    let mut fuse = fused.then(|| Fused::declare(&mut mb, key.epilogue, ComponentType::F32));
    let sums = key.rows * key.rows_per_invocation();
    let sh = mb.workgroup_array(t_f32, sums * GEMV_THREADS);

    let p_fn_f32 = mb.ptr(StorageClass::Function, t_f32);
    let zero = mb.c_bits(t_f32, 0);
    let t_fn = mb.b.type_function(t_void, []);
    let f_main = mb.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    let l_entry = mb.b.begin_block(None)?;
    let acc: Vec<Word> = (0..sums)
        .map(|_| mb.b.variable(p_fn_f32, None, StorageClass::Function, Some(zero)))
        .collect();
    let b = &mut mb;
    let tid = b.b.load(t_u32, None, v_local, None, [])?;
    let wg = b.b.load(t_uvec3, None, v_workgroup, None, [])?;
    let wx = b.b.composite_extract(t_u32, None, wg, [0])?;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(v_pc, which as u32);
    let (pn, pk) = (pc(b, Pc::N)?, pc(b, Pc::K)?);
    let (ldx, ldw) = (pc(b, Pc::LdaVec)?, pc(b, Pc::LdbVec)?);
    let (x_off, w_off) = (pc(b, Pc::AOff)?, pc(b, Pc::BOff)?);
    let group = match v_table {
        Some(table) => Some(GroupRows::read(b, (v_pc, table), wg, w_off)?),
        None => None,
    };
    if let Some(f) = fuse.as_mut() {
        f.prepare(b, v_pc, group.as_ref().map(|g| g.group))?;
    }
    let w_off = group.as_ref().map_or(w_off, |g| g.w_off);
    let l_entry = group.as_ref().map_or(l_entry, |g| g.entry);
    let n0 = b.mul_u(wx, key.cols)?;
    let (lane, w_rows, x_rows) = invocation_rows(b, key, (tid, n0, group.as_ref()), ([pn, ldw, w_off], [ldx, x_off]))?;
    let k_loop = KLoop {
        entry: l_entry,
        lane,
        pk,
        v_w,
        w_rows: &w_rows,
        v_x,
        x_rows: &x_rows,
        acc: &acc,
    };
    match (key.quant, key.int8_x) {
        (Some(q), true) if key.lanes < GEMV_THREADS => block_lanes_loop(b, &ids, key, q, k_loop)?,
        (Some(q), true) => packed_loop(b, &ids, q, k_loop)?,
        (Some(q), false) => blocks_loop(b, &ids, key, q, k_loop)?,
        (None, _) => vectors_loop(b, &ids, key, k_loop)?,
    }
    reduce(b, &ids, (sh, tid, sums), (lane, key.lanes), &acc)?;
    store(
        b,
        &ids,
        key,
        (v_pc, v_c, t_out),
        (fuse.as_ref(), group.as_ref()),
        (sh, tid, n0),
    )?;
    b.end_compute(f_main, GEMV_THREADS)?;
    Ok(mb.finish())
}

/// The invocation's place along its rows of W (`lane`: its index where every invocation
/// reads along each row) and the first word or vector of each of its rows of W and of X:
/// W's rows from `n0` (the workgroup's first), its group's share where invocations share rows;
/// X's rows from 0, or from a grouped kernel's group's first.
fn invocation_rows(
    b: &mut ModuleBuilder,
    key: &GemvKey,
    (tid, n0, group): (Word, Word, Option<&GroupRows>),
    ([pn, ldw, w_off], [ldx, x_off]): ([Word; 3], [Word; 2]),
) -> BuildResult<(Word, Vec<Word>, Vec<Word>)> {
    let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
    let (lane, first) = if key.lanes == GEMV_THREADS {
        (tid, n0)
    } else {
        let group = b.div_u(tid, key.lanes)?;
        let group_first = b.mul_u(group, key.rows_per_invocation())?;
        (b.mod_u(tid, key.lanes)?, b.b.i_add(t_u32, None, n0, group_first)?)
    };
    // W's rows past N read row N - 1 (inside the binding) and are never stored.
    let last = b.add_u(pn, u32::MAX)?;
    let mut w_rows = Vec::new();
    for c in 0..key.rows_per_invocation() {
        let n = b.add_u(first, c)?;
        let inside = b.b.u_less_than(t_bool, None, n, pn)?;
        let n = b.b.select(t_u32, None, inside, n, last)?;
        let row = b.b.i_mul(t_u32, None, n, ldw)?;
        w_rows.push(b.b.i_add(t_u32, None, w_off, row)?);
    }
    let mut x_rows = Vec::new();
    for r in 0..key.rows {
        let row = match group {
            Some(g) => {
                let r = g.row(b, r)?;
                b.b.i_mul(t_u32, None, r, ldx)?
            }
            None => b.mul_u(ldx, r)?,
        };
        x_rows.push(b.b.i_add(t_u32, None, x_off, row)?);
    }
    Ok((lane, w_rows, x_rows))
}

/// A grouped kernel's table row ([`GemvKey::grouped`]): its group, the group's first row, the
/// last of its rows (`count - 1`; the kernel has returned where the group has none) and its
/// weight's offset.
struct GroupRows {
    group: Word,
    first: Word,
    last: Word,
    w_off: Word,
    /// The block the kernel goes on in once past the early return.
    entry: Word,
}

impl GroupRows {
    /// Reads workgroup row `y`'s table row (returning at once where it is empty, the same for
    /// the whole workgroup) and moves W's offset to its group's weight.
    fn read(b: &mut ModuleBuilder, (v_pc, v_table): (Word, Word), wg: Word, w_off: Word) -> BuildResult<Self> {
        let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
        let y = b.b.composite_extract(t_u32, None, wg, [1])?;
        let at = b.mul_u(y, 3)?;
        let p_word = b.ptr(StorageClass::StorageBuffer, t_u32);
        let c0 = b.c_u32(0);
        let mut words = Vec::new();
        for i in 0..3 {
            let at = b.add_u(at, i)?;
            let p = b.b.access_chain(p_word, None, v_table, [c0, at])?;
            words.push(b.b.load(t_u32, None, p, None, [])?);
        }
        let (group, first, end) = (words[0], words[1], words[2]);
        let empty = b.b.u_greater_than_equal(t_bool, None, first, end)?;
        let entry = b.return_if(empty)?;
        let count = b.b.i_sub(t_u32, None, end, first)?;
        let last = b.add_u(count, u32::MAX)?;
        let stride = b.push_constant(v_pc, Pc::BBatch as u32)?;
        let skip = b.b.i_mul(t_u32, None, group, stride)?;
        let w_off = b.b.i_add(t_u32, None, w_off, skip)?;
        Ok(GroupRows {
            group,
            first,
            last,
            w_off,
            entry,
        })
    }

    /// The group's row `r` (literal), its last row for `r` past it: rows past the group read
    /// one inside it and are never stored.
    fn row(&self, b: &mut ModuleBuilder, r: u32) -> BuildResult<Word> {
        let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
        let r = b.c_u32(r);
        let inside = b.b.u_less_than_equal(t_bool, None, r, self.last)?;
        let r = b.b.select(t_u32, None, inside, r, self.last)?;
        b.b.i_add(t_u32, None, self.first, r)
    }
}

/// What each K loop works on: the block it branches from, the invocation's place along its
/// rows (its first step: every invocation's index where all read along each row), K, the
/// bindings of W and X with the start of each of the invocation's rows of them, and its sums
/// (`acc[r * w_rows.len() + c]` for row `r` of X and `c` of W).
#[derive(Copy, Clone)]
struct KLoop<'a> {
    entry: Word,
    lane: Word,
    pk: Word,
    v_w: Word,
    w_rows: &'a [Word],
    v_x: Word,
    x_rows: &'a [Word],
    acc: &'a [Word],
}

/// The K loop over vectors of W of `key.elem`: each invocation every `GEMV_THREADS`-th vector,
/// `unroll` at a time, masked past K.
fn vectors_loop(b: &mut ModuleBuilder, ids: &Ids, key: &GemvKey, k: KLoop) -> BuildResult<()> {
    let (t_u32, t_bool, t_f32) = (ids.t_u32, ids.t_bool, ids.t_f32);
    let per = key.per_vector();
    let kvecs = b.add_u(k.pk, per - 1)?;
    let kvecs = b.div_u(kvecs, per)?;
    let last_vec = b.add_u(kvecs, u32::MAX)?;
    b.counted_loop(k.entry, (k.lane, kvecs, GEMV_THREADS * key.unroll), |b, kv| {
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
fn blocks_loop(b: &mut ModuleBuilder, ids: &Ids, key: &GemvKey, q: QuantType, k: KLoop) -> BuildResult<()> {
    let (t_f32, t_vec4) = (ids.t_f32, ids.t_vec4);
    let units = b.div_u(k.pk, UNIT)?;
    let per = key.per_vector();
    b.counted_loop(k.entry, (k.lane, units, GEMV_THREADS), |b, u| {
        let blocks = k
            .w_rows
            .iter()
            .map(|&row| super::blocks::unit(b, q, k.v_w, row, u))
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
                        .map(|l| super::blocks::value(b, q, blk, *s, l))
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
                    x.extend(super::widen::widen_in_order(b, ids.glsl, key.elem, raw)?);
                }
                for (c, w) in ws.iter().enumerate() {
                    accumulate(b, t_f32, k.acc[r * k.w_rows.len() + c], &x, w)?;
                }
            }
        }
        Ok(())
    })
}

/// The K loop over W in a block format with X rounded to 8 bits ([`super::act8`]'s blocks of
/// [`BLOCK_VECTORS`] vectors): each invocation every `GEMV_THREADS`-th unit of 32 values, the
/// codes of each row of W four to a word (`blocks::packed`) in packed dot products with
/// X's, each half unit's integer sum turned into values' by the format's scale and offset and
/// X's scale: `a (d_x sum(code q)) + b (d_x sum(q))`.
fn packed_loop(b: &mut ModuleBuilder, ids: &Ids, q: QuantType, k: KLoop) -> BuildResult<()> {
    let units = b.div_u(k.pk, UNIT)?;
    b.counted_loop(k.entry, (k.lane, units, GEMV_THREADS), |b, u| {
        let xs = X8Unit::each_row(b, ids, &k, u)?;
        for (c, &row) in k.w_rows.iter().enumerate() {
            let (blk, s) = super::blocks::unit(b, q, k.v_w, row, u)?;
            let w = super::blocks::packed(b, q, &blk, s)?;
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
/// consecutive blocks. X as in [`packed_loop`].
fn block_lanes_loop(b: &mut ModuleBuilder, ids: &Ids, key: &GemvKey, q: QuantType, k: KLoop) -> BuildResult<()> {
    let units_per_step = BLOCK_LANE_VALUES / UNIT;
    let per_block = q.block_values() as u32 / UNIT;
    let block_bytes = q.device_block_bytes() as u32;
    let aligned = block_bytes % 4 == 0;
    let steps = b.div_u(k.pk, BLOCK_LANE_VALUES)?;
    b.counted_loop(k.entry, (k.lane, steps, key.lanes), |b, step| {
        let first_unit = b.mul_u(step, units_per_step)?;
        for j in 0..units_per_step {
            let u = b.add_u(first_unit, j)?;
            let xs = X8Unit::each_row(b, ids, &k, u)?;
            // The unit's block: the step's own (256 values), or the step's j-th.
            let (block, s) = if per_block == units_per_step {
                (step, b.c_u32(j))
            } else {
                (u, b.c_u32(0))
            };
            let at = b.mul_u(block, block_bytes)?;
            for (c, &row) in k.w_rows.iter().enumerate() {
                let base = b.b.i_add(ids.t_u32, None, row, at)?;
                let blk = super::blocks::Block::new(k.v_w, base, aligned);
                let w = super::blocks::packed(b, q, &blk, s)?;
                for (r, x) in xs.iter().enumerate() {
                    x.add_product(b, ids, &w, k.acc[r * k.w_rows.len() + c])?;
                }
            }
        }
        Ok(())
    })
}

/// One unit of a row of X as [`super::act8`] wrote it: 8 words of codes, the scale, and the
/// scale times each half's sum of codes.
struct X8Unit {
    codes: Vec<Word>,
    d: Word,
    sums: [Word; 2],
}

impl X8Unit {
    /// Unit `u` of each of the invocation's rows of X.
    fn each_row(b: &mut ModuleBuilder, ids: &Ids, k: &KLoop, u: Word) -> BuildResult<Vec<Self>> {
        let first = b.mul_u(u, BLOCK_VECTORS)?;
        k.x_rows
            .iter()
            .map(|&row| {
                let at = b.b.i_add(ids.t_u32, None, row, first)?;
                X8Unit::load(b, ids, k.v_x, at)
            })
            .collect()
    }

    /// The unit whose first vector is `at` in X.
    fn load(b: &mut ModuleBuilder, ids: &Ids, v_x: Word, at: Word) -> BuildResult<Self> {
        let mut words = Vec::new();
        for v in 0..BLOCK_VECTORS {
            let at = b.add_u(at, v)?;
            let raw = load_vector(b, ids, v_x, at)?;
            for i in 0..4 {
                words.push(b.b.composite_extract(ids.t_u32, None, raw, [i])?);
            }
        }
        let f = |b: &mut ModuleBuilder, i: usize| b.b.bitcast(ids.t_f32, None, words[i]);
        let (d, sums) = (f(b, 8)?, [f(b, 9)?, f(b, 10)?]);
        words.truncate(8);
        Ok(X8Unit { codes: words, d, sums })
    }

    /// `slot += sum over the unit of x w`: each half's packed dot products of the codes, then
    /// `a (d_x sum) + b (d_x sum(q))` per half (once for both where the halves share them).
    fn add_product(&self, b: &mut ModuleBuilder, ids: &Ids, w: &super::blocks::Packed, slot: Word) -> BuildResult<()> {
        let (t_u32, t_f32) = (ids.t_u32, ids.t_f32);
        let mut halves = [0; 2];
        for (h, half) in halves.iter_mut().enumerate() {
            let mut sum = None;
            for (&x, &wk) in self.codes.iter().zip(&w.words).skip(4 * h).take(4) {
                let dot = packed_dot(b, w.signed, x, wk)?;
                sum = Some(match sum {
                    None => dot,
                    Some(s) => b.b.i_add(t_u32, None, s, dot)?,
                });
            }
            *half = sum.expect("four words a half");
        }
        let terms: Vec<(Word, Word, Option<Word>, Word)> = if w.shared {
            let sum = b.b.i_add(t_u32, None, halves[0], halves[1])?;
            let x_sum = b.b.f_add(t_f32, None, self.sums[0], self.sums[1])?;
            vec![(sum, w.a[0], w.b[0], x_sum)]
        } else {
            (0..2).map(|h| (halves[h], w.a[h], w.b[h], self.sums[h])).collect()
        };
        let mut total = b.b.load(t_f32, None, slot, None, [])?;
        for (sum, a, off, x_sum) in terms {
            let sum = small_int_f32(b, sum)?;
            let dots = b.b.f_mul(t_f32, None, sum, self.d)?;
            let v = b.b.f_mul(t_f32, None, a, dots)?;
            total = b.b.f_add(t_f32, None, total, v)?;
            if let Some(off) = off {
                let v = b.b.f_mul(t_f32, None, off, x_sum)?;
                total = b.b.f_add(t_f32, None, total, v)?;
            }
        }
        b.b.store(slot, total, None, [])
    }
}

/// The packed dot product of X's four signed codes with W's four (signed or unsigned), as the
/// bits of an i32.
fn packed_dot(b: &mut ModuleBuilder, signed: bool, x: Word, w: Word) -> BuildResult<Word> {
    let t_i32 = b.b.type_int(32, 1);
    let t_u32 = b.t_u32();
    let packed = Some(rspirv::spirv::PackedVectorFormat::PackedVectorFormat4x8Bit);
    let dot = if signed {
        b.b.s_dot(t_i32, None, x, w, packed)?
    } else {
        b.b.su_dot(t_i32, None, x, w, packed)?
    };
    b.b.bitcast(t_u32, None, dot)
}

/// The i32 whose bits are `x`, |x| < 2^22, as f32: `x + 0x4b400000` is the float
/// `1.5 * 2^23 + x`, and subtracting `1.5 * 2^23` leaves x exactly (both integers of one
/// binade), two full-rate operations where a conversion runs at a quarter of the rate on
/// NVIDIA's SMs. A half unit's sum is at most 16 * 127 * 255.
fn small_int_f32(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let (t_u32, t_f32) = (b.t_u32(), b.t_f32());
    let magic = b.c_u32(0x4b40_0000);
    let biased = b.b.i_add(t_u32, None, x, magic)?;
    let f = b.b.bitcast(t_f32, None, biased)?;
    let offset = b.c_bits(t_f32, 12_582_912.0f32.to_bits());
    b.b.f_sub(t_f32, None, f, offset)
}

/// `slot += sum of dot(x[i], w[i])` over the four-vectors of X and W.
fn accumulate(b: &mut ModuleBuilder, t_f32: Word, slot: Word, x: &[Word], w: &[Word]) -> BuildResult<()> {
    let mut s = b.b.load(t_f32, None, slot, None, [])?;
    for (&xv, &wv) in x.iter().zip(w) {
        let p = b.b.dot(t_f32, None, xv, wv)?;
        s = b.b.f_add(t_f32, None, s, p)?;
    }
    b.b.store(slot, s, None, [])
}

/// The 16-byte vector `at` of `buf`.
fn load_vector(b: &mut ModuleBuilder, ids: &Ids, buf: Word, at: Word) -> BuildResult<Word> {
    let p_sb = b.ptr(StorageClass::StorageBuffer, ids.t_uvec4);
    let p = b.b.access_chain(p_sb, None, buf, [ids.c0, at])?;
    b.b.load(ids.t_uvec4, None, p, None, [])
}

/// A vector's elements as f32 four-vectors, those at or past `left` (the elements of the row
/// from this vector on) zeroed. The order of elements across the four-vectors is the same for
/// every operand of one type, which is all a dot product needs.
fn widen(b: &mut ModuleBuilder, ids: &Ids, elem: ComponentType, raw: Word, left: Word) -> BuildResult<Vec<Word>> {
    let parts = super::widen::widen(b, ids.glsl, elem, raw)?;
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

/// Sums the sums of the invocations that share rows: each invocation's `acc[j]` goes to shared
/// `j * GEMV_THREADS + tid`, then within each run of `lanes` invocations (the whole workgroup
/// where they all read along every row) halves fold onto the lower half until the run's first
/// entry holds the run's sum `j`.
fn reduce(
    b: &mut ModuleBuilder,
    ids: &Ids,
    (sh, tid, sums): (Word, Word, u32),
    (lane, lanes): (Word, u32),
    acc: &[Word],
) -> BuildResult<()> {
    let p_wg = b.ptr(StorageClass::Workgroup, ids.t_f32);
    let np = Some(MemoryAccess::NON_PRIVATE_POINTER);
    let scope = b.c_u32(Scope::Workgroup as u32);
    let sem = b.c_u32((MemorySemantics::ACQUIRE_RELEASE | MemorySemantics::WORKGROUP_MEMORY).bits());
    for (j, &slot) in acc.iter().enumerate() {
        let s = b.b.load(ids.t_f32, None, slot, None, [])?;
        let at = b.add_u(tid, j as u32 * GEMV_THREADS)?;
        let p = b.b.access_chain(p_wg, None, sh, [at])?;
        b.b.store(p, s, np, [])?;
    }
    let mut half = lanes / 2;
    while half > 0 {
        b.b.control_barrier(scope, scope, sem)?;
        let lower = b.c_u32(half);
        let active = b.b.u_less_than(ids.t_bool, None, lane, lower)?;
        b.if_then(active, |b| {
            for j in 0..sums {
                let at = b.add_u(tid, j * GEMV_THREADS)?;
                let from = b.add_u(at, half)?;
                let p = b.b.access_chain(p_wg, None, sh, [at])?;
                let q = b.b.access_chain(p_wg, None, sh, [from])?;
                let x = b.b.load(ids.t_f32, None, p, np, [])?;
                let y = b.b.load(ids.t_f32, None, q, np, [])?;
                let s = b.b.f_add(ids.t_f32, None, x, y)?;
                b.b.store(p, s, np, [])?;
            }
            Ok(())
        })?;
        half /= 2;
    }
    b.b.control_barrier(scope, scope, sem)
}

/// Invocation `j < rows * cols` stores sum `j` (row `j / cols` of X, row `n0 + j % cols` of W)
/// where that row of W exists, with alpha and beta, or through the fused terms. The sum sits
/// where [`reduce`] left it: for W's row `c = group * per + g` of the workgroup (`per` rows an
/// invocation), entry `(r * per + g) * GEMV_THREADS + group * lanes`.
fn store(
    b: &mut ModuleBuilder,
    ids: &Ids,
    key: &GemvKey,
    (v_pc, v_c, t_out): (Word, Word, Word),
    (fuse, group): (Option<&Fused>, Option<&GroupRows>),
    (sh, tid, n0): (Word, Word, Word),
) -> BuildResult<()> {
    let t_u32 = ids.t_u32;
    let sums = b.c_u32(key.rows * key.cols);
    let mine = b.b.u_less_than(ids.t_bool, None, tid, sums)?;
    let pn = b.push_constant(v_pc, Pc::N as u32)?;
    let r = b.div_u(tid, key.cols)?;
    let c = b.mod_u(tid, key.cols)?;
    let n = b.b.i_add(t_u32, None, n0, c)?;
    let inside = b.b.u_less_than(ids.t_bool, None, n, pn)?;
    let mut ok = b.b.logical_and(ids.t_bool, None, mine, inside)?;
    if let Some(g) = group {
        let in_group = b.b.u_less_than_equal(ids.t_bool, None, r, g.last)?;
        ok = b.b.logical_and(ids.t_bool, None, ok, in_group)?;
    }
    b.if_then(ok, |b| {
        let p_wg = b.ptr(StorageClass::Workgroup, ids.t_f32);
        let at = if key.lanes == GEMV_THREADS {
            b.mul_u(tid, GEMV_THREADS)?
        } else {
            let per = key.rows_per_invocation();
            let (group, g) = (b.div_u(c, per)?, b.mod_u(c, per)?);
            let slot = b.mul_u(r, per)?;
            let slot = b.b.i_add(t_u32, None, slot, g)?;
            let slot = b.mul_u(slot, GEMV_THREADS)?;
            let run = b.mul_u(group, key.lanes)?;
            b.b.i_add(t_u32, None, slot, run)?
        };
        let p = b.b.access_chain(p_wg, None, sh, [at])?;
        let mut x =
            b.b.load(ids.t_f32, None, p, Some(MemoryAccess::NON_PRIVATE_POINTER), [])?;
        let ldc = b.push_constant(v_pc, Pc::Ldc as u32)?;
        let c_off = b.push_constant(v_pc, Pc::COff as u32)?;
        let r = match group {
            Some(g) => b.b.i_add(t_u32, None, g.first, r)?,
            None => r,
        };
        let (outer, inner) = if key.c_transposed { (n, r) } else { (r, n) };
        let idx = b.b.i_mul(t_u32, None, outer, ldc)?;
        let idx = b.b.i_add(t_u32, None, idx, inner)?;
        let idx = b.b.i_add(t_u32, None, idx, c_off)?;
        let p_sb = b.ptr(StorageClass::StorageBuffer, t_out);
        let p = b.b.access_chain(p_sb, None, v_c, [ids.c0, idx])?;
        if let Some(f) = fuse {
            // The terms index C as the GEMM's rows and columns.
            let x = f.element(b, x, (outer, inner), p)?;
            return b.b.store(p, x, None, []);
        }
        if key.epilogue.alpha {
            let bits = b.push_constant(v_pc, Pc::Alpha as u32)?;
            let alpha = b.b.bitcast(ids.t_f32, None, bits)?;
            x = b.b.f_mul(ids.t_f32, None, x, alpha)?;
        }
        if key.epilogue.beta {
            let bits = b.push_constant(v_pc, Pc::Beta as u32)?;
            let beta = b.b.bitcast(ids.t_f32, None, bits)?;
            let old = b.b.load(ids.t_f32, None, p, None, [])?;
            let old = b.b.f_mul(ids.t_f32, None, old, beta)?;
            x = b.b.f_add(ids.t_f32, None, x, old)?;
        }
        b.b.store(p, x, None, [])
    })
}
