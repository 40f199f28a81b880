//! Host and device matrices: the element types, borrowed host views ([`MatRef`], [`MatMut`]),
//! [`DeviceMatrix`], and the packing between host layout and device layout.

use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::tiling::Layout;
use half::{bf16, f16};
use std::marker::PhantomData;

mod sealed {
    pub trait Sealed {}
}

/// An element type vk-sgmat can move to and from the GPU.
pub trait Element: bytemuck::Pod + Send + Sync + sealed::Sealed + PartialEq + std::fmt::Debug {
    /// The matching component type.
    const TYPE: ComponentType;
    /// Exact conversion to f64.
    fn to_f64(self) -> f64;
    /// Conversion from f64 (rounding to nearest for floats, truncation toward zero for integers).
    fn from_f64(v: f64) -> Self;
}

macro_rules! element {
    ($t:ty, $ct:ident, |$x:ident| $to:expr, |$v:ident| $from:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const TYPE: ComponentType = ComponentType::$ct;
            fn to_f64(self) -> f64 {
                let $x = self;
                $to
            }
            fn from_f64($v: f64) -> Self {
                $from
            }
        }
    };
}
element!(f16, F16, |x| x.to_f64(), |v| f16::from_f64(v));
element!(bf16, Bf16, |x| x.to_f64(), |v| bf16::from_f64(v));
element!(f32, F32, |x| f64::from(x), |v| v as f32);
element!(i8, I8, |x| f64::from(x), |v| v as i8);
element!(u8, U8, |x| f64::from(x), |v| v as u8);
element!(i32, I32, |x| f64::from(x), |v| v as i32);
element!(u32, U32, |x| f64::from(x), |v| v as u32);

/// A read-only host matrix: a slice, its shape, storage order and leading dimension.
#[derive(Copy, Clone, Debug)]
pub struct MatRef<'a, T> {
    /// The elements.
    pub data: &'a [T],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Storage order.
    pub layout: Layout,
    /// Leading dimension: distance between consecutive rows (row-major) or columns (column-major).
    pub ld: usize,
}

impl<'a, T> MatRef<'a, T> {
    /// A dense row-major matrix (ld = cols).
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            layout: Layout::RowMajor,
            ld: cols,
        }
    }

    /// A dense column-major matrix (ld = rows).
    pub fn col_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            layout: Layout::ColMajor,
            ld: rows,
        }
    }

    /// A matrix stored `layout` with leading dimension `ld`.
    pub fn stored(data: &'a [T], rows: usize, cols: usize, layout: Layout, ld: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            layout,
            ld,
        }
    }

    /// Sets the leading dimension.
    pub fn with_ld(self, ld: usize) -> Self {
        Self { ld, ..self }
    }

    /// The transpose: the same elements seen the other way (no copy).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            layout: self.layout.transposed(),
            ..self
        }
    }

    /// Index of element (r, c) in `data`.
    pub fn index(&self, r: usize, c: usize) -> usize {
        match self.layout {
            Layout::RowMajor => r * self.ld + c,
            Layout::ColMajor => c * self.ld + r,
        }
    }

    /// The block `rows x cols` of a checked matrix (no copy); both ranges non-empty and inside.
    pub(crate) fn block(self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> Self {
        debug_assert!(rows.end <= self.rows && cols.end <= self.cols && !rows.is_empty() && !cols.is_empty());
        Self {
            data: &self.data[self.index(rows.start, cols.start)..],
            rows: rows.len(),
            cols: cols.len(),
            ..self
        }
    }
}

/// A writable host matrix (C): row-major (the default) or column-major, with a leading dimension.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    /// The elements.
    pub data: &'a mut [T],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Leading dimension: distance between consecutive rows (row-major) or columns
    /// (column-major).
    pub ld: usize,
    /// Storage order.
    pub layout: Layout,
}

impl<'a, T> MatMut<'a, T> {
    /// A dense row-major matrix (ld = cols).
    pub fn new(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            ld: cols,
            layout: Layout::RowMajor,
        }
    }

    /// A dense column-major matrix (ld = rows).
    pub fn col_major(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        Self {
            data,
            rows,
            cols,
            ld: rows,
            layout: Layout::ColMajor,
        }
    }

    /// Sets the leading dimension.
    pub fn with_ld(self, ld: usize) -> Self {
        Self { ld, ..self }
    }

    /// The transpose: the same elements seen the other way (no copy).
    pub fn t(self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            layout: self.layout.transposed(),
            ..self
        }
    }

    /// The block `rows x cols` of a checked matrix (see [`MatRef::block`]).
    pub(crate) fn block(self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> Self {
        let offset = self.as_ref().index(rows.start, cols.start);
        Self {
            data: &mut self.data[offset..],
            rows: rows.len(),
            cols: cols.len(),
            ..self
        }
    }

    /// The same matrix, borrowed for a shorter time.
    pub(crate) fn reborrow(&mut self) -> MatMut<'_, T> {
        MatMut {
            data: self.data,
            rows: self.rows,
            cols: self.cols,
            ld: self.ld,
            layout: self.layout,
        }
    }

    pub(crate) fn as_ref(&self) -> MatRef<'_, T> {
        MatRef {
            data: self.data,
            rows: self.rows,
            cols: self.cols,
            layout: self.layout,
            ld: self.ld,
        }
    }
}

/// A matrix in device memory, in vk-sgmat's layout: the caller's storage order, leading dimension
/// padded to 16 bytes, padding zero. Create with [`Context::upload`](crate::Context::upload) or [`Context::zeros`](crate::Context::zeros).
pub struct DeviceMatrix<T: Element> {
    pub(crate) buffer: std::sync::Arc<Buffer>,
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) layout: Layout,
    pub(crate) ld: usize,
    pub(crate) _t: PhantomData<T>,
}

impl<T: Element> DeviceMatrix<T> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Storage order.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Padded leading dimension in elements.
    pub fn ld(&self) -> usize {
        self.ld
    }
}

impl<T: Element> std::fmt::Debug for DeviceMatrix<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceMatrix<{}>({}x{}, {:?}, ld {})",
            T::TYPE,
            self.rows,
            self.cols,
            self.layout,
            self.ld
        )
    }
}

/// The 32-bit pattern C is poisoned with: NaN for floats, 2^31-1 for integers.
pub(crate) fn poison_pattern(t: ComponentType) -> u32 {
    if t.is_float() {
        u32::MAX // NaN in f32 and in both f16 halves
    } else {
        0x7fff_ffff
    }
}

/// Checks a host matrix that receives a device matrix's elements in their stored order: row-major,
/// `stored` = (outer, inner) extents, its slice long enough.
pub(crate) fn check_download_target<T>(stored: (usize, usize), out: &MatMut<'_, T>) -> Result<()> {
    let (outer, inner) = stored;
    let (oo, oi) = (out.rows, out.cols);
    if (oo, oi) != (outer, inner) {
        return Err(Error::ShapeMismatch(format!(
            "download target is {oo}x{oi}, the device matrix stores {outer}x{inner}"
        )));
    }
    if out.layout != Layout::RowMajor {
        return Err(Error::InvalidOperand(
            "a download target is row-major: it receives the device matrix's storage order".into(),
        ));
    }
    check_matrix("download target", &out.as_ref())
}

/// Checks a host matrix's slice against its shape and leading dimension.
pub(crate) fn check_matrix<T>(name: &'static str, m: &MatRef<'_, T>) -> Result<()> {
    let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
    if m.rows == 0 || m.cols == 0 {
        return Ok(()); // the GEMM's own check names M, N, K
    }
    if m.ld < inner {
        return Err(Error::BadLeadingDimension {
            matrix: name,
            ld: m.ld,
            min: inner,
        });
    }
    let needed = (outer - 1)
        .checked_mul(m.ld)
        .and_then(|v| v.checked_add(inner))
        .ok_or_else(|| Error::TooLarge(format!("matrix {name}: {outer} x ld {} overflows", m.ld)))?;
    if m.data.len() < needed {
        return Err(Error::ShortSlice {
            matrix: name,
            needed,
            got: m.data.len(),
        });
    }
    Ok(())
}

pub(crate) fn bytes_of_layout(rows: usize, cols: usize, layout: Layout, ld: usize, es: usize) -> u64 {
    let (outer, _) = layout.outer_inner(rows, cols);
    (outer * ld * es) as u64
}

/// Threads for copying `bytes` between host and staging memory: one per 16 MiB, at most 8 and
/// the machine's parallelism. One core copies ~6 GB/s, a fraction of what PCIe carries.
fn copy_threads(bytes: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (bytes / (16 << 20)).clamp(1, cores.min(8))
}

/// Runs `f(first_row, row_count, piece)` over `n` rows cut into `threads` consecutive groups,
/// each group's rows paired with its `stride`-long piece of `out` (the last piece is the rest).
fn par_rows<T: Send>(
    out: &mut [T],
    n: usize,
    stride: usize,
    threads: usize,
    f: impl Fn(usize, usize, &mut [T]) + Sync,
) {
    if threads <= 1 {
        return f(0, n, out);
    }
    let per = n.div_ceil(threads);
    std::thread::scope(|s| {
        let f = &f;
        let mut rest = out;
        let mut first = 0;
        while first < n {
            let count = per.min(n - first);
            let take = if first + count < n { count * stride } else { rest.len() };
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(take);
            rest = tail;
            s.spawn(move || f(first, count, mine));
            first += count;
        }
    });
}

/// Copies a host matrix into device layout (same storage order, leading dimension `ld`, padding
/// zeroed: the kernels rely on zero padding for the K tail); large matrices on several threads.
pub(crate) fn pack<T: Element>(m: &MatRef<'_, T>, ld: usize, out: &mut [u8]) {
    let bytes = m.layout.outer_inner(m.rows, m.cols).0 * ld * size_of::<T>();
    pack_on(m, ld, out, copy_threads(bytes));
}

fn pack_on<T: Element>(m: &MatRef<'_, T>, ld: usize, out: &mut [u8], threads: usize) {
    let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
    let es = size_of::<T>();
    let out = &mut out[..outer * ld * es];
    par_rows(out, outer, ld * es, threads, |first, _, rows| {
        for (i, row) in rows.chunks_mut(ld * es).enumerate() {
            let o = first + i;
            let src = bytemuck::cast_slice::<T, u8>(&m.data[o * m.ld..o * m.ld + inner]);
            row[..inner * es].copy_from_slice(src);
            row[inner * es..].fill(0);
        }
    });
}

/// Copies device rows (leading dimension `ld`) into a host matrix; large ones on several threads.
pub(crate) fn unpack<T: Element>(bytes: &[u8], ld: usize, out: MatMut<'_, T>) {
    let threads = copy_threads(out.rows * out.cols * size_of::<T>());
    unpack_on(bytes, ld, out, threads);
}

fn unpack_on<T: Element>(bytes: &[u8], ld: usize, out: MatMut<'_, T>, threads: usize) {
    let es = size_of::<T>();
    let (rows, cols, out_ld) = (out.rows, out.cols, out.ld);
    par_rows(out.data, rows, out_ld, threads, |first, count, dst| {
        for r in 0..count {
            let src = &bytes[(first + r) * ld * es..((first + r) * ld + cols) * es];
            bytemuck::cast_slice_mut::<T, u8>(&mut dst[r * out_ld..r * out_ld + cols]).copy_from_slice(src);
        }
    });
}

/// Copies device rows (leading dimension `ld`) into `out`, one slice per row (each as long as
/// the row); many rows on several threads.
pub(crate) fn unpack_rows<T: Element>(bytes: &[u8], ld: usize, out: &mut [&mut [T]]) {
    let bytes_out = out.len() * out.first().map_or(0, |r| r.len()) * size_of::<T>();
    unpack_rows_on(bytes, ld, out, copy_threads(bytes_out));
}

fn unpack_rows_on<T: Element>(bytes: &[u8], ld: usize, out: &mut [&mut [T]], threads: usize) {
    let es = size_of::<T>();
    let n = out.len();
    par_rows(out, n, 1, threads, |first, _, rows| {
        for (i, dst) in rows.iter_mut().enumerate() {
            let r = first + i;
            let src = &bytes[r * ld * es..(r * ld + dst.len()) * es];
            bytemuck::cast_slice_mut::<T, u8>(dst).copy_from_slice(src);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The threaded copies give what one thread gives, for groups that do not divide the rows.
    #[test]
    fn copies_on_several_threads_match_one() {
        let (rows, cols, ld_in, ld) = (37, 13, 15, 16);
        let data: Vec<f32> = (0..rows * ld_in).map(|i| i as f32).collect();
        let m = MatRef::new(&data, rows, cols).with_ld(ld_in);
        let mut one = vec![0xAAu8; rows * ld * 4];
        pack_on(&m, ld, &mut one, 1);
        for threads in [2, 3, 5, 8, 64] {
            let mut many = vec![0x55u8; rows * ld * 4];
            pack_on(&m, ld, &mut many, threads);
            assert_eq!(one, many, "pack on {threads} threads");
            let mut back = vec![f32::NAN; (rows - 1) * 20 + cols];
            unpack_on(&many, ld, MatMut::new(&mut back, rows, cols).with_ld(20), threads);
            let mut rows_out: Vec<f32> = vec![f32::NAN; rows * cols];
            let mut slices: Vec<&mut [f32]> = rows_out.chunks_mut(cols).collect();
            unpack_rows_on(&many, ld, &mut slices, threads);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(back[r * 20 + c], data[r * ld_in + c], "unpack on {threads} threads");
                    assert_eq!(rows_out[r * cols + c], data[r * ld_in + c], "rows on {threads} threads");
                }
            }
        }
    }
}
