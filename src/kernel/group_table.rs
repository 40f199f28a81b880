//! A grouped GEMM's tile table, built on the device from group sizes the device holds (a
//! mixture-of-experts router's per-expert token counts), so no count comes back to the host
//! before the GEMM runs ([`crate::plan::GemmPlan::grouped_counted`]).
//!
//! Bindings: 0 = the counts (u32), 2 = the table: three words per tile row (group, first row,
//! the group's end row), as [`crate::plan::GemmPlan::grouped`] writes it from the host. Push
//! constants reuse [`super::PushConstants`]: `m` = rows of A and C, `n` = groups, `k` = the
//! table's rows (the GEMM grid's rows, an upper bound on the tile rows any counts need),
//! `ldc` = the GEMM's tile rows, `lda_vec` = words from one count to the next, `a_off_vec` =
//! the first count's word in the binding.
//!
//! One workgroup. Every invocation walks every count (an MoE layer has tens to hundreds of
//! groups: cheap next to a GEMM) and writes every `THREADS`-th tile row of each group, then of
//! the unused rows at the end, which it marks empty (first row = end row = M: the GEMM's
//! workgroup returns at once). Counts that add up to more than M make every row empty, so the
//! GEMM writes nothing rather than a part of what was asked (the blocking call reports it).

use super::builder::{BuildResult, ModuleBuilder};
use super::push::{Pc, PC_MEMBERS};
use rspirv::spirv::{BuiltIn, FunctionControl, StorageClass, Word};

/// Invocations of the one workgroup.
pub const THREADS: u32 = 256;

/// Generates the pass (exported as `generate_group_table`, beside the other passes' generators).
pub fn generate() -> crate::error::Result<Vec<u32>> {
    emit().map_err(|e| crate::error::Error::Codegen(format!("group table: {e}")))
}

fn emit() -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let (f, table) = Table::declare(b)?;
    let over = table.fits(b)?;
    table.tile_rows(b, over)?;
    table.empty_rest(b)?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}

/// What the passes share: the push constants, the invocation's index, the bindings and the
/// function's variables (the running sum of counts and whether one was over, the next
/// group's first row and first tile row).
struct Table {
    m: Word,
    groups: Word,
    rows: Word,
    bm: Word,
    stride: Word,
    off: Word,
    lid: Word,
    counts: Word,
    table: Word,
    sum: Word,
    over: Word,
    first: Word,
    t0: Word,
}

impl Table {
    /// Declares the bindings, begins the function, its entry block and variables, and loads
    /// the push constants: the function, with the table.
    fn declare(b: &mut ModuleBuilder) -> BuildResult<(Word, Self)> {
        let (t_void, t_u32) = (b.t_void(), b.t_u32());
        let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
        let v_pc = b.push_constant_block(PC_MEMBERS);
        let counts = b.storage_buffer(t_u32, 4, 0, true);
        let table = b.storage_buffer(t_u32, 4, 2, false);
        let p_fn_u32 = b.ptr(StorageClass::Function, t_u32);
        let c0 = b.c_u32(0);
        let t_fn = b.b.type_function(t_void, []);
        let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
        b.b.begin_block(None)?;
        let var = |b: &mut ModuleBuilder| b.b.variable(p_fn_u32, None, StorageClass::Function, Some(c0));
        let (sum, over, first, t0) = (var(b), var(b), var(b), var(b));
        let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(v_pc, which as u32);
        let (m, groups, rows, bm) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::K)?, pc(b, Pc::Ldc)?);
        let (stride, off) = (pc(b, Pc::LdaVec)?, pc(b, Pc::AOff)?);
        let lid = b.b.load(t_u32, None, v_local, None, [])?;
        let table = Table {
            m,
            groups,
            rows,
            bm,
            stride,
            off,
            lid,
            counts,
            table,
            sum,
            over,
            first,
            t0,
        };
        Ok((f, table))
    }

    /// Group `g`'s count.
    fn count(&self, b: &mut ModuleBuilder, g: Word) -> BuildResult<Word> {
        let t_u32 = b.t_u32();
        let p_sb_u32 = b.ptr(StorageClass::StorageBuffer, t_u32);
        let c0 = b.c_u32(0);
        let at = b.b.i_mul(t_u32, None, g, self.stride)?;
        let at = b.b.i_add(t_u32, None, at, self.off)?;
        let p = b.b.access_chain(p_sb_u32, None, self.counts, [c0, at])?;
        b.b.load(t_u32, None, p, None, [])
    }

    /// Tile row `row` of the table: `words` (group, first row, end row).
    fn write(&self, b: &mut ModuleBuilder, row: Word, words: [Word; 3]) -> BuildResult<()> {
        let t_u32 = b.t_u32();
        let p_sb_u32 = b.ptr(StorageClass::StorageBuffer, t_u32);
        let c0 = b.c_u32(0);
        let base = b.mul_u(row, 3)?;
        for (i, w) in (0..).zip(words) {
            let at = b.add_u(base, i)?;
            let p = b.b.access_chain(p_sb_u32, None, self.table, [c0, at])?;
            b.b.store(p, w, None, [])?;
        }
        Ok(())
    }

    /// Pass 1: whether the counts fit M (a bool: true where they do not). The sum never passes
    /// M (a count that would is flagged, not added), so nothing wraps whatever the counts hold.
    fn fits(&self, b: &mut ModuleBuilder) -> BuildResult<Word> {
        let (t_bool, t_u32) = (b.t_bool(), b.t_u32());
        let (c0, c1) = (b.c_u32(0), b.c_u32(1));
        b.counted_loop((c0, self.groups, 1), |b, g| {
            let c = self.count(b, g)?;
            let sum = b.b.load(t_u32, None, self.sum, None, [])?;
            let room = b.b.i_sub(t_u32, None, self.m, sum)?;
            let over = b.b.u_greater_than(t_bool, None, c, room)?;
            let added = b.b.i_add(t_u32, None, sum, c)?;
            let sum = b.b.select(t_u32, None, over, sum, added)?;
            b.b.store(self.sum, sum, None, [])?;
            let flag = b.b.load(t_u32, None, self.over, None, [])?;
            let flag = b.b.select(t_u32, None, over, c1, flag)?;
            b.b.store(self.over, flag, None, [])
        })?;
        let flag = b.b.load(t_u32, None, self.over, None, [])?;
        b.b.i_not_equal(t_bool, None, flag, c0)
    }

    /// Pass 2: each group's tile rows, `ceil(count / BM)` of them, from its first row on (none
    /// where the counts are `over` M).
    fn tile_rows(&self, b: &mut ModuleBuilder, over: Word) -> BuildResult<()> {
        let t_u32 = b.t_u32();
        let (c0, c1) = (b.c_u32(0), b.c_u32(1));
        b.counted_loop((c0, self.groups, 1), |b, g| {
            let c = self.count(b, g)?;
            let c = b.b.select(t_u32, None, over, c0, c)?;
            let first = b.b.load(t_u32, None, self.first, None, [])?;
            let t0 = b.b.load(t_u32, None, self.t0, None, [])?;
            let bm_less = b.b.i_sub(t_u32, None, self.bm, c1)?;
            let tiles = b.b.i_add(t_u32, None, c, bm_less)?;
            let tiles = b.b.u_div(t_u32, None, tiles, self.bm)?;
            let end = b.b.i_add(t_u32, None, first, c)?;
            self.group_rows(b, (g, first, end), (t0, tiles))?;
            b.b.store(self.first, end, None, [])?;
            let t1 = b.b.i_add(t_u32, None, t0, tiles)?;
            b.b.store(self.t0, t1, None, [])
        })
    }

    /// Group `g`'s `tiles` tile rows from table row `t0`, every `THREADS`-th an invocation's:
    /// each its group, its first row and the group's `end`.
    fn group_rows(
        &self,
        b: &mut ModuleBuilder,
        (g, first, end): (Word, Word, Word),
        (t0, tiles): (Word, Word),
    ) -> BuildResult<()> {
        let (t_bool, t_u32) = (b.t_bool(), b.t_u32());
        let c_threads = b.c_u32(THREADS);
        b.counted_loop_by((self.lid, tiles, c_threads), |b, t| {
            let row = b.b.i_add(t_u32, None, t0, t)?;
            // Counts that fit M need at most `k` rows (the planner's bound); checked anyway, so
            // no write can leave the table.
            let inside = b.b.u_less_than(t_bool, None, row, self.rows)?;
            b.if_then(inside, |b| {
                let step = b.b.i_mul(t_u32, None, t, self.bm)?;
                let start = b.b.i_add(t_u32, None, first, step)?;
                self.write(b, row, [g, start, end])?;
                Ok(())
            })?;
            Ok(())
        })
    }

    /// Pass 3: the rows no group took, empty (first row = end row = M).
    fn empty_rest(&self, b: &mut ModuleBuilder) -> BuildResult<()> {
        let t_u32 = b.t_u32();
        let c0 = b.c_u32(0);
        let t0 = b.b.load(t_u32, None, self.t0, None, [])?;
        let start = b.b.i_add(t_u32, None, t0, self.lid)?;
        b.counted_loop((start, self.rows, THREADS), |b, row| {
            self.write(b, row, [c0, self.m, self.m])
        })
    }
}
