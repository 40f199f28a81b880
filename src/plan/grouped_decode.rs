//! Grouped decode with the group sizes on the device: the matrix-vector kernel over every
//! group at once, each workgroup row taking a tile of one group's rows from the table the
//! grouped GEMM's pass builds from the counts, so only the weights of groups with rows are
//! read. Pure.

use super::gemm::{fused_vectors, Dispatch, GemmPlan, Kernel, Operand};
use super::grouped::{every_dense_weight, DeviceCounts, WORDS};
use super::passes::{DispatchLimits, Problem, Window};
use crate::error::{Error, Result};
use crate::tiling::VECTOR_BYTES;

/// Rows of A each workgroup of grouped decode with the sizes on the device takes from one group
/// by default ([`GemmPlan::gemv_grouped_counted`], `GemmOptions::gemv_group_rows`), on blocks
/// of a quantized weight (`quantized`) or on a dense one. Measured on the H200, eight experts of
/// 14336x4096, f16 activations, us for tiles of 1 / 2 / 4 / 8 rows (docs/perf/h200-39-1.txt,
/// -3.txt; before this table every group took a tile of all of A's rows):
///
/// | routing of A's rows | dense f16 | q4_K (8-bit activations) |
/// | --- | --- | --- |
/// | 1 + 1 (one token, top-2) | 67.7 / 68.7 / - / - | 35.2 / 53.1 (38th) / - / - |
/// | eight groups of 1 | 222.4 / 224.5 / 279.0 / 519.9 | 96.9 / 123.8 / 193.0 / 325.8 (38th) |
/// | four of 2 | 221.4 / 125.3 / 156.4 / 284.1 | 92.4 / 75.1 / - / - |
/// | two of 4 | 222.7 / 125.5 / 94.6 / 167.6 | 90.8 / 72.2 / 72.3 / - |
/// | one of 8 | 222.7 / 125.4 / 94.1 / 107.6 | - |
///
/// On dense weights a tile of two costs what a tile of one does and halves a pair's reads; on
/// blocks a second row costs a quarter more where it is empty and saves a fifth where it is
/// not, and decode's commonest routing (one token to two experts) has none, so one. (The
/// figures marked 38th are that session's kernel, whose tiles were all of A's rows:
/// docs/perf/h200-38-2.txt.)
pub fn counted_decode_rows(quantized: bool) -> u32 {
    if quantized {
        1
    } else {
        2
    }
}

impl GemmPlan {
    /// This plan, decode on group 0's weight (the matrix-vector kernel over every row of A, C
    /// not transposed, on a dense weight or on blocks, where the pass rounding A to 8 bits may
    /// come first), as a grouped GEMM whose `groups` sizes the device holds: a pass builds the
    /// tile table from the counts with tiles of `tile_rows` rows (at most M), and workgroup row
    /// `y` of the kernel, made for that many rows (its rows of W per workgroup and vectors per
    /// step the measured ones for them, where `tuning` does not set them:
    /// [`super::gemv_for_rows`]), takes table row `y` ([`crate::kernel::GemvKey::grouped`]),
    /// its group's weight `w_stride` bytes after the group before's, and its own N values of
    /// the fused column vectors. A group without rows reads nothing of its weight; a group of
    /// more rows than a tile reads its weight once a tile. Typed errors where the plan is not
    /// such a decode, `tile_rows` is 0 or the weights do not fit one binding.
    pub fn gemv_grouped_counted(
        mut self,
        groups: usize,
        counts: DeviceCounts,
        w_stride: usize,
        (tile_rows, tuning): (u32, (Option<u32>, Option<u32>)),
        limits: &DispatchLimits,
    ) -> Result<GemmPlan> {
        counts.check(groups)?;
        if tile_rows == 0 {
            return Err(Error::InvalidOption(
                "tiles of 0 rows of A: grouped decode takes at least one row a tile".into(),
            ));
        }
        let m = self.problem.m;
        let found = self.dispatches.last().and_then(|d| match d.kernel {
            Kernel::Gemv(key) => Some((*d, key)),
            _ => None,
        });
        let Some((d, key)) = found.filter(|(_, key)| !key.c_transposed && !key.grouped && key.rows as usize == m)
        else {
            return Err(Error::Unsupported(format!(
                "grouped decode with sizes on the device runs the matrix-vector kernel with the weights as B over every row of A, plan {} is not that",
                self.kernel_name()
            )));
        };
        let (stride, w) = every_weight(&d, key.quant.is_some(), (groups, w_stride), limits)?;
        let tile = (tile_rows as usize).min(m);
        // Each group's rows take ceil(count / tile) table rows, and every table row at least one of A's.
        let table_rows = (m.div_ceil(tile) + groups - 1).min(m);
        let key = super::gemv_for_rows(key, tile as u32, tuning);
        let key = super::fit_workgroup_memory(key, tuning.0.is_some(), limits)?;
        let grid = [self.problem.n.div_ceil(key.cols as usize), table_rows];
        let fits = |(&g, &max): (&usize, &u32)| u32::try_from(g).is_ok_and(|g| g <= max);
        if !grid.iter().zip(&limits.max_groups).all(fits) {
            return Err(Error::TooLarge(format!(
                "a grid of {grid:?} workgroups exceeds the device's {:?}",
                &limits.max_groups[..2]
            )));
        }
        let table = super::dequant::scratch_after(self.scratch_bytes, (table_rows * WORDS * 4) as u64, limits, || {
            format!("the tile table of {table_rows} rows")
        })?;
        let build = counts.table_pass(groups, (m, tile, table_rows), table, limits)?;
        // The fused column vectors hold N values per group.
        let all = Problem {
            n: self
                .problem
                .n
                .checked_mul(groups)
                .ok_or_else(|| Error::TooLarge("the groups' columns overflow".into()))?,
            ..self.problem
        };
        let vectors = fused_vectors(&all, &key.epilogue, limits)?;
        let d = self.dispatches.last_mut().expect("found above");
        d.vectors = vectors;
        d.bindings[1].1 = w;
        // Vector loads need every group's weight on 16 bytes, as the first is.
        let wide_loads = key.wide_loads && stride % VECTOR_BYTES == 0;
        d.kernel = Kernel::Gemv(crate::kernel::GemvKey {
            grouped: true,
            wide_loads,
            ..key
        });
        d.aux = Some((Operand::Scratch, table));
        d.groups[..2].copy_from_slice(&grid.map(|g| g as u32));
        d.push.b_batch_vec = stride;
        d.after_previous = true;
        self.dispatches.insert(0, build);
        self.scratch_bytes = table.bind_offset + table.bind_range;
        Ok(self)
    }
}

/// W's stride between groups in the matrix-vector dispatch `d`'s units of W (bytes on blocks,
/// 16-byte vectors on a dense weight) and its binding holding every group's weight, `groups`
/// of them `w_stride` bytes apart: the blocks' binding already holds the whole buffer (each
/// weight checked inside it); a dense weight's grows from group 0's to the last's. A typed
/// error where the stride is not a whole unit (a word on blocks) or the binding is too large.
fn every_weight(
    d: &Dispatch,
    blocks: bool,
    (groups, w_stride): (usize, usize),
    limits: &DispatchLimits,
) -> Result<(u32, Window)> {
    let (_, w) = d.bindings[1];
    // Blocks are read a word at a time, their stride in bytes; dense weights in vectors.
    let (multiple, found) = if blocks {
        let weight = u64::from(d.push.n) * u64::from(d.push.ldb_vec);
        let end = (w_stride as u64)
            .checked_mul(groups as u64 - 1)
            .and_then(|x| x.checked_add(u64::from(d.push.b_off_vec) + weight));
        let stride = u32::try_from(w_stride).ok().filter(|_| w_stride % 4 == 0);
        let inside = end.is_some_and(|e| e <= w.bind_range);
        (4, stride.filter(|_| inside).map(|s| (w, s)))
    } else {
        (VECTOR_BYTES as usize, every_dense_weight(w, (groups, w_stride), limits))
    };
    match found {
        Some((w, stride)) => Ok((stride, w)),
        None => Err(Error::TooLarge(format!(
            "{groups} weights {w_stride} bytes apart: a multiple of {multiple} bytes apart, all inside one binding of at most {} bytes",
            limits.max_range
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm::tests::{request, unlimited};
    use super::super::gemm::{GemmPlan, Kernel, SplitK};
    use super::super::passes::Window;

    /// Decode on dense weights (3 rows of A, f16 `N x K` weights of 64 x 256): the counted
    /// plan's W binding grows from group 0's weight to the last group's, the stride in 16-byte
    /// vectors; weights apart by a part of a vector, or past the device's binding, are typed
    /// errors.
    #[test]
    fn counted_decode_on_dense_weights_binds_every_group() {
        use super::DeviceCounts;
        let mut plan = GemmPlan::new(&request(3, 64, 256, 1.0, 0.0, SplitK::Slices(1)), &unlimited()).unwrap();
        let d = crate::plan::gemv_dispatch(
            &plan.problem,
            crate::config::ComponentType::F16,
            ((1.0, 0.0), crate::kernel::Epilogue::default()),
            (None, None),
            &unlimited(),
        )
        .unwrap()
        .expect("three rows take the matrix-vector kernel");
        (plan.dispatches, plan.scratch_bytes) = (vec![d], 0);
        let counts = DeviceCounts { offset: 0, stride: 1 };
        let weight = 64 * 256 * 2;
        let counted = plan
            .clone()
            .gemv_grouped_counted(5, counts, weight, (3, (None, None)), &unlimited())
            .unwrap();
        let (table, gemv) = (&counted.dispatches[0], &counted.dispatches[1]);
        assert_eq!(table.kernel, Kernel::GroupTable);
        let w0 = d.bindings[1].1;
        assert_eq!(
            gemv.bindings[1].1,
            Window {
                bind_range: w0.bind_range + 4 * weight as u64,
                ..w0
            }
        );
        // Tiles of A's three rows: at most three table rows hold any.
        assert_eq!((gemv.push.b_batch_vec, gemv.groups[1]), ((weight / 16) as u32, 3));
        // Tiles of one row: a kernel made for one row, its rows of W per workgroup the measured
        // ones for it unless set, a table row for each of A's rows.
        let ones = plan
            .clone()
            .gemv_grouped_counted(5, counts, weight, (1, (None, None)), &unlimited());
        let ones = ones.unwrap();
        let (table, gemv) = (&ones.dispatches[0], &ones.dispatches[1]);
        let Kernel::Gemv(key) = gemv.kernel else {
            panic!("{:?}", gemv.kernel)
        };
        assert_eq!((key.rows, key.cols, key.unroll, key.grouped), (1, 4, 2, true));
        assert_eq!(gemv.groups, [16, 3, 1]);
        assert_eq!((table.push.m, table.push.n, table.push.k, table.push.ldc), (3, 5, 3, 1));
        let set = plan
            .clone()
            .gemv_grouped_counted(5, counts, weight, (1, (Some(8), Some(1))), &unlimited());
        let Kernel::Gemv(key) = set.unwrap().dispatches[1].kernel else {
            panic!("not the matrix-vector kernel")
        };
        assert_eq!((key.rows, key.cols, key.unroll), (1, 8, 1));
        // A grid over the device's rows is a typed error.
        let short = super::DispatchLimits {
            max_groups: [65535, 2, 1],
            ..unlimited()
        };
        let tall = plan
            .clone()
            .gemv_grouped_counted(5, counts, weight, (1, (None, None)), &short);
        assert!(matches!(tall, Err(crate::Error::TooLarge(_))), "{tall:?}");
        let odd = plan
            .clone()
            .gemv_grouped_counted(5, counts, weight + 8, (3, (None, None)), &unlimited());
        assert!(matches!(odd, Err(crate::Error::TooLarge(_))), "{odd:?}");
        let small = super::DispatchLimits {
            max_range: 3 * weight as u64,
            ..unlimited()
        };
        let none = plan
            .clone()
            .gemv_grouped_counted(5, counts, weight, (0, (None, None)), &unlimited());
        assert!(matches!(none, Err(crate::Error::InvalidOption(_))), "{none:?}");
        let over = plan.gemv_grouped_counted(5, counts, weight, (3, (None, None)), &small);
        assert!(matches!(over, Err(crate::Error::TooLarge(_))), "{over:?}");
    }
}
