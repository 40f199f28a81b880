//! Strided batches, the data: many GEMMs of one shape, their entries in the grid's z
//! (attention's heads; a stride of 0 shares one operand, e.g. a weight, across the batch).
//! Host views ([`BatchRef`], [`BatchMut`]) and device batches ([`DeviceBatch`]); the host
//! path that runs them is `batched.rs`.

use super::matrix::{check_matrix, DeviceMatrix, Element, MatMut, MatRef};
use super::operand::Placed;
use crate::error::{Error, Result};
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
    pub(crate) fn piece(&self, entries: Range<usize>, rows: Range<usize>, cols: Range<usize>) -> Self {
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

    pub(crate) fn as_ref(&self) -> BatchRef<'_, T> {
        BatchRef::strided(self.matrix.as_ref(), self.count, self.stride)
    }

    /// [`BatchRef::piece`], writable.
    pub(crate) fn piece(&mut self, entries: Range<usize>, rows: Range<usize>, cols: Range<usize>) -> BatchMut<'_, T> {
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
/// [`Context::upload_batch`](crate::Context::upload_batch), [`Context::zeros_batch`](crate::Context::zeros_batch) or
/// [`DeviceBatch::from_matrix`].
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

    /// Entry 0 as the planner sees it, the count, and the stride in elements from one entry to
    /// the next.
    pub(crate) fn entries(&self) -> (Placed<'_>, Option<usize>, usize) {
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
