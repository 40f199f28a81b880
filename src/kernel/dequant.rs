//! Blocks of a ggml format ([`QuantType`]) dequantized into a dense copy, in a pass of its own
//! into scratch memory, which the GEMM then reads as an f16 or f32 operand (llama.cpp's CUDA
//! backend also dequantizes to f16 for its large-batch GEMMs). Each value is
//! `blocks::value`'s, so an f32 copy equals the CPU reference bit for bit; an f16 copy is
//! that value rounded to nearest even.
//!
//! A workgroup takes a tile of units (32 values each: [`tile_units`]) at a time and stages it
//! through 16 KB of shared memory, so both its reads and its writes are whole lines: the
//! tile's blocks come in a word per invocation, each invocation dequantizes one unit from
//! there, and the values go out a 16-byte vector per invocation, consecutive invocations to
//! consecutive vectors (an invocation writing its own unit's 64 or 128 bytes left each store
//! instruction of a subgroup spread over 2-4 KB; measured in docs/perf/JOURNAL.md, "The
//! dequantizing pass staged").
//!
//! Bindings: 0 = the blocks as 32-bit words (a row's blocks need not start on a word), 2 = the
//! copy (16-byte vectors). Push constants ([`super::PushConstants`]): `m` = rows, `n` = units of
//! [`UNIT`] values per row (K / 32), `k` = workgroups dispatched (they stride over the tiles
//! together), `a_off_vec` = the first block's byte in the binding (rows of blocks follow each
//! other without gaps), `ldb_vec` and `c_off` = the copy's leading dimension and first vector
//! (16-byte vectors).

/// Values an invocation dequantizes (a block of the 32-value formats, a sub-block of the
/// others).
pub use super::blocks::UNIT;
use super::blocks::{value, Block};
use super::builder::{BuildResult, ModuleBuilder};
use super::convert::narrow_f32x8;
use super::push::Pc;
use crate::config::ComponentType;
use crate::quant::QuantType;
use rspirv::spirv::{BuiltIn, FunctionControl, MemoryAccess, MemorySemantics, Scope, StorageClass, Word};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;
/// Most workgroups per dispatch: enough to keep a large GPU's memory busy.
pub const MAX_GROUPS: u32 = 8192;

pub(super) fn emit(q: QuantType, to: ComponentType, interleaved: bool) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let ids = Ids::declare(b, (q, interleaved), to);
    let t_fn = b.b.type_function(ids.t_void, []);
    let f = b.b.begin_function(ids.t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let pass = Pass::read(b, ids)?;
    // Each workgroup takes whole tiles (whole blocks: every row is), all of its invocations
    // together, so the barriers are in uniform control flow.
    b.counted_loop_by((pass.wx, pass.tiles, pass.groups), |b, t| {
        let (g0, n) = pass.tile_start(b, t)?;
        let w0 = pass.load_tile(b, g0, n)?;
        pass.dequantize_unit(b, (g0, n), w0)?;
        pass.store_tile(b, g0, n)?;
        // The next tile's blocks overwrite these vectors only after every invocation stored.
        pass.barrier(b)
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}

/// The module-level ids the pass's stages share.
struct Ids {
    q: QuantType,
    /// Whether the blocks are interleaved in groups ([`QuantType::interleave`]).
    interleaved: bool,
    to: ComponentType,
    t_void: Word,
    t_bool: Word,
    t_u32: Word,
    t_uvec3: Word,
    t_uvec4: Word,
    v_local: Word,
    v_wg: Word,
    v_pc: Word,
    words: Word,
    v_dst: Word,
    tile: Tile,
    staged: Word,
    p_sb_u32: Word,
    p_sb_uvec4: Word,
    p_wg_u32: Word,
    scope: Word,
    sem: Word,
    u0: Word,
}

impl Ids {
    fn declare(b: &mut ModuleBuilder, (q, interleaved): (QuantType, bool), to: ComponentType) -> Self {
        let (t_void, t_bool, t_u32) = (b.t_void(), b.t_bool(), b.t_u32());
        let (t_uvec3, t_uvec4) = (b.t_uvec(3), b.t_uvec(4));
        let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
        let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
        let v_pc = b.push_constant_block(super::push::PC_MEMBERS);
        let words = b.storage_buffer(t_u32, 4, 0, true);
        let v_dst = b.storage_buffer(t_uvec4, 16, 2, false);
        let tile = Tile::of(q, to);
        let staged = b.workgroup_array(t_u32, STAGED_WORDS);
        let (p_sb_u32, p_sb_uvec4) = (
            b.ptr(StorageClass::StorageBuffer, t_u32),
            b.ptr(StorageClass::StorageBuffer, t_uvec4),
        );
        let p_wg_u32 = b.ptr(StorageClass::Workgroup, t_u32);
        let scope = b.c_u32(Scope::Workgroup as u32);
        let sem = b.c_u32((MemorySemantics::ACQUIRE_RELEASE | MemorySemantics::WORKGROUP_MEMORY).bits());
        let u0 = b.c_u32(0);
        Ids {
            q,
            interleaved,
            to,
            t_void,
            t_bool,
            t_u32,
            t_uvec3,
            t_uvec4,
            v_local,
            v_wg,
            v_pc,
            words,
            v_dst,
            tile,
            staged,
            p_sb_u32,
            p_sb_uvec4,
            p_wg_u32,
            scope,
            sem,
            u0,
        }
    }
}

/// The pass as its stages see it: the ids, and the values read at the start of the function.
struct Pass {
    ids: Ids,
    units: Word,
    groups: Word,
    first_byte: Word,
    dst_ld: Word,
    dst_off: Word,
    lid: Word,
    wx: Word,
    total: Word,
    tiles: Word,
}

impl Pass {
    fn read(b: &mut ModuleBuilder, ids: Ids) -> BuildResult<Self> {
        let t_u32 = ids.t_u32;
        let pc = |b: &mut ModuleBuilder, i: Pc| b.push_constant(ids.v_pc, i as u32);
        let (rows, units, groups) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::K)?);
        let first_byte = pc(b, Pc::AOff)?;
        let (dst_ld, dst_off) = (pc(b, Pc::LdbVec)?, pc(b, Pc::COff)?);
        let lid = b.b.load(t_u32, None, ids.v_local, None, [])?;
        let wg = b.b.load(ids.t_uvec3, None, ids.v_wg, None, [])?;
        let wx = b.b.composite_extract(t_u32, None, wg, [0])?;
        let total = b.b.i_mul(t_u32, None, rows, units)?;
        let tiles = b.add_u(total, ids.tile.units - 1)?;
        let tiles = b.div_u(tiles, ids.tile.units)?;
        Ok(Pass {
            ids,
            units,
            groups,
            first_byte,
            dst_ld,
            dst_off,
            lid,
            wx,
            total,
            tiles,
        })
    }

    fn barrier(&self, b: &mut ModuleBuilder) -> BuildResult<()> {
        b.b.control_barrier(self.ids.scope, self.ids.scope, self.ids.sem)
    }

    /// Word `c` of vector `at` of the staged values.
    fn staged_word(&self, b: &mut ModuleBuilder, at: Word, c: u32) -> BuildResult<Word> {
        let i = b.mul_u(at, 4)?;
        let i = b.add_u(i, c)?;
        b.b.access_chain(self.ids.p_wg_u32, None, self.ids.staged, [i])
    }

    /// The first byte of unit `g`'s block: rows of blocks lie one after the other, so the block
    /// index runs on across rows.
    fn block_byte(&self, b: &mut ModuleBuilder, g: Word) -> BuildResult<Word> {
        let (pb, bb) = (self.ids.tile.per_block, self.ids.q.device_block_bytes() as u32);
        let blk = b.div_u(g, pb)?;
        let at = b.mul_u(blk, bb)?;
        b.b.i_add(self.ids.t_u32, None, self.first_byte, at)
    }

    /// Tile `t`'s first unit and its count of units (the last tile may be short).
    fn tile_start(&self, b: &mut ModuleBuilder, t: Word) -> BuildResult<(Word, Word)> {
        let (t_u32, t_bool) = (self.ids.t_u32, self.ids.t_bool);
        let g0 = b.mul_u(t, self.ids.tile.units)?;
        let left = b.b.i_sub(t_u32, None, self.total, g0)?;
        let c_units = b.c_u32(self.ids.tile.units);
        let short = b.b.u_less_than(t_bool, None, left, c_units)?;
        let n = b.b.select(t_u32, None, short, left, c_units)?;
        Ok((g0, n))
    }

    /// Stage one: the tile's blocks into shared memory, a word per invocation at a time (each
    /// subgroup reads whole lines), and the word after them the funnel may read. Every load is
    /// issued before the first store, so a workgroup waits for memory once a tile rather than
    /// once a word (a loop waited for each load before the next); past the tile's last word an
    /// invocation reads that word again and stages it past the tile, where nothing reads it.
    /// Returns the first word's index.
    fn load_tile(&self, b: &mut ModuleBuilder, g0: Word, n: Word) -> BuildResult<Word> {
        let ids = &self.ids;
        let (t_u32, t_bool) = (ids.t_u32, ids.t_bool);
        let byte0 = self.block_byte(b, g0)?;
        let w0 = b.div_u(byte0, 4)?;
        let g1 = b.b.i_add(t_u32, None, g0, n)?;
        let byte1 = self.block_byte(b, g1)?;
        let w1 = b.add_u(byte1, 3)?;
        let w1 = b.div_u(w1, 4)?;
        let last = b.b.i_sub(t_u32, None, w1, w0)?;
        let mut loaded = Vec::new();
        for i in 0..ids.tile.loads {
            let j = b.add_u(self.lid, i * THREADS)?;
            let past = b.b.u_less_than(t_bool, None, last, j)?;
            let from = b.b.select(t_u32, None, past, last, j)?;
            let from = b.b.i_add(t_u32, None, w0, from)?;
            let p = b.b.access_chain(ids.p_sb_u32, None, ids.words, [ids.u0, from])?;
            loaded.push((j, b.b.load(t_u32, None, p, None, [])?));
        }
        for (j, w) in loaded {
            let p = b.b.access_chain(ids.p_wg_u32, None, ids.staged, [j])?;
            b.b.store(p, w, Some(MemoryAccess::NON_PRIVATE_POINTER), [])?;
        }
        self.barrier(b)?;
        Ok(w0)
    }

    /// Stage two: each invocation dequantizes a unit (those past the tile's last one repeat it, so
    /// the barrier after stays in uniform control flow), then, once every block is read, stages its
    /// vectors in the same memory, in a rotated order so neighbours' stores fall in different
    /// banks.
    fn dequantize_unit(&self, b: &mut ModuleBuilder, (g0, n): (Word, Word), w0: Word) -> BuildResult<()> {
        let ids = &self.ids;
        let (t_u32, t_bool) = (ids.t_u32, ids.t_bool);
        let c_last = b.add_u(n, u32::MAX)?;
        let past = b.b.u_less_than(t_bool, None, c_last, self.lid)?;
        let local = b.b.select(t_u32, None, past, c_last, self.lid)?;
        let g = b.b.i_add(t_u32, None, g0, local)?;
        // The blocks' first byte as staged (before the first word staged: the arithmetic
        // wraps back past it), and the unit's block.
        let w0_bytes = b.mul_u(w0, 4)?;
        let first = b.b.i_sub(t_u32, None, self.first_byte, w0_bytes)?;
        let block = b.div_u(g, ids.tile.per_block)?;
        let s = b.mod_u(g, ids.tile.per_block)?;
        let blk = Block::nth_staged(b, (ids.q, ids.interleaved), ids.staged, first, block)?;
        let values = (0..UNIT)
            .map(|l| value(b, ids.q, &blk, s, l))
            .collect::<BuildResult<Vec<Word>>>()?;
        let vectors = vectors(b, &values, ids.to)?;
        self.barrier(b)?;
        let mine = b.b.u_less_than(t_bool, None, self.lid, n)?;
        b.if_then(mine, |b| {
            for (part, x) in vectors.into_iter().enumerate() {
                let slot = ids.tile.slot(b, self.lid, part as u32)?;
                for c in 0..4 {
                    let xc = b.b.composite_extract(t_u32, None, x, [c])?;
                    let p = self.staged_word(b, slot, c)?;
                    b.b.store(p, xc, Some(MemoryAccess::NON_PRIVATE_POINTER), [])?;
                }
            }
            Ok(())
        })?;
        self.barrier(b)
    }

    /// Stage three: the tile's vectors out, consecutive invocations to consecutive vectors of a
    /// row.
    fn store_tile(&self, b: &mut ModuleBuilder, g0: Word, n: Word) -> BuildResult<()> {
        let ids = &self.ids;
        let (t_u32, tile) = (ids.t_u32, &ids.tile);
        let out = b.mul_u(n, tile.parts)?;
        b.counted_loop((self.lid, out, THREADS), |b, j| {
            let local = b.div_u(j, tile.parts)?;
            let part = b.mod_u(j, tile.parts)?;
            let slot = tile.slot_at(b, local, part)?;
            let mut xs = [0; 4];
            for (c, x) in xs.iter_mut().enumerate() {
                let p = self.staged_word(b, slot, c as u32)?;
                *x = b.b.load(t_u32, None, p, Some(MemoryAccess::NON_PRIVATE_POINTER), [])?;
            }
            let x = b.b.composite_construct(ids.t_uvec4, None, xs)?;
            let g = b.b.i_add(t_u32, None, g0, local)?;
            let r = b.b.u_div(t_u32, None, g, self.units)?;
            let u = b.b.u_mod(t_u32, None, g, self.units)?;
            let at = b.b.i_mul(t_u32, None, r, self.dst_ld)?;
            let at = b.b.i_add(t_u32, None, at, self.dst_off)?;
            let first = b.mul_u(u, tile.parts)?;
            let at = b.b.i_add(t_u32, None, at, first)?;
            let at = b.b.i_add(t_u32, None, at, part)?;
            let p = b.b.access_chain(ids.p_sb_uvec4, None, ids.v_dst, [ids.u0, at])?;
            b.b.store(p, x, None, [])
        })
    }
}

/// Words of shared memory a workgroup stages through: 16 KB, the least any device offers.
const STAGED_WORDS: u32 = 4096;

/// How a workgroup stages a tile of units: first the words of their blocks, then (in the same
/// memory) the 16-byte vectors of their values.
struct Tile {
    /// Units per tile: as many as fill the staged memory with values.
    units: u32,
    /// Units per block.
    per_block: u32,
    /// 16-byte vectors per unit of values.
    parts: u32,
    /// Words each invocation loads of a tile's blocks: enough for the largest tile's words.
    loads: u32,
}

/// Units a workgroup dequantizes at a time into `to`: 256 into f16, 128 into f32 (a workgroup
/// for each such tile up to [`MAX_GROUPS`] is dispatched).
pub fn tile_units(to: ComponentType) -> u32 {
    (STAGED_WORDS / 4 / parts(to)).min(THREADS)
}

/// 16-byte vectors a unit's values take in `to`.
fn parts(to: ComponentType) -> u32 {
    UNIT * to.size_bytes() / 16
}

impl Tile {
    fn of(q: QuantType, to: ComponentType) -> Self {
        let units = tile_units(to);
        let per_block = q.block_values() as u32 / UNIT;
        // The tile's blocks, a word for a start inside one, and the word after them.
        let in_words = (units / per_block * q.device_block_bytes() as u32).div_ceil(4) + 2;
        let loads = in_words.div_ceil(THREADS);
        // Every invocation's words, those past the tile's included, fit the staged memory.
        debug_assert!(loads * THREADS <= STAGED_WORDS && units % per_block == 0);
        Tile {
            units,
            per_block,
            parts: parts(to),
            loads,
        }
    }

    /// Where vector `part` (a literal) of the tile's unit `local` is staged.
    fn slot(&self, b: &mut ModuleBuilder, local: Word, part: u32) -> BuildResult<Word> {
        let part = b.c_u32(part);
        self.slot_at(b, local, part)
    }

    /// [`Tile::slot`] for a run-time `part`: `parts * local + (part ^ rotation)`, the rotation
    /// chosen so eight consecutive units' vector `part` lie in eight different 16-byte bank
    /// groups (`local / 2` for four parts a unit, `local` for eight).
    fn slot_at(&self, b: &mut ModuleBuilder, local: Word, part: Word) -> BuildResult<Word> {
        let t_u32 = b.t_u32();
        let turn = if self.parts == 4 { b.div_u(local, 2)? } else { local };
        let turn = b.mod_u(turn, self.parts)?;
        let within = b.b.bitwise_xor(t_u32, None, part, turn)?;
        let at = b.mul_u(local, self.parts)?;
        b.b.i_add(t_u32, None, at, within)
    }
}

/// A unit's 32 f32 values as the 16-byte vectors of `to` they are stored as.
fn vectors(b: &mut ModuleBuilder, values: &[Word], to: ComponentType) -> BuildResult<Vec<Word>> {
    let (t_u32, t_uvec4) = (b.t_u32(), b.t_uvec(4));
    let mut out = Vec::new();
    for eight in values.chunks(8) {
        let mut bits = [0; 8];
        for (o, &x) in bits.iter_mut().zip(eight) {
            *o = b.b.bitcast(t_u32, None, x)?;
        }
        let lo = b.b.composite_construct(t_uvec4, None, bits[..4].to_vec())?;
        let hi = b.b.composite_construct(t_uvec4, None, bits[4..].to_vec())?;
        if to == ComponentType::F32 {
            out.extend([lo, hi]);
        } else {
            out.push(narrow_f32x8(b, lo, hi, to)?);
        }
    }
    Ok(out)
}
