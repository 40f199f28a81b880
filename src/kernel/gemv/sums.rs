//! Adding up a matrix-vector workgroup's partial sums: each invocation holds its share of every
//! sum the workgroup owns (a row of X times a row of W), and [`store`] takes each
//! sum from workgroup memory. Where every invocation reads along each row, the sums are
//! gathered in two steps behind two barriers; where runs of invocations share rows, a tree of
//! halves folds each run. On the H200 (docs/perf `h200-45-4`, quantized weights of 22016x4096)
//! gathering took eight tokens' decode 17-27% below the tree's time (q4_0 57.4 -> 43.2 us; f16
//! weights 5%), four tokens' 13-23%, one token's 0-6.5%; and it beat adding each sum across a
//! subgroup in one instruction (`GroupNonUniformFAdd`, then the subgroups' sums behind one
//! barrier) at every row count (`h200-45-3`, `-4`): sixteen reductions of five shuffles cost
//! more than the loads.

use super::*;

/// The workgroup memory the workgroup adds its sums in.
pub(super) struct Sums {
    /// `sums * GEMV_THREADS` f32: sum `j`'s partials from entry `j * GEMV_THREADS`.
    sh: Word,
    /// [`GEMV_THREADS`] f32 for [`Sums::gathered`]'s second step.
    part: Option<Word>,
}

impl Sums {
    /// The arrays `key`'s kernel adds its `sums` sums in; before its function begins.
    pub(super) fn declare(mb: &mut ModuleBuilder, key: &GemvKey, sums: u32) -> Self {
        let t_f32 = mb.t_f32();
        let sh = mb.workgroup_array(t_f32, sums * GEMV_THREADS);
        let part = (key.lanes == GEMV_THREADS).then(|| mb.workgroup_array(t_f32, GEMV_THREADS));
        Sums { sh, part }
    }

    /// Adds up each sum `j` of `acc` over the invocations that share it: where every
    /// invocation reads along each row, the whole sum ends in entry `j * GEMV_THREADS`, read
    /// next by invocation `j` (no barrier after); otherwise run `run`'s ends in entry
    /// `j * GEMV_THREADS + run * lanes`, behind a barrier.
    pub(super) fn add_up(
        &self,
        b: &mut ModuleBuilder,
        ids: &Ids,
        (tid, lane, lanes): (Word, Word, u32),
        acc: &[Word],
    ) -> BuildResult<()> {
        match self.part {
            Some(part) => self.gathered(b, ids, tid, acc, part),
            None => self.tree(b, ids, (tid, lane, lanes), acc),
        }
    }

    /// The entry where [`Sums::add_up`] leaves sum `slot` of the run from invocation `first`.
    pub(super) fn entry(&self, b: &mut ModuleBuilder, ids: &Ids, slot: Word, first: Word) -> BuildResult<Word> {
        let at = b.mul_u(slot, GEMV_THREADS)?;
        let at = b.b.i_add(ids.t_u32, None, at, first)?;
        self.ptr(b, ids, at)
    }

    fn ptr(&self, b: &mut ModuleBuilder, ids: &Ids, at: Word) -> BuildResult<Word> {
        let p_wg = b.ptr(StorageClass::Workgroup, ids.t_f32);
        b.b.access_chain(p_wg, None, self.sh, [at])
    }

    /// Each invocation's `acc[j]` to entry `j * GEMV_THREADS + tid`.
    fn spill(&self, b: &mut ModuleBuilder, ids: &Ids, tid: Word, acc: &[Word]) -> BuildResult<()> {
        for (j, &slot) in acc.iter().enumerate() {
            let s = b.b.load(ids.t_f32, None, slot, None, [])?;
            let at = b.add_u(tid, j as u32 * GEMV_THREADS)?;
            let p = self.ptr(b, ids, at)?;
            b.b.store(p, s, NP, [])?;
        }
        Ok(())
    }

    /// Within each run of `lanes` invocations, halves fold onto the lower half until the
    /// run's first entry holds its sum: a barrier a halving.
    fn tree(
        &self,
        b: &mut ModuleBuilder,
        ids: &Ids,
        (tid, lane, lanes): (Word, Word, u32),
        acc: &[Word],
    ) -> BuildResult<()> {
        self.spill(b, ids, tid, acc)?;
        let mut half = lanes / 2;
        while half > 0 {
            b.workgroup_barrier()?;
            let lower = b.c_u32(half);
            let active = b.b.u_less_than(ids.t_bool, None, lane, lower)?;
            b.if_then(active, |b| {
                for j in 0..acc.len() as u32 {
                    let at = b.add_u(tid, j * GEMV_THREADS)?;
                    let from = b.add_u(at, half)?;
                    let p = self.ptr(b, ids, at)?;
                    let q = self.ptr(b, ids, from)?;
                    let x = b.b.load(ids.t_f32, None, p, NP, [])?;
                    let y = b.b.load(ids.t_f32, None, q, NP, [])?;
                    let s = b.b.f_add(ids.t_f32, None, x, y)?;
                    b.b.store(p, s, NP, [])?;
                }
                Ok(())
            })?;
            half /= 2;
        }
        b.workgroup_barrier()
    }

    /// Two steps behind two barriers, where the tree takes seven: `per` invocations take each
    /// sum `j` (the most, a power of two, that the workgroup has for all), invocation
    /// `j * per + p` adding every `per`-th partial from `p` into `part`, starting `j` partials
    /// on so that a subgroup's loads fall in different banks; then invocation `j` adds its
    /// sum's `per` parts in order.
    fn gathered(&self, b: &mut ModuleBuilder, ids: &Ids, tid: Word, acc: &[Word], part: Word) -> BuildResult<()> {
        let (t_u32, t_f32, t_bool) = (ids.t_u32, ids.t_f32, ids.t_bool);
        let sums = acc.len() as u32;
        let mut per = 1;
        while sums * per * 2 <= GEMV_THREADS {
            per *= 2;
        }
        let each = GEMV_THREADS / per;
        self.spill(b, ids, tid, acc)?;
        b.workgroup_barrier()?;
        let p_wg = b.ptr(StorageClass::Workgroup, t_f32);
        let takers = b.c_u32(sums * per);
        let taking = b.b.u_less_than(t_bool, None, tid, takers)?;
        b.if_then(taking, |b| {
            let j = b.div_u(tid, per)?;
            let p = b.mod_u(tid, per)?;
            let first = b.mul_u(j, GEMV_THREADS)?;
            let first = b.b.i_add(t_u32, None, first, p)?;
            let s = sum_in_order(b, t_f32, each, |b, i| {
                // Partial (i + j) % each of the ones this invocation adds.
                let k = b.add_u(j, i)?;
                let k = b.mod_u(k, each)?;
                let k = b.mul_u(k, per)?;
                let at = b.b.i_add(t_u32, None, first, k)?;
                let p = self.ptr(b, ids, at)?;
                b.b.load(t_f32, None, p, NP, [])
            })?;
            let p = b.b.access_chain(p_wg, None, part, [tid])?;
            b.b.store(p, s, NP, [])
        })?;
        b.workgroup_barrier()?;
        let c_sums = b.c_u32(sums);
        let mine = b.b.u_less_than(t_bool, None, tid, c_sums)?;
        b.if_then(mine, |b| {
            let first = b.mul_u(tid, per)?;
            let s = sum_in_order(b, t_f32, per, |b, p| {
                let at = b.add_u(first, p)?;
                let p = b.b.access_chain(p_wg, None, part, [at])?;
                b.b.load(t_f32, None, p, NP, [])
            })?;
            let own = b.mul_u(tid, GEMV_THREADS)?;
            let p = self.ptr(b, ids, own)?;
            b.b.store(p, s, NP, [])
        })
    }
}

/// Workgroup memory is read and written through non-private pointers, made visible by the
/// barriers.
const NP: Option<MemoryAccess> = Some(MemoryAccess::NON_PRIVATE_POINTER);

/// The f32 sum of `load(b, i)` for `i` in `0..n` (at least one), added in that order.
fn sum_in_order(
    b: &mut ModuleBuilder,
    t_f32: Word,
    n: u32,
    mut load: impl FnMut(&mut ModuleBuilder, u32) -> BuildResult<Word>,
) -> BuildResult<Word> {
    let mut s = load(b, 0)?;
    for i in 1..n {
        let x = load(b, i)?;
        s = b.b.f_add(t_f32, None, s, x)?;
    }
    Ok(s)
}
