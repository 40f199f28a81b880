//! Host GEMMs, one or a strided batch: uploaded into pooled staging, run as one dispatch (the
//! entries in the grid's z), downloaded, all in one submission; cut into pieces where a copy
//! would pass the allocation limit. Also uploads of host batches into [`DeviceBatch`]es.

use super::batch::{check_batch, BatchMut, BatchRef, DeviceBatch};
use super::context::Context;
use super::fused::Fused;
use super::matrix::{unpack, Element, MatMut};
use super::operand::Placed;
use super::options::GemmOptions;
use super::stored::{piece_bytes, Stored};
use crate::error::{Error, Result};
use crate::memory::{Buffer, BufferKind};
use crate::plan::cut::cut;
use crate::plan::Piece;
use crate::plan::{check_shapes, disjoint, Batch};
use crate::record::Access;
use crate::submit::{StreamCore, Touch};
use crate::tiling::Layout;

impl Context {
    /// [`Context::run`] on host batches (one GEMM is a batch of one), with a fused epilogue's terms where `fused` is `Some` (its
    /// vectors shared by every entry).
    pub(crate) fn batched<TA: Element, TB: Element, TC: Element>(
        &self,
        a: BatchRef<'_, TA>,
        b: BatchRef<'_, TB>,
        mut c: BatchMut<'_, TC>,
        options: &GemmOptions,
        fused: Option<Fused<'_>>,
    ) -> Result<()> {
        check_batch("A", &a)?;
        check_batch("B", &b)?;
        check_batch("C", &c.as_ref())?;
        if (a.count, b.count) != (c.count, c.count) {
            return Err(Error::ShapeMismatch(format!(
                "batches of {} A, {} B and {} C entries: the counts must agree",
                a.count, b.count, c.count
            )));
        }
        let cm = &c.matrix;
        // Checked in the caller's terms, before a column-major C turns the problem around, and
        // before the entries' overlap (entries of 0 rows are a zero-size GEMM, not an overlap).
        check_shapes(
            (a.matrix.rows, a.matrix.cols),
            (b.matrix.rows, b.matrix.cols),
            (cm.rows, cm.cols),
        )?;
        if !disjoint(c.count, c.stride, cm.layout.outer_inner(cm.rows, cm.cols), cm.ld) {
            return Err(Error::InvalidOperand(format!(
                "batch C: {} entries of {}x{} (ld {}) overlap at a stride of {}",
                c.count, cm.rows, cm.cols, cm.ld, c.stride
            )));
        }
        if cm.layout == Layout::ColMajor {
            // A column-major C is a row-major C^T = B^T A^T over the same memory.
            return self.batched(b.t(), a.t(), c.t(), options, fused.map(Fused::transposed));
        }
        if let Some(f) = &fused {
            // Checked whole, before any piece runs.
            self.fused_terms(f, (cm.rows, cm.cols), [TA::TYPE, TB::TYPE, TC::TYPE])?;
        }
        // Operands too large for one allocation run in pieces (rows and columns of C, K
        // where one row is too long and no activation needs the whole sum), each an ordinary
        // GEMM of the pieces' blocks.
        let shape = (cm.rows, cm.cols, a.matrix.cols);
        let pieces = self.cut_host::<TA, TB, TC>(
            (c.count, shape),
            [a.matrix.layout, b.matrix.layout],
            [a.stride == 0, b.stride == 0],
            fused.is_none(),
        )?;
        if let [_] = pieces[..] {
            return self.batched_whole(a, b, c, options, fused.as_ref());
        }
        for p in pieces {
            let accumulate = GemmOptions {
                beta: 1.0,
                ..options.clone()
            };
            let fused = fused.map(|f| f.piece(&p.rows, &p.cols)).transpose()?;
            self.batched_whole(
                a.piece(p.entries.clone(), p.rows.clone(), p.k.clone()),
                b.piece(p.entries.clone(), p.k.clone(), p.cols.clone()),
                c.piece(p.entries.clone(), p.rows.clone(), p.cols.clone()),
                if p.accumulates() { &accumulate } else { options },
                fused.as_ref(),
            )?;
        }
        Ok(())
    }

    /// The pieces [`Context::run`] runs a host `m x n x k` GEMM of these types in, A, B
    /// and C stored `layouts`: one, the whole, where every operand's device copy fits the
    /// allocation limit ([`DispatchLimits::max_allocation`](crate::plan::DispatchLimits)).
    pub fn host_pieces<TA: Element, TB: Element, TC: Element>(
        &self,
        (m, n, k): (usize, usize, usize),
        [la, lb, lc]: [Layout; 3],
    ) -> Result<Vec<Piece>> {
        if lc == Layout::ColMajor {
            // As the host batched path runs it: the row-major C^T = B^T A^T, its pieces turned back.
            let t = [lb.transposed(), la.transposed(), Layout::RowMajor];
            let pieces = self.host_pieces::<TB, TA, TC>((n, m, k), t)?;
            return Ok(pieces
                .into_iter()
                .map(|p| Piece {
                    rows: p.cols,
                    cols: p.rows,
                    ..p
                })
                .collect());
        }
        check_shapes((m, k), (k, n), (m, n))?;
        self.cut_host::<TA, TB, TC>((1, (m, n, k)), [la, lb], [false; 2], true)
    }

    /// The pieces of `count` host GEMMs of `shape` with A and B stored `layouts` (C row-major),
    /// an operand `shared` by every entry stored once, K cut only where `k_ok`: `[whole]` where
    /// every copy fits.
    fn cut_host<TA: Element, TB: Element, TC: Element>(
        &self,
        (count, (m, n, k)): (usize, (usize, usize, usize)),
        [la, lb]: [Layout; 2],
        shared: [bool; 2],
        k_ok: bool,
    ) -> Result<Vec<Piece>> {
        let es = [size_of::<TA>(), size_of::<TB>(), size_of::<TC>()];
        let bytes = piece_bytes(es, [la, lb, Layout::RowMajor], shared);
        cut(Piece::whole(count, m, n, k), self.limits.max_allocation, k_ok, bytes)
    }

    /// [`Context::batched`] on checked batches, C row-major, in one submission.
    fn batched_whole<TA: Element, TB: Element, TC: Element>(
        &self,
        a: BatchRef<'_, TA>,
        b: BatchRef<'_, TB>,
        mut c: BatchMut<'_, TC>,
        options: &GemmOptions,
        fused: Option<&Fused<'_>>,
    ) -> Result<()> {
        // Device copies: each stored entry in vk-sgmat's layout, back to back; a shared operand
        // once.
        let (a_dev, b_dev) = (Stored::of(&a), Stored::of(&b));
        let c_dev = Stored::of(&c.as_ref());
        let batch = Batch {
            count: c.count,
            strides: [a_dev.stride(), b_dev.stride(), c_dev.stride()],
        };
        let (pa, pb, pc) = (a_dev.placed(&a), b_dev.placed(&b), c_dev.placed(&c.as_ref()));
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let terms = fused
            .map(|f| self.fused_terms(f, (pc.rows, pc.cols), types))
            .transpose()?;
        let plan = self.plan_fused(pa, pb, pc, types, batch, options, terms)?;

        // Everything is validated; now move data and run, in one submission.
        let bytes = [a_dev.bytes(), b_dev.bytes(), c_dev.bytes()];
        let take = |bytes| self.pool.take(bytes, BufferKind::Storage);
        let (a_buf, b_buf, c_buf) = (take(bytes[0])?, take(bytes[1])?, take(bytes[2])?);
        let down = self.pool.take(bytes[2], BufferKind::Readback)?;
        let at = |p: Placed<'_>, buf: &Buffer| Placed {
            raw: buf.raw(),
            offset: 0,
            owned: None,
            ..p
        };
        let operands = plan.bind_order([at(pa, &a_buf), at(pb, &b_buf), at(pc, &c_buf)]);
        let result = self.run_blocking(|core| {
            let written = [&a_buf, &b_buf, &c_buf].map(|b| b.raw());
            core.access(&[], &written.map(Touch::unowned))?;
            core.upload(a_buf.raw(), 0, bytes[0], |out| a_dev.pack(&a, out))?;
            core.upload(b_buf.raw(), 0, bytes[1], |out| b_dev.pack(&b, out))?;
            if plan.reads_c {
                core.upload(c_buf.raw(), 0, bytes[2], |out| c_dev.pack(&c.as_ref(), out))?;
            }
            match fused {
                Some(f) => self.enqueue_fused(core, &plan, operands, f, TC::TYPE)?,
                None => self.enqueue_plan(core, &plan, operands, TC::TYPE)?,
            }
            core.access(&[Touch::unowned(c_buf.raw())], &[])?;
            let mut rec = core.recording()?;
            rec.copy(c_buf.raw(), down.raw(), bytes[2]);
            rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
            Ok(())
        });
        if result.is_ok() {
            let mapped = down.mapped()?;
            for (i, src) in mapped.chunks(c_dev.entry_bytes()).take(c.count).enumerate() {
                // Entries may interleave (side by side in C's rows): one at a time.
                let m = &mut c.matrix;
                let out = MatMut {
                    data: &mut m.data[i * c.stride..],
                    rows: m.rows,
                    cols: m.cols,
                    ld: m.ld,
                    layout: m.layout,
                };
                unpack(src, c_dev.ld, out);
            }
        }
        for buf in [a_buf, b_buf, c_buf, down] {
            self.pool.give(buf);
        }
        result
    }

    /// Uploads a host batch into a [`DeviceBatch`] (entries back to back, each in vk-sgmat's
    /// layout; a stride of 0 uploads `count` copies).
    pub fn upload_batch<T: Element>(&self, b: BatchRef<'_, T>) -> Result<DeviceBatch<T>> {
        let (storage, stored) = self.alloc_batch(&b, false)?;
        self.run_blocking(|core| self.enqueue_upload_batch(core, &b, &storage, &stored))?;
        Ok(storage)
    }

    /// A device batch for the entries of `b` (contents undefined), and how `b` packs into it.
    /// `pooled`: the storage comes from the pool, for work whose stream holds it as pooled.
    pub(crate) fn alloc_batch<T: Element>(
        &self,
        b: &BatchRef<'_, T>,
        pooled: bool,
    ) -> Result<(DeviceBatch<T>, Stored)> {
        check_batch("batch", b)?;
        let m = &b.matrix;
        if m.rows == 0 || m.cols == 0 {
            return Err(Error::ZeroSize {
                m: m.rows,
                n: m.cols,
                k: 0,
            });
        }
        let (outer, _) = m.layout.outer_inner(m.rows, m.cols);
        let stacked = b
            .count
            .checked_mul(outer)
            .ok_or_else(|| Error::TooLarge(format!("{} entries of {outer} rows overflow", b.count)))?;
        let (rows, cols) = match m.layout {
            Layout::RowMajor => (stacked, m.cols),
            Layout::ColMajor => (m.rows, stacked),
        };
        let storage = match pooled {
            true => self.pooled_matrix::<T>(rows, cols, m.layout)?,
            false => self.alloc_matrix::<T>(rows, cols, m.layout)?,
        };
        // Every entry stored, a shared one too.
        let stored = Stored::new(m.rows, m.cols, m.layout, size_of::<T>(), b.count);
        Ok((DeviceBatch::from_matrix(storage, b.count)?, stored))
    }

    /// Records the upload of `b` into `dst` (from [`Context::alloc_batch`]) on `core`.
    pub(crate) fn enqueue_upload_batch<T: Element>(
        &self,
        core: &mut StreamCore,
        b: &BatchRef<'_, T>,
        dst: &DeviceBatch<T>,
        stored: &Stored,
    ) -> Result<()> {
        let buffer = &dst.matrix().buffer;
        core.access(&[], &[buffer.into()])?;
        core.upload(buffer.raw(), 0, stored.bytes(), |out| stored.pack(b, out))
    }

    /// A zero batch of `count` row-major `rows x cols` matrices (for C).
    pub fn zeros_batch<T: Element>(&self, count: usize, rows: usize, cols: usize) -> Result<DeviceBatch<T>> {
        let total = count
            .checked_mul(rows)
            .ok_or_else(|| Error::TooLarge(format!("{count} entries of {rows} rows overflow")))?;
        DeviceBatch::from_matrix(self.zeros::<T>(total, cols)?, count)
    }
}
