//! A grouped GEMM (mixture of experts) as one dispatch: the groups' rows planned as one GEMM,
//! then its grid's rows replaced by a table of tile rows, each naming its group. Pure.

use super::gemm::{fused_vectors, Dispatch, GemmPlan, Kernel, Operand};
use super::passes::{window, DispatchLimits, Problem, Window};
use crate::error::{Error, Result};
use crate::kernel::PushConstants;
use crate::tiling::VECTOR_BYTES;
use serde::Serialize;

/// Words per tile row in the table: the group, the tile's first row, the group's end row.
pub(super) const WORDS: usize = 3;

/// Where a grouped GEMM's group sizes lie on the device: u32 values from `offset` bytes into
/// their buffer, one every `stride` words.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceCounts {
    /// Bytes from the buffer's start to the first count (a multiple of 4).
    pub offset: u64,
    /// Words from one count to the next (1: contiguous).
    pub stride: usize,
}

impl DeviceCounts {
    /// Bytes from the first of `groups` counts to the end of the last; `None` on overflow.
    pub fn span(&self, groups: usize) -> Option<usize> {
        groups
            .checked_sub(1)?
            .checked_mul(self.stride)?
            .checked_add(1)?
            .checked_mul(4)
    }

    /// A typed error unless there is a group and the counts are u32 words.
    pub(super) fn check(&self, groups: usize) -> Result<()> {
        if groups == 0 || self.stride == 0 || self.offset % 4 != 0 {
            return Err(Error::InvalidOperand(format!(
                "{groups} group sizes {} words apart at byte {}: at least one group, u32 counts at a multiple of 4 bytes",
                self.stride, self.offset
            )));
        }
        Ok(())
    }

    /// The pass ([`crate::kernel::group_table`]) that writes a grouped dispatch's tile table
    /// into `table` from these counts of `groups` groups: `table_rows` rows of tiles of `bm`
    /// rows over M = `m`. A typed error where the counts' span overflows or is over the
    /// device's largest binding.
    pub(super) fn table_pass(
        &self,
        groups: usize,
        (m, bm, table_rows): (usize, usize, usize),
        table: Window,
        limits: &DispatchLimits,
    ) -> Result<Dispatch> {
        let span = self
            .span(groups)
            .ok_or_else(|| Error::TooLarge("the counts' span overflows".into()))?;
        let words = window(self.offset, span as u64, limits);
        let word = |x: u64| u32::try_from(x).map_err(|_| Error::TooLarge(format!("{x} exceeds 32 bits")));
        if words.bind_range > limits.max_range {
            return Err(Error::TooLarge(format!(
                "the counts span {} bytes, more than maxStorageBufferRange ({})",
                words.bind_range, limits.max_range
            )));
        }
        Ok(Dispatch {
            kernel: Kernel::GroupTable,
            bindings: [
                (Operand::Counts, words),
                (Operand::Scratch, table),
                (Operand::Scratch, table),
            ],
            aux: None,
            vectors: [None; 3],
            push: PushConstants {
                m: word(m as u64)?,
                n: word(groups as u64)?,
                k: word(table_rows as u64)?,
                ldc: word(bm as u64)?,
                lda_vec: word(self.stride as u64)?,
                a_off_vec: word(words.start / 4)?,
                ..Default::default()
            },
            groups: [1, 1, 1],
            after_previous: false,
        })
    }
}

impl GemmPlan {
    /// This plan, of the groups' rows as one GEMM with group 0's weight as B (row-major A and
    /// C of `sum(rows)` rows, `Batch::ONE`), as a grouped GEMM in one dispatch: the grid's rows
    /// become the groups' tile rows, `ceil(rows[g] / tile rows)` for group `g` (none for an
    /// empty group), listed in a table the recorder writes to scratch; the kernel takes its
    /// group's weight `b_stride` elements after the one before and stops at the group's last
    /// row. One scheme and one pipeline serve every group, and the GPU sees one grid.
    ///
    /// `None` where this plan is not one GEMM dispatch of a kernel that can run grouped (split-K,
    /// operands converted or copied first, the accurate split), or the table or B's window
    /// would exceed the device's limits: the caller then plans each group on its own.
    pub fn grouped(mut self, rows: &[usize], b_stride: usize, limits: &DispatchLimits) -> Option<GemmPlan> {
        if rows.iter().sum::<usize>() != self.problem.m || rows.is_empty() {
            return None;
        }
        let bm = self.scheme.geometry(&self.config).bm as usize;
        let mut table = Vec::new();
        let mut first = 0usize;
        for (g, &m) in rows.iter().enumerate() {
            let end = u32::try_from(first + m).ok()?;
            for row in (first..first + m).step_by(bm) {
                table.extend([u32::try_from(g).ok()?, row as u32, end]);
            }
            first += m;
        }
        self.one_grid(rows.len(), table.len() / WORDS, b_stride, limits).ok()?;
        self.scratch_words = table;
        Some(self)
    }

    /// This plan, of `groups` groups' rows as one GEMM (as [`GemmPlan::grouped`] takes it), as a
    /// grouped GEMM whose group sizes the device holds (`counts`: u32 values, e.g. an MoE
    /// router's tokens per expert): a first pass ([`Kernel::GroupTable`]) builds the tile table
    /// in scratch from them, and the GEMM's grid has the rows any counts can need,
    /// `ceil(M / tile rows) + groups - 1`; those the counts leave unused return at once. Counts
    /// summing to less than M leave C's last rows as they were; to more than M, all of C (the
    /// table pass makes every row empty). An error says why where the groups cannot run as one
    /// dispatch, since with the counts on the device there is no other way.
    pub fn grouped_counted(
        mut self,
        groups: usize,
        counts: DeviceCounts,
        b_stride: usize,
        limits: &DispatchLimits,
    ) -> Result<GemmPlan> {
        let p = self.problem;
        counts.check(groups)?;
        let bm = self.scheme.geometry(&self.config).bm as usize;
        let table_rows = p.m.div_ceil(bm) + groups - 1;
        self.one_grid(groups, table_rows, b_stride, limits).map_err(|why| {
            Error::Unsupported(format!(
                "group sizes on the device need the groups as one dispatch, and {why}; pass the sizes from the host"
            ))
        })?;
        let table = Window::from_start(self.scratch_bytes);
        let build = counts.table_pass(groups, (p.m, bm, table_rows), table, limits)?;
        self.dispatches[0].after_previous = true;
        self.dispatches.insert(0, build);
        Ok(self)
    }

    /// Whether a pass builds the plan's tile table from counts on the device
    /// ([`GemmPlan::grouped_counted`]).
    pub fn counts_on_device(&self) -> bool {
        self.dispatches.iter().any(|d| d.kernel == Kernel::GroupTable)
    }

    /// Makes this plan's one GEMM dispatch the grouped kernel over `tile_rows` rows of a table
    /// at the start of scratch, `groups` weights `b_stride` elements apart; why not, where it
    /// cannot be.
    fn one_grid(
        &mut self,
        groups: usize,
        tile_rows: usize,
        b_stride: usize,
        limits: &DispatchLimits,
    ) -> std::result::Result<(), String> {
        let p = self.problem;
        let single = self.dispatches.len() == 1 && self.scratch_bytes == 0 && !self.transposed;
        if !single || p.batch.count != 1 {
            return Err(format!(
                "this GEMM is not one plain dispatch ({} dispatches; split-K, operands converted or copied first, C column-major and a batch make it otherwise)",
                self.dispatches.len()
            ));
        }
        let d = &mut self.dispatches[0];
        let Kernel::Gemm(key) = d.kernel else {
            return Err(format!("its kernel is {:?}", d.kernel));
        };
        let key = crate::kernel::KernelKey {
            grouped: true,
            fixed: None,
            ..key
        };
        if d.aux.is_some() || d.groups[2] != 1 {
            return Err("its kernel reads scale words or runs a batch".into());
        }
        key.check_loads().map_err(|e| e.to_string())?;
        // A fused epilogue's column vectors hold N values per group (the kernel reads its
        // group's); row vectors already run over every group's rows.
        let all = Problem {
            n: p.n.checked_mul(groups).ok_or("the groups' columns overflow")?,
            ..p
        };
        d.vectors = fused_vectors(&all, &key.epilogue, limits).map_err(|e| e.to_string())?;
        let rows = u32::try_from(tile_rows).ok().filter(|&r| r <= limits.max_groups[1]);
        let Some(rows) = rows else {
            return Err(format!(
                "its {tile_rows} tile rows exceed the grid's {} rows",
                limits.max_groups[1]
            ));
        };
        // B's window grows from group 0's weight to the last group's.
        let (b_op, b_window) = d.bindings[1];
        let stride_bytes = b_stride.checked_mul(p.b_bytes).ok_or("the weights' stride overflows")?;
        let Some((b_window, b_batch_vec)) = every_dense_weight(b_window, (groups, stride_bytes), limits) else {
            return Err(format!(
                "the weights, {stride_bytes} bytes apart, are not whole 16-byte vectors apart within maxStorageBufferRange ({})",
                limits.max_range
            ));
        };
        d.bindings[1] = (b_op, b_window);
        let table_bytes = (tile_rows * WORDS * 4) as u64;
        d.aux = Some((Operand::Scratch, Window::from_start(table_bytes)));
        d.kernel = Kernel::Gemm(key);
        d.groups[1] = rows;
        d.push.a_batch_vec = 0;
        d.push.b_batch_vec = b_batch_vec;
        d.push.c_batch = 0;
        self.scratch_bytes = table_bytes.next_multiple_of(VECTOR_BYTES as u64);
        Ok(())
    }

    /// This plan, of group `g`'s rows of a grouped GEMM (C's rows from `first`) planned on its
    /// own, reading the grouped GEMM's fused-epilogue vectors whole (`total` rows, `groups`
    /// groups of N columns): its row vectors from row `first`, its column vectors from the
    /// group's `g * N`-th value, as one grouped dispatch reads them. A transposed plan (of
    /// C^T, one group of a few rows of a column-major C) has the group's rows as its columns:
    /// its column vectors from `first`.
    pub fn group_vectors(
        mut self,
        (first, g): (usize, usize),
        (total, groups): (usize, usize),
        limits: &DispatchLimits,
    ) -> Result<GemmPlan> {
        let n = self.problem.n;
        let ((row_shift, col_shift), all) = if self.transposed {
            if groups != 1 {
                return Err(Error::Unsupported(
                    "a grouped GEMM's groups with C column-major: store C row-major".into(),
                ));
            }
            (
                (0, first),
                Problem {
                    n: total,
                    ..self.problem
                },
            )
        } else {
            let columns = n
                .checked_mul(groups)
                .ok_or_else(|| Error::TooLarge("the groups' columns overflow".into()))?;
            (
                (first, g * n),
                Problem {
                    m: total,
                    n: columns,
                    ..self.problem
                },
            )
        };
        let word = |x: usize| {
            u32::try_from(x).map_err(|_| Error::TooLarge(format!("epilogue vector offset {x} exceeds 32 bits")))
        };
        for d in &mut self.dispatches {
            let epilogue = match d.kernel {
                Kernel::Gemm(key) => key.epilogue,
                Kernel::Gemv(key) => key.epilogue,
                _ => continue,
            };
            if d.vectors.iter().all(Option::is_none) {
                continue;
            }
            d.push.row0 = word(d.push.row0 as usize + row_shift)?;
            if epilogue.reads_columns() {
                d.push.col0 = word(d.push.col0 as usize + col_shift)?;
            }
            d.vectors = fused_vectors(&all, &epilogue, limits)?;
        }
        Ok(self)
    }
}

/// The binding `w` of the first of `groups` dense weights `stride_bytes` apart, grown to the
/// last one's, and the stride in 16-byte vectors; `None` where the stride is not whole vectors
/// or the binding would be over the device's largest.
pub(super) fn every_dense_weight(
    w: Window,
    (groups, stride_bytes): (usize, usize),
    limits: &DispatchLimits,
) -> Option<(Window, u32)> {
    let range = (stride_bytes as u64)
        .checked_mul(groups as u64 - 1)
        .and_then(|more| w.bind_range.checked_add(more))
        .filter(|&r| r <= limits.max_range && stride_bytes % VECTOR_BYTES as usize == 0)?;
    let stride = u32::try_from(stride_bytes / VECTOR_BYTES as usize).ok()?;
    Some((Window { bind_range: range, ..w }, stride))
}

/// Groups planned apart (`plans`, each on its own rows of C) as one plan of `problem` (the
/// whole grouped GEMM, for the recorder's view of C) whose groups run together: every group's
/// leading dispatches (those before its first barrier: the passes that prepare its operands)
/// first, side by side; one barrier; then each group's remaining dispatches, the groups side
/// by side again (a group's later barriers stay: its first waited only for its leading
/// dispatches, which the one barrier covers). Each group's scratch moves past the ones
/// before it. `None` where a group's scratch must be zeroed or written first (the recorder
/// does that once, at the start), where the groups' scratch together is over the device's
/// largest allocation (each group's alone fits), or the plans disagree on C's orientation.
pub fn side_by_side(plans: Vec<GemmPlan>, problem: Problem, limits: &DispatchLimits) -> Option<GemmPlan> {
    let first = plans.first()?;
    let plain = |p: &GemmPlan| p.zeroed_scratch_bytes == 0 && p.scratch_words.is_empty();
    if !plans.iter().all(|p| plain(p) && p.transposed == first.transposed) {
        return None;
    }
    let (mut leads, mut rests) = (Vec::new(), Vec::new());
    let mut scratch = 0u64;
    for plan in &plans {
        let base = scratch.next_multiple_of(limits.offset_alignment.max(u64::from(VECTOR_BYTES)));
        let mut moved: Vec<Dispatch> = plan.dispatches.clone();
        for (op, w) in moved
            .iter_mut()
            .flat_map(|d| d.bindings.iter_mut().chain(d.aux.iter_mut()))
        {
            if *op == Operand::Scratch {
                w.bind_offset += base;
            }
        }
        let lead = moved.iter().take_while(|d| !d.after_previous).count();
        let lead = if lead == moved.len() { 0 } else { lead };
        // The one barrier before the first group's work covers every group's passes.
        moved[lead].after_previous = false;
        rests.extend(moved.split_off(lead));
        leads.extend(moved);
        if plan.scratch_bytes > 0 {
            scratch = base + plan.scratch_bytes;
        }
    }
    if let Some(d) = rests.first_mut().filter(|_| !leads.is_empty()) {
        d.after_previous = true;
    }
    if scratch > limits.max_allocation {
        return None;
    }
    leads.extend(rests);
    Some(GemmPlan {
        problem,
        dispatches: leads,
        scratch_bytes: scratch,
        reads_c: plans.iter().any(|p| p.reads_c),
        ..plans.into_iter().next()?
    })
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::{request, unlimited};
    use super::super::gemm::{GemmPlan, Kernel, Operand, SplitK};
    use super::super::passes::Window;

    /// 32x64 tiles (`request`'s scheme), f16 A and B: groups of 70, 0, 32, 1 rows.
    fn grouped(rows: &[usize], split_k: SplitK) -> Option<GemmPlan> {
        let m = rows.iter().sum();
        let plan = GemmPlan::new(&request(m, 100, 40, 1.0, 0.0, split_k), &unlimited()).unwrap();
        plan.grouped(rows, 40 * 104, &unlimited())
    }

    #[test]
    fn groups_become_tile_rows_of_one_dispatch() {
        let rows = [70, 0, 32, 1];
        let whole = GemmPlan::new(&request(103, 100, 40, 1.0, 0.0, SplitK::Slices(1)), &unlimited()).unwrap();
        let p = grouped(&rows, SplitK::Slices(1)).unwrap();
        assert_eq!(p.dispatches.len(), 1);
        let d = &p.dispatches[0];
        let Kernel::Gemm(key) = d.kernel else {
            panic!("{:?}", d.kernel)
        };
        assert!(key.grouped && key.name().ends_with("_grouped"), "{}", key.name());
        // Group 0: rows 0, 32, 64 (ending at 70); group 1 none; group 2 row 70 (to 102); group
        // 3 row 102 (to 103).
        #[rustfmt::skip]
        assert_eq!(p.scratch_words, [0, 0, 70, 0, 32, 70, 0, 64, 70, 2, 70, 102, 3, 102, 103]);
        assert_eq!(d.groups, [2, 5, 1]);
        assert_eq!(p.scratch_bytes, 64);
        let (op, table) = d.aux.unwrap();
        assert_eq!((op, table.bind_offset, table.bind_range), (Operand::Scratch, 0, 60));
        // B's window reaches the last group's weight, 40 x 104 f16 elements per group.
        let (b0, b) = (whole.dispatches[0].bindings[1].1, d.bindings[1].1);
        assert_eq!(b.bind_range, b0.bind_range + 3 * 40 * 104 * 2);
        assert_eq!(
            (d.push.a_batch_vec, d.push.b_batch_vec, d.push.c_batch),
            (0, 40 * 104 * 2 / 16, 0)
        );
        assert_eq!(
            (d.push.m, d.bindings[0], d.bindings[2]),
            (103, whole.dispatches[0].bindings[0], whole.dispatches[0].bindings[2])
        );
    }

    #[test]
    fn what_cannot_run_grouped_is_left_to_the_caller() {
        // Split-K's slices and reduction are more than one dispatch.
        assert!(grouped(&[2, 3], SplitK::Slices(2)).is_none());
        // Rows that do not add up to the plan's M.
        let plan = GemmPlan::new(&request(10, 100, 40, 1.0, 0.0, SplitK::Slices(1)), &unlimited()).unwrap();
        assert!(plan.clone().grouped(&[4, 5], 40 * 104, &unlimited()).is_none());
        assert!(plan.clone().grouped(&[], 40 * 104, &unlimited()).is_none());
        // A weight stride of part of a vector, more tile rows than the grid takes, a window
        // past the device's range.
        assert!(plan.clone().grouped(&[4, 6], 41, &unlimited()).is_none());
        let mut small = unlimited();
        small.max_groups[1] = 1;
        assert!(plan.clone().grouped(&[4, 6], 40 * 104, &small).is_none());
        let mut short = unlimited();
        short.max_range = 40 * 104 * 2;
        assert!(plan.clone().grouped(&[4, 6], 40 * 104, &short).is_none());
        assert!(plan.grouped(&[4, 6], 40 * 104, &unlimited()).is_some());
    }

    #[test]
    fn counts_on_the_device_take_a_table_pass_and_a_grid_for_any_counts() {
        use super::DeviceCounts;
        let plan = GemmPlan::new(&request(103, 100, 40, 1.0, 0.0, SplitK::Slices(1)), &unlimited()).unwrap();
        let counts = DeviceCounts { offset: 48, stride: 4 };
        let p = plan.clone().grouped_counted(4, counts, 40 * 104, &unlimited()).unwrap();
        assert!(p.counts_on_device() && p.scratch_words.is_empty());
        let [table, gemm] = &p.dispatches[..] else {
            panic!("{:?}", p.dispatches)
        };
        assert_eq!(
            (table.kernel, table.groups, table.after_previous),
            (Kernel::GroupTable, [1, 1, 1], false)
        );
        // 32-row tiles: ceil(103 / 32) + 4 - 1 rows cover any counts that sum to at most 103.
        assert_eq!(gemm.groups[1], 7);
        assert!(gemm.after_previous && matches!(gemm.kernel, Kernel::Gemm(key) if key.grouped));
        let (push, (op, words)) = (table.push, table.bindings[0]);
        assert_eq!((push.m, push.n, push.k, push.ldc, push.lda_vec), (103, 4, 7, 32, 4));
        // Counts 3 x 4 words apart from byte 48: a window of 13 words there.
        assert_eq!(
            (op, words.bind_offset + words.start, words.bind_range),
            (Operand::Counts, 48, 52)
        );
        assert_eq!(push.a_off_vec as u64 * 4, words.start);
        assert_eq!(
            table.bindings[2],
            (Operand::Scratch, Window::from_start(p.scratch_bytes))
        );
        assert_eq!(gemm.aux.unwrap().1.bind_range, 7 * 12);
        // What cannot run as one dispatch is an error, as are no groups and unaligned counts.
        let split = GemmPlan::new(&request(103, 100, 400, 1.0, 0.0, SplitK::Slices(2)), &unlimited()).unwrap();
        let e = split.grouped_counted(4, counts, 400 * 104, &unlimited());
        assert!(matches!(e, Err(crate::Error::Unsupported(_))), "{e:?}");
        assert!(plan.clone().grouped_counted(0, counts, 40 * 104, &unlimited()).is_err());
        let odd = DeviceCounts { offset: 2, stride: 1 };
        assert!(plan.grouped_counted(4, odd, 40 * 104, &unlimited()).is_err());
    }

    /// A fused request: a column bias of f16 and dequantisation (row and column scales).
    fn fused_request(m: usize) -> crate::plan::PlanRequest {
        use crate::kernel::{Axis, Epilogue};
        let mut req = request(m, 100, 40, 1.0, 0.0, SplitK::Slices(1));
        req.epilogue = Epilogue {
            bias: Some((Axis::Col, crate::config::ComponentType::F16)),
            ..Epilogue::NONE
        };
        req
    }

    #[test]
    fn a_grouped_dispatch_binds_every_groups_column_vectors() {
        let rows = [70, 0, 32, 1];
        let plan = GemmPlan::new(&fused_request(103), &unlimited()).unwrap();
        let (op, one) = plan.dispatches[0].vectors[0].unwrap();
        assert_eq!((op, one.bind_range), (Operand::Bias, 200), "N f16 values alone");
        let p = plan.grouped(&rows, 40 * 104, &unlimited()).unwrap();
        let d = &p.dispatches[0];
        assert_eq!(d.vectors[0].unwrap().1.bind_range, 4 * 200, "N values per group");
        assert_eq!((d.push.row0, d.push.col0), (0, 0));
    }

    #[test]
    fn a_groups_own_plan_reads_its_rows_and_columns_of_the_vectors() {
        use crate::kernel::{Axis, Epilogue};
        let plan = GemmPlan::new(&fused_request(32), &unlimited()).unwrap();
        let p = plan.clone().group_vectors((70, 2), (103, 4), &unlimited()).unwrap();
        let d = &p.dispatches[0];
        assert_eq!((d.push.row0, d.push.col0), (70, 200), "row 70, group 2's first column");
        assert_eq!(d.vectors[0].unwrap().1.bind_range, 4 * 200);
        // A row bias moves along rows only, over every group's rows.
        let mut req = fused_request(32);
        req.epilogue = Epilogue {
            bias: Some((Axis::Row, crate::config::ComponentType::F32)),
            ..Epilogue::NONE
        };
        let p = GemmPlan::new(&req, &unlimited())
            .unwrap()
            .group_vectors((70, 2), (103, 4), &unlimited())
            .unwrap();
        let d = &p.dispatches[0];
        assert_eq!((d.push.row0, d.push.col0), (70, 0));
        assert_eq!(d.vectors[0].unwrap().1.bind_range, 103 * 4);
        // Offsets past 32 bits are refused, not wrapped.
        let far = plan.group_vectors((1 << 32, 0), (1 << 33, 1), &unlimited());
        assert!(matches!(far, Err(crate::Error::TooLarge(_))), "{far:?}");
    }

    /// Two groups each a pass then its GEMM, and a group with split-K's partial sums in
    /// scratch: side by side, every pass first, one barrier, then the GEMMs; each group's scratch
    /// after the one before; a plan whose scratch is zeroed first stays apart.
    #[test]
    fn groups_side_by_side_run_their_passes_first_and_keep_their_scratch_apart() {
        use super::super::dequant::{dequantized_first, Quantized};
        use crate::config::ComponentType::F16;
        use crate::quant::QuantType;
        let limits = unlimited();
        let q = Quantized {
            quant: QuantType::Q8_0,
            rows: 100,
            cols: 64,
            window: Window::from_start(4096),
            interleaved: false,
        };
        let with_pass = |rows| {
            let gemm = GemmPlan::new(&request(rows, 100, 64, 1.0, 0.0, SplitK::Slices(1)), &limits).unwrap();
            dequantized_first(gemm, Operand::B, &q, F16, &limits).unwrap()
        };
        let split = GemmPlan::new(&request(3, 100, 64, 1.0, 0.0, SplitK::Slices(2)), &limits).unwrap();
        assert!(split.scratch_bytes > 0 && split.dispatches.iter().skip(1).any(|d| d.after_previous));
        let plans = vec![with_pass(40), split.clone(), with_pass(7)];
        let whole = super::super::passes::Problem {
            m: 50,
            ..plans[0].problem
        };
        let one = super::side_by_side(plans.clone(), whole, &limits).unwrap();
        assert_eq!(one.problem.m, 50);
        let n: usize = plans.iter().map(|p| p.dispatches.len()).sum();
        assert_eq!(one.dispatches.len(), n);
        let d = &one.dispatches;
        let dequant = |d: &super::Dispatch| matches!(d.kernel, Kernel::Dequant { .. });
        // Before the first barrier: each group's dispatches before its own first barrier (the
        // copies, and the split group's slices, which wait for nothing).
        let lead = d.iter().position(|d| d.after_previous).unwrap();
        assert_eq!(lead, 4, "two copies and two slices");
        assert_eq!(d[..lead].iter().filter(|d| dequant(d)).count(), 2);
        assert!(d[lead..].iter().all(|d| !dequant(d)));
        // It is the only one: what each group's first dispatch after it waited for (the split
        // group's reduction its slices, a GEMM its copy) came before it.
        assert_eq!(d[lead..].iter().filter(|d| d.after_previous).count(), 1);
        assert!(matches!(d.last().unwrap().kernel, Kernel::Gemm(_)));
        // Scratch: each group's windows moved past the groups before it, none overlapping.
        let mut spans: Vec<(u64, u64)> = d
            .iter()
            .flat_map(|d| d.bindings.iter())
            .filter(|(op, _)| *op == Operand::Scratch)
            .map(|(_, w)| (w.bind_offset, w.bind_offset + w.bind_range))
            .collect();
        spans.sort_unstable();
        spans.dedup();
        let copies: Vec<_> = d
            .iter()
            .filter(|d| dequant(d))
            .map(|d| d.bindings[2].1.bind_offset)
            .collect();
        assert_ne!(copies[0], copies[1], "each group's copy in scratch of its own");
        assert!(spans.iter().all(|&(_, end)| end <= one.scratch_bytes));
        let total: u64 = plans.iter().map(|p| p.scratch_bytes).sum();
        assert!(one.scratch_bytes >= total);
        // Scratch the recorder must zero first keeps the groups apart, as does scratch that
        // fits one allocation only group by group.
        let small = super::super::passes::DispatchLimits {
            max_allocation: one.scratch_bytes - 1,
            ..limits
        };
        assert!(super::side_by_side(plans.clone(), whole, &small).is_none());
        let mut zeroed = plans;
        zeroed[1].zeroed_scratch_bytes = 16;
        assert!(super::side_by_side(zeroed, whole, &limits).is_none());
    }
}
