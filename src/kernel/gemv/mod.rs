//! The matrix-vector kernel (decode: a few rows of activations times a weight matrix), without
//! matrix units, bound by reading the weights once.
//!
//! `X` (binding 0, `rows x K`) and `W` (binding 1, `N x K`) are both stored contiguous along K;
//! the kernel writes `C[r][n] = alpha * sum_k X[r][k] W[n][k] + beta * C[r][n]` in f32 (binding 2,
//! `C^T` where [`GemvKey::c_transposed`]). A workgroup of [`GEMV_THREADS`] invocations owns
//! [`GemvKey::cols`] rows of W: each invocation reads every `GEMV_THREADS`-th 16-byte vector of
//! them along K (so a workgroup's loads of one row are contiguous), widens them to f32 and
//! multiplies them with the X vectors of the same K, keeping `rows x cols` sums. The
//! sums then meet in workgroup memory (`sums.rs`; no subgroup operations, so any subgroup size
//! and any Vulkan 1.3 device will do). Elements past K inside the last vector are masked to
//! zero in both operands, whatever the padding holds.

use super::act8::BLOCK_VECTORS;
use super::blocks::{code_values, CodeTable, CODE_TABLE_ENTRIES, UNIT};
use super::builder::{BuildResult, ModuleBuilder};
use super::epilogue::{store_type, Epilogue, Fused};
use super::push::{Pc, PC_MEMBERS};
use crate::config::ComponentType;
use crate::quant::QuantType;
use crate::tiling::VECTOR_BYTES;
use rspirv::spirv::{BuiltIn, Capability, FunctionControl, MemoryAccess, StorageClass, Word};
use serde::Serialize;

mod k_loops;
mod sums;
mod x8;

use k_loops::*;
use sums::Sums;
use x8::*;

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
    /// With `int8_x`: X is the activations (`elem`, as without `quant`), and each invocation
    /// rounds its units of X to 8 bits as it loads them, as the pass would have
    /// ([`super::act8`], not dispatched): every workgroup rounds X again where the pass did it
    /// once, but nothing waits for the pass.
    pub round_x: bool,
    /// Whether workgroup row `y` takes row `y` of a grouped GEMM's tile table (binding 3, three
    /// words a row: group, first row, end row, as [`super::group_table`] builds it from counts
    /// on the device): the group's rows of X and C from its first row (fewer than `rows` where
    /// it has fewer), its weight `b_batch_vec` units of `ldb_vec` after the group before's. An
    /// empty table row returns at once. C not transposed; fused column vectors are the
    /// group's (`N` values each).
    pub grouped: bool,
    /// With `quant`: W's blocks are read 16 bytes at a time wherever a field starts on 16 bytes
    /// of its block (one 128-bit load where four 32-bit ones would be), which needs the format's
    /// block, W's rows, its first byte and a grouped GEMM's stride between weights all to be
    /// multiples of 16 bytes; the planner sets it where they are ([`GemvKey::wide_loads_fit`]).
    pub wide_loads: bool,
    /// With `quant`: W's blocks are interleaved in groups ([`QuantType::interleave`]), as
    /// [`crate::Context::upload_quantized`] lays out rows that are whole groups.
    pub interleaved: bool,
}

impl GemvKey {
    /// The kernel of a dense weight of `elem` taking `rows` rows of X and `cols` weight rows a
    /// workgroup: [`GEMV_THREADS`] lanes, no unrolling, C as it is, no epilogue.
    pub fn dense(elem: ComponentType, rows: u32, cols: u32) -> Self {
        Self {
            elem,
            rows,
            cols,
            lanes: GEMV_THREADS,
            unroll: 1,
            c_transposed: false,
            epilogue: Epilogue::default(),
            quant: None,
            int8_x: false,
            round_x: false,
            grouped: false,
            wide_loads: false,
            interleaved: false,
        }
    }

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
            + if self.interleaved { "_i" } else { "" }
            + if self.wide_loads { "_w" } else { "" }
            + if self.round_x { "_xr" } else { "" }
            + if self.int8_x { "_x8" } else { "" }
            + if self.grouped { "_g" } else { "" }
    }

    /// Whether blocks of `q`, from byte `start` of W's binding, `row_bytes` a row, may be read 16
    /// bytes at a time ([`GemvKey::wide_loads`]): every block, or where they are `interleaved`
    /// every group of them, then starts on 16 bytes.
    pub fn wide_loads_fit(q: QuantType, interleaved: bool, start: u64, row_bytes: u64) -> bool {
        let unit = match q.interleave().filter(|_| interleaved) {
            Some(i) => i.group_bytes(q),
            None => q.device_block_bytes(),
        };
        [unit as u64, start, row_bytes]
            .iter()
            .all(|x| x % u64::from(VECTOR_BYTES) == 0)
    }

    /// Rows of W each invocation takes: all the workgroup's where every invocation reads along
    /// each row, else its group's share ([`GemvKey::lanes`]).
    pub fn rows_per_invocation(&self) -> u32 {
        self.cols * self.lanes / GEMV_THREADS
    }

    /// Bytes of workgroup memory the kernel declares: each sum's partials (one f32 an
    /// invocation), the gathered sums' second step where every invocation reads along each
    /// row, and the table of IQ4's code values beside 8-bit activations. The planner keeps it
    /// within the device's `maxComputeSharedMemorySize` (Vulkan guarantees 16 KiB; eight rows
    /// of X times eight of W take 33 KiB).
    pub fn shared_bytes(&self) -> u32 {
        let sums = self.rows * self.rows_per_invocation() * GEMV_THREADS;
        let part = if self.lanes == GEMV_THREADS { GEMV_THREADS } else { 0 };
        let table = if self.code_table().is_some() {
            CODE_TABLE_ENTRIES
        } else {
            0
        };
        4 * (sums + part + table)
    }

    /// The code values the kernel fills its table of codes with ([`CodeTable`]): IQ4's codes
    /// beside 8-bit activations.
    fn code_table(&self) -> Option<[i8; 16]> {
        self.quant.filter(|_| self.int8_x).and_then(code_values)
    }

    /// Whether invocations sharing rows of W (`lanes` under [`GEMV_THREADS`]) are laid out as
    /// the kernel takes them: 16, 32 or 64 lanes beside 8-bit activations, whole runs of
    /// `GEMV_THREADS / lanes` rows per workgroup, 1 to [`GEMV_MAX_ROWS_PER_LANE`] rows an
    /// invocation, and at most [`GEMV_THREADS`] sums (rows of X times rows of W) a workgroup.
    pub fn shared_rows_fit(&self) -> bool {
        [16, 32, 64].contains(&self.lanes)
            && self.int8_x
            && (self.cols * self.lanes) % GEMV_THREADS == 0
            && (1..=GEMV_MAX_ROWS_PER_LANE).contains(&self.rows_per_invocation())
            && self.rows * self.cols <= GEMV_THREADS
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
    t_uvec3: Word,
    t_bool: Word,
    t_f32: Word,
    t_vec4: Word,
    t_uvec4: Word,
    t_bvec4: Word,
    glsl: Word,
    zero_vec4: Word,
    c0: Word,
}

impl Ids {
    fn declare(mb: &mut ModuleBuilder) -> Self {
        let t_u32 = mb.t_u32();
        let t_f32 = mb.t_f32();
        let t_uvec3 = mb.t_uvec(3);
        let t_uvec4 = mb.t_uvec(4);
        let t_bool = mb.t_bool();
        let t_vec4 = mb.b.type_vector(t_f32, 4);
        let t_bvec4 = mb.b.type_vector(t_bool, 4);
        let glsl = mb.glsl();
        Ids {
            t_u32,
            t_uvec3,
            t_bool,
            t_f32,
            t_vec4,
            t_uvec4,
            t_bvec4,
            glsl,
            zero_vec4: mb.b.constant_null(t_vec4),
            c0: mb.c_u32(0),
        }
    }
}

/// The kernel's inputs and bindings: its ids, push constants, X, W (and W as 16-byte vectors
/// where blocks are read so), C and its element type, and the group table.
struct Bindings {
    v_local: Word,
    v_workgroup: Word,
    v_pc: Word,
    v_x: Word,
    v_w: Word,
    v_w_vectors: Option<Word>,
    v_c: Word,
    t_out: Word,
    v_table: Option<Word>,
}

impl Bindings {
    fn declare(mb: &mut ModuleBuilder, key: &GemvKey) -> Self {
        let (t_u32, t_f32, t_uvec4) = (mb.t_u32(), mb.t_f32(), mb.t_uvec(4));
        let t_uvec3 = mb.t_uvec(3);
        let v_local = mb.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
        let v_workgroup = mb.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
        let v_pc = mb.push_constant_block(PC_MEMBERS);
        let v_x = mb.storage_buffer(t_uvec4, VECTOR_BYTES, 0, true);
        let v_w = match key.quant {
            Some(_) => mb.storage_buffer(t_u32, 4, 1, true),
            None => mb.storage_buffer(t_uvec4, VECTOR_BYTES, 1, true),
        };
        // The same binding seen as 16-byte vectors: Vulkan lets variables of one binding alias.
        let v_w_vectors =
            (key.quant.is_some() && key.wide_loads).then(|| mb.storage_buffer(t_uvec4, VECTOR_BYTES, 1, true));
        if key.int8_x {
            mb.need(Capability::DotProduct);
            mb.need(Capability::DotProductInput4x8BitPacked);
        }
        let (t_out, out_bytes) = if key.epilogue.is_fused() {
            store_type(mb, key.epilogue.output_type(ComponentType::F32))
        } else {
            (t_f32, 4)
        };
        if out_bytes == 2 {
            mb.need(Capability::StorageBuffer16BitAccess);
        }
        let v_c = mb.storage_buffer(t_out, out_bytes, 2, false);
        let v_table = key.grouped.then(|| mb.storage_buffer(t_u32, 4, 3, true));
        Bindings {
            v_local,
            v_workgroup,
            v_pc,
            v_x,
            v_w,
            v_w_vectors,
            v_c,
            t_out,
            v_table,
        }
    }
}

pub(super) fn emit(key: &GemvKey) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let t_void = mb.t_void();
    let ids = Ids::declare(&mut mb);
    let (t_u32, t_f32, t_uvec3) = (ids.t_u32, ids.t_f32, ids.t_uvec3);
    let bind = Bindings::declare(&mut mb, key);
    let fused = key.epilogue.is_fused();
    let mut fuse = fused.then(|| Fused::declare(&mut mb, key.epilogue, ComponentType::F32));
    let sums = key.rows * key.rows_per_invocation();
    let sh = Sums::declare(&mut mb, key, sums);
    let table = key.code_table().map(|values| (CodeTable::declare(&mut mb), values));

    let p_fn_f32 = mb.ptr(StorageClass::Function, t_f32);
    let zero = mb.c_bits(t_f32, 0);
    let t_fn = mb.b.type_function(t_void, []);
    let f_main = mb.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    mb.b.begin_block(None)?;
    let acc: Vec<Word> = (0..sums)
        .map(|_| mb.b.variable(p_fn_f32, None, StorageClass::Function, Some(zero)))
        .collect();
    let b = &mut mb;
    let tid = b.b.load(t_u32, None, bind.v_local, None, [])?;
    if let Some((table, values)) = table {
        table.fill(b, tid, &values)?;
    }
    let wg = b.b.load(t_uvec3, None, bind.v_workgroup, None, [])?;
    let wx = b.b.composite_extract(t_u32, None, wg, [0])?;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(bind.v_pc, which as u32);
    let (pn, pk) = (pc(b, Pc::N)?, pc(b, Pc::K)?);
    let (ldx, ldw) = (pc(b, Pc::LdaVec)?, pc(b, Pc::LdbVec)?);
    let (x_off, w_off) = (pc(b, Pc::AOff)?, pc(b, Pc::BOff)?);
    let group = match bind.v_table {
        Some(table) => Some(GroupRows::read(b, (bind.v_pc, table), wg, w_off)?),
        None => None,
    };
    if let Some(f) = fuse.as_mut() {
        f.prepare(b, bind.v_pc, group.as_ref().map(|g| g.group))?;
    }
    let w_off = group.as_ref().map_or(w_off, |g| g.w_off);
    let n0 = b.mul_u(wx, key.cols)?;
    let (lane, w_rows, x_rows) = invocation_rows(b, key, (tid, n0, group.as_ref()), ([pn, ldw, w_off], [ldx, x_off]))?;
    let k_loop = KLoop {
        lane,
        pk,
        v_w: bind.v_w,
        v_w_vectors: bind.v_w_vectors,
        w_rows: &w_rows,
        v_x: bind.v_x,
        x_rows: &x_rows,
        acc: &acc,
        table: table.map(|(t, _)| t),
        round_x: key.round_x.then_some(key.elem),
    };
    match (key.quant, key.int8_x) {
        (Some(q), true) if key.lanes < GEMV_THREADS => block_lanes_loop(b, &ids, key, q, k_loop)?,
        (Some(q), true) => packed_loop(b, &ids, (q, key.interleaved), k_loop)?,
        (Some(q), false) => blocks_loop(b, &ids, key, q, k_loop)?,
        (None, _) => vectors_loop(b, &ids, key, k_loop)?,
    }
    sh.add_up(b, &ids, (tid, lane, key.lanes), &acc)?;
    store(
        b,
        &ids,
        key,
        (bind.v_pc, bind.v_c, bind.t_out),
        (fuse.as_ref(), group.as_ref()),
        (&sh, tid, n0),
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
        b.return_if(empty)?;
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

/// Invocation `j < rows * cols` stores sum `j` (row `j / cols` of X, row `n0 + j % cols` of W)
/// where that row of W exists, with alpha and beta, or through the fused terms. The sum sits
/// where [`Sums::add_up`] left it: for W's row `c = group * per + g` of the workgroup (`per` rows an
/// invocation), entry `(r * per + g) * GEMV_THREADS + group * lanes`.
fn store(
    b: &mut ModuleBuilder,
    ids: &Ids,
    key: &GemvKey,
    (v_pc, v_c, t_out): (Word, Word, Word),
    (fuse, group): (Option<&Fused>, Option<&GroupRows>),
    (sh, tid, n0): (&Sums, Word, Word),
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
        let p = if key.lanes == GEMV_THREADS {
            sh.entry(b, ids, tid, ids.c0)?
        } else {
            let per = key.rows_per_invocation();
            let (group, g) = (b.div_u(c, per)?, b.mod_u(c, per)?);
            let slot = b.mul_u(r, per)?;
            let slot = b.b.i_add(t_u32, None, slot, g)?;
            let run = b.mul_u(group, key.lanes)?;
            sh.entry(b, ids, slot, run)?
        };
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
