//! How host operands are stored on the device: [`Stored`] packs a host batch into vk-sgmat's
//! layout (each entry's rows padded to 16 bytes, entries back to back), and [`piece_bytes`] sizes
//! the copies a piece of a host GEMM needs (`crate::plan::cut`).

use super::batch::BatchRef;
use super::matrix::{pack, Element};
use super::operand::Placed;
use crate::plan::{device_ld, Piece};
use crate::tiling::Layout;

/// The bytes of a piece's device copies of A, B and C, stored `layouts`: every entry of the
/// piece, or one of an operand `shared` by all (stride 0).
pub(crate) fn piece_bytes(es: [usize; 3], layouts: [Layout; 3], shared: [bool; 2]) -> impl Fn(&Piece) -> [u64; 3] {
    move |p| {
        let entries = |shared| if shared { 1 } else { p.entries.len() };
        let stored = |(rows, cols), i: usize, n| Stored::new(rows, cols, layouts[i], es[i], n).bytes();
        let (r, c, k) = (p.rows.len(), p.cols.len(), p.k.len());
        [
            stored((r, k), 0, entries(shared[0])),
            stored((k, c), 1, entries(shared[1])),
            stored((r, c), 2, p.entries.len()),
        ]
    }
}

/// How a host batch is stored on the device: each stored entry (one if shared) in vk-sgmat's
/// layout, back to back.
pub(crate) struct Stored {
    outer: usize,
    pub(crate) ld: usize,
    entries: usize,
    es: usize,
}

impl Stored {
    pub(crate) fn of<T>(b: &BatchRef<'_, T>) -> Self {
        let m = &b.matrix;
        let entries = if b.stride == 0 { 1 } else { b.count };
        Self::new(m.rows, m.cols, m.layout, size_of::<T>(), entries)
    }

    /// `entries` stored `rows x cols` entries of `es` bytes.
    pub(crate) fn new(rows: usize, cols: usize, layout: Layout, es: usize, entries: usize) -> Self {
        let (outer, inner) = layout.outer_inner(rows, cols);
        Self {
            outer,
            ld: device_ld(inner, es),
            entries,
            es,
        }
    }

    /// Elements between stored entries (0: shared).
    pub(crate) fn stride(&self) -> usize {
        if self.entries == 1 {
            0
        } else {
            self.outer * self.ld
        }
    }

    pub(crate) fn entry_bytes(&self) -> usize {
        self.outer * self.ld * self.es
    }

    pub(crate) fn bytes(&self) -> u64 {
        (self.entries * self.entry_bytes()) as u64
    }

    /// Entry 0 as the planner sees it.
    pub(crate) fn placed<'a, T>(&self, b: &BatchRef<'_, T>) -> Placed<'a> {
        Placed {
            rows: b.matrix.rows,
            cols: b.matrix.cols,
            layout: b.matrix.layout,
            ld: self.ld,
            offset: 0,
            raw: ash::vk::Buffer::null(),
            owned: None,
        }
    }

    pub(crate) fn pack<T: Element>(&self, b: &BatchRef<'_, T>, out: &mut [u8]) {
        for (i, chunk) in out.chunks_mut(self.entry_bytes()).take(self.entries).enumerate() {
            pack(&b.entry(i), self.ld, chunk);
        }
    }
}
