//! Matrices in device memory that a GEMM can use: vk-sgmat's own [`DeviceMatrix`], or a
//! [`BufferMatrix`] view of a buffer the caller owns.

use super::matrix::{DeviceMatrix, Element};
use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::submit::Touch;
use crate::tiling::{Layout, VECTOR_BYTES};
use ash::vk;
use std::marker::PhantomData;
use std::sync::Arc;

impl<'a> Placed<'a> {
    /// The transpose: the same memory seen the other way.
    pub(crate) fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            layout: self.layout.transposed(),
            ..self
        }
    }

    /// The buffer as a stream's ordering sees it.
    pub(crate) fn touch(&self) -> Touch<'a> {
        Touch {
            raw: self.raw,
            owned: self.owned,
        }
    }
}

mod private {
    use super::{Arc, Buffer, Layout};
    use ash::vk;

    /// A device matrix as the planner and recorder see it.
    #[derive(Copy, Clone, Debug)]
    pub struct Placed<'a> {
        pub(crate) rows: usize,
        pub(crate) cols: usize,
        pub(crate) layout: Layout,
        pub(crate) ld: usize,
        /// Bytes from the buffer's start to the first element.
        pub(crate) offset: u64,
        pub(crate) raw: vk::Buffer,
        /// vk-sgmat's buffer (kept alive and ordered between streams); `None` for the caller's.
        pub(crate) owned: Option<&'a Arc<Buffer>>,
    }

    /// Seals [`super::DeviceOperand`]: only vk-sgmat's matrix types implement it.
    pub trait Sealed {
        fn placed(&self) -> Placed<'_>;
    }
}
pub(crate) use private::Placed;

/// A matrix in device memory that GEMMs take as A, B or C: [`DeviceMatrix`] or [`BufferMatrix`].
pub trait DeviceOperand<T: Element>: private::Sealed {}

impl<T: Element> private::Sealed for DeviceMatrix<T> {
    fn placed(&self) -> Placed<'_> {
        Placed {
            rows: self.rows,
            cols: self.cols,
            layout: self.layout,
            ld: self.ld,
            offset: 0,
            raw: self.buffer.raw(),
            owned: Some(&self.buffer),
        }
    }
}
impl<T: Element> DeviceOperand<T> for DeviceMatrix<T> {}

impl<T: Element> private::Sealed for BufferMatrix<T> {
    fn placed(&self) -> Placed<'_> {
        Placed {
            rows: self.rows,
            cols: self.cols,
            layout: self.layout,
            ld: self.ld,
            offset: self.offset,
            raw: self.buffer,
            owned: None,
        }
    }
}
impl<T: Element> DeviceOperand<T> for BufferMatrix<T> {}

pub(crate) fn placed<T: Element>(m: &impl DeviceOperand<T>) -> Placed<'_> {
    private::Sealed::placed(m)
}

/// A matrix in a `VkBuffer` the caller owns: `rows x cols` elements of `T` stored `layout` with
/// leading dimension `ld`, starting `offset` bytes into the buffer. Usable wherever a
/// [`DeviceMatrix`] is (the caller keeps the buffer alive and orders other work on it).
///
/// Bind large buffers at 2 MiB-aligned offsets of their memory, as vk-sgmat binds its own: on
/// an H200 a GEMM whose operands started elsewhere in a shared allocation ran 7-27% slower
/// (docs/perf/JOURNAL.md, "Buffers on 2 MiB boundaries").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BufferMatrix<T: Element> {
    buffer: vk::Buffer,
    offset: u64,
    rows: usize,
    cols: usize,
    layout: Layout,
    ld: usize,
    _t: PhantomData<T>,
}

impl<T: Element> BufferMatrix<T> {
    /// A view of `buffer` (of `size` bytes, created with `STORAGE_BUFFER` usage, plus
    /// `TRANSFER_DST` for a C that [`ContextOptions::poison_outputs`](crate::ContextOptions)
    /// fills). Checked: `ld` at least the contiguous extent, `offset` and `ld` in bytes multiples
    /// of 16 (the kernels load 16-byte vectors), and the matrix inside `size` bytes, padding
    /// included. A typed error names what is wrong.
    ///
    /// # Safety
    /// `buffer` must be a valid buffer of the context's device, at least `size` bytes, bound to
    /// memory. As for vk-sgmat's own matrices, where a row (or column, for column-major) is not a
    /// whole number of 16-byte vectors, the elements between it and `ld` must be zero when the
    /// matrix is read as A or B: the kernels read whole vectors and rely on the zeros for K.
    pub unsafe fn new(
        buffer: vk::Buffer,
        size: u64,
        offset: u64,
        (rows, cols): (usize, usize),
        layout: Layout,
        ld: usize,
    ) -> Result<Self> {
        let es = size_of::<T>();
        let (outer, inner) = layout.outer_inner(rows, cols);
        if rows == 0 || cols == 0 {
            return Err(Error::ZeroSize { m: rows, n: cols, k: 0 });
        }
        if ld < inner {
            return Err(Error::BadLeadingDimension {
                matrix: "buffer matrix",
                ld,
                min: inner,
            });
        }
        let vec = u64::from(VECTOR_BYTES);
        let pitch = (ld as u64).checked_mul(es as u64);
        if offset % vec != 0 || pitch.is_none_or(|p| p % vec != 0) {
            return Err(Error::InvalidOperand(format!(
                "a buffer matrix needs its offset ({offset}) and leading dimension in bytes ({ld} x {es}) to be multiples of {vec}"
            )));
        }
        let end = pitch
            .and_then(|p| p.checked_mul(outer as u64))
            .and_then(|b| b.checked_add(offset));
        match end {
            Some(end) if end <= size => {}
            _ => {
                return Err(Error::TooLarge(format!(
                    "a {rows}x{cols} matrix with leading dimension {ld} at offset {offset} needs more than the buffer's {size} bytes"
                )))
            }
        }
        Ok(Self {
            buffer,
            offset,
            rows,
            cols,
            layout,
            ld,
            _t: PhantomData,
        })
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
}
