//! Strided batches: many GEMMs of one shape in one dispatch, their entries in the grid's z
//! (attention's heads; a stride of 0 shares one operand, e.g. a weight, across the batch).
//! Host views ([`BatchRef`], [`BatchMut`]), device batches ([`DeviceBatch`]), and the calls.

use super::context::Context;
use super::fused::Fused;
use super::matrix::{check_matrix, unpack, DeviceMatrix, Element, MatMut, MatRef};
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
use std::ops::Range;

/// A strided batch of host matrices: `count` entries with `matrix`'s shape, storage order and
/// leading dimension, entry `i` starting `i * stride` elements into `matrix.data` (a stride of
/// 0 gives every entry the same matrix).
#[derive(Copy, Clone, Debug)]
pub struct BatchRef<'a, T> {
    /// Entry 0's shape, layout and leading dimension, over the slice that holds every entry.
    pub matrix: MatRef<'a, T>,
    /// Number of entries.
    pub count: usize,
    /// Elements from one entry to the next.
    pub stride: usize,
}

impl<'a, T> BatchRef<'a, T> {
    /// `count` dense row-major `rows x cols` matrices back to back in `data` (a `[count][rows][cols]`
    /// array).
    pub fn new(data: &'a [T], count: usize, rows: usize, cols: usize) -> Self {
        // Saturated, an impossible size fails the checks as too large (no overflow panic).
        Self::strided(MatRef::new(data, rows, cols), count, rows.saturating_mul(cols))
    }

    /// `count` entries like `matrix`, `stride` elements apart.
    pub fn strided(matrix: MatRef<'a, T>, count: usize, stride: usize) -> Self {
        Self { matrix, count, stride }
    }

    /// One matrix for every one of `count` entries (stride 0).
    pub fn broadcast(matrix: MatRef<'a, T>, count: usize) -> Self {
        Self::strided(matrix, count, 0)
    }

    /// The transpose of every entry (no copy).
    pub fn t(self) -> Self {
        Self {
            matrix: self.matrix.t(),
            ..self
        }
    }

    /// Entry `i` (of a checked batch).
    pub(crate) fn entry(&self, i: usize) -> MatRef<'a, T> {
        MatRef {
            data: &self.matrix.data[i * self.stride..],
            ..self.matrix
        }
    }

    /// The block `rows x cols` of entries `entries` (of a checked batch; no copy).
    fn piece(&self, entries: Range<usize>, rows: Range<usize>, cols: Range<usize>) -> Self {
        Self {
            matrix: self.entry(entries.start).block(rows, cols),
            count: entries.len(),
            stride: self.stride,
        }
    }
}

/// A strided batch of writable host matrices (C): as [`BatchRef`], with entries that never
/// overlap.
#[derive(Debug)]
pub struct BatchMut<'a, T> {
    /// Entry 0's shape, layout and leading dimension, over the slice that holds every entry.
    pub matrix: MatMut<'a, T>,
    /// Number of entries.
    pub count: usize,
    /// Elements from one entry to the next.
    pub stride: usize,
}

impl<'a, T> BatchMut<'a, T> {
    /// `count` dense row-major `rows x cols` matrices back to back in `data`.
    pub fn new(data: &'a mut [T], count: usize, rows: usize, cols: usize) -> Self {
        Self::strided(MatMut::new(data, rows, cols), count, rows.saturating_mul(cols))
    }

    /// `count` entries like `matrix`, `stride` elements apart.
    pub fn strided(matrix: MatMut<'a, T>, count: usize, stride: usize) -> Self {
        Self { matrix, count, stride }
    }

    /// The transpose of every entry (no copy).
    pub fn t(self) -> Self {
        Self {
            matrix: self.matrix.t(),
            ..self
        }
    }

    fn as_ref(&self) -> BatchRef<'_, T> {
        BatchRef::strided(self.matrix.as_ref(), self.count, self.stride)
    }

    /// [`BatchRef::piece`], writable.
    fn piece(&mut self, entries: Range<usize>, rows: Range<usize>, cols: Range<usize>) -> BatchMut<'_, T> {
        let mut entry = self.matrix.reborrow();
        entry.data = &mut entry.data[entries.start * self.stride..];
        BatchMut {
            matrix: entry.block(rows, cols),
            count: entries.len(),
            stride: self.stride,
        }
    }
}

/// Checks a host batch: at least one entry, and entries 0 and `count - 1` inside the slice.
pub(crate) fn check_batch<T>(name: &'static str, b: &BatchRef<'_, T>) -> Result<()> {
    if b.count == 0 {
        return Err(Error::InvalidOperand(format!(
            "batch {name}: the count must be at least 1"
        )));
    }
    check_matrix(name, &b.matrix)?;
    let last = (b.count - 1)
        .checked_mul(b.stride)
        .ok_or_else(|| Error::TooLarge(format!("batch {name}: {} entries {} apart overflow", b.count, b.stride)))?;
    let len = b.matrix.data.len();
    if last > len {
        return Err(Error::ShortSlice {
            matrix: name,
            needed: last,
            got: len,
        });
    }
    check_matrix(
        name,
        &MatRef {
            data: &b.matrix.data[last..],
            ..b.matrix
        },
    )
    .map_err(|e| match e {
        Error::ShortSlice { matrix, needed, .. } => Error::ShortSlice {
            matrix,
            needed: needed + last,
            got: len,
        },
        e => e,
    })
}

/// `count` matrices of one shape in one device buffer, back to back along the storage's outer
/// dimension: a row-major batch of `rows x cols` entries is stored as one `(count * rows) x cols`
/// [`DeviceMatrix`], a column-major one as `rows x (count * cols)`. Create with
/// [`Context::upload_batch`], [`Context::zeros_batch`] or [`DeviceBatch::from_matrix`].
#[derive(Debug)]
pub struct DeviceBatch<T: Element> {
    storage: DeviceMatrix<T>,
    count: usize,
    rows: usize,
    cols: usize,
}

impl<T: Element> DeviceBatch<T> {
    /// Views a device matrix as `count` entries, cutting its outer dimension (rows if
    /// row-major, columns if column-major) into equal parts.
    pub fn from_matrix(storage: DeviceMatrix<T>, count: usize) -> Result<Self> {
        let (rows, cols) = (storage.rows, storage.cols);
        let outer = storage.layout.outer_inner(rows, cols).0;
        if count == 0 || outer % count != 0 {
            return Err(Error::InvalidOperand(format!(
                "a {rows}x{cols} {:?} matrix does not cut into {count} equal entries along its outer dimension ({outer})",
                storage.layout
            )));
        }
        let (rows, cols) = match storage.layout {
            Layout::RowMajor => (rows / count, cols),
            Layout::ColMajor => (rows, cols / count),
        };
        Ok(Self {
            storage,
            count,
            rows,
            cols,
        })
    }

    /// The stacked storage: every entry, as one matrix (to download, or to use as one operand).
    pub fn matrix(&self) -> &DeviceMatrix<T> {
        &self.storage
    }

    /// The stacked storage, by value.
    pub fn into_matrix(self) -> DeviceMatrix<T> {
        self.storage
    }

    /// Number of entries.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Rows of each entry.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns of each entry.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Each entry's storage order.
    pub fn layout(&self) -> Layout {
        self.storage.layout
    }
}

mod private {
    use super::{Element, Placed};

    /// Seals [`super::BatchOperand`].
    pub trait Sealed<T: Element> {
        /// Entry 0, the count (`None`: one matrix for any count) and the stride in elements.
        fn entries(&self) -> (Placed<'_>, Option<usize>, usize);
    }
}

/// What a batched GEMM takes as A or B: a [`DeviceBatch`], or one [`DeviceMatrix`] that every
/// entry shares (e.g. a weight).
pub trait BatchOperand<T: Element>: private::Sealed<T> {}

impl<T: Element> private::Sealed<T> for DeviceBatch<T> {
    fn entries(&self) -> (Placed<'_>, Option<usize>, usize) {
        let whole = super::operand::placed(&self.storage);
        let stride = self.storage.layout.outer_inner(self.rows, self.cols).0 * self.storage.ld;
        let entry = Placed {
            rows: self.rows,
            cols: self.cols,
            ..whole
        };
        (entry, Some(self.count), stride)
    }
}
impl<T: Element> BatchOperand<T> for DeviceBatch<T> {}

impl<T: Element> private::Sealed<T> for DeviceMatrix<T> {
    fn entries(&self) -> (Placed<'_>, Option<usize>, usize) {
        (super::operand::placed(self), None, 0)
    }
}
impl<T: Element> BatchOperand<T> for DeviceMatrix<T> {}

/// A batch operand's entry 0, count and stride (see the sealed trait).
pub(crate) fn entries<T: Element>(b: &impl BatchOperand<T>) -> (Placed<'_>, Option<usize>, usize) {
    private::Sealed::entries(b)
}

impl Context {
    /// [`Context::run`] on host batches, with a fused epilogue's terms where `fused` is `Some` (its
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
            // As `gemm_batched` runs it: the row-major C^T = B^T A^T, its pieces turned back.
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
        let (storage, stored) = self.alloc_batch(&b)?;
        self.run_blocking(|core| self.enqueue_upload_batch(core, &b, &storage, &stored))?;
        Ok(storage)
    }

    /// A device batch for the entries of `b` (contents undefined), and how `b` packs into it.
    pub(crate) fn alloc_batch<T: Element>(&self, b: &BatchRef<'_, T>) -> Result<(DeviceBatch<T>, Stored)> {
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
        let storage = match m.layout {
            Layout::RowMajor => self.alloc_matrix::<T>(stacked, m.cols, m.layout)?,
            Layout::ColMajor => self.alloc_matrix::<T>(m.rows, stacked, m.layout)?,
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
        let buffer = &dst.storage.buffer;
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
