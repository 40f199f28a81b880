//! [`PinnedMatrix`]: a host matrix in memory that the devices import
//! (`VK_EXT_external_memory_host`), so their copy engines read A and B and write C in place.
//! Host operands in ordinary memory are copied by the CPU into staging memory first, and the
//! GPUs then copy from there: with several GPUs the host's memory bandwidth, spent twice per
//! byte, bounds them all (docs/perf/JOURNAL.md, "Several GPUs"). Importing costs a page pin per
//! allocation (13-16 GB/s measured on an H100 host), so it is paid once, when the matrix is made,
//! not per GEMM: the matrix is the caller's to fill and reuse, as CUDA's pinned host buffers are.

use super::{check_matrix, Context, DeviceMatrix, Element, MatMut, MatRef};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::memory::{Buffer, HostMemory};
use crate::record::Access;
use crate::submit::StreamCore;
use crate::tiling::Layout;
use std::marker::PhantomData;
use std::sync::Arc;

/// The start and length the host memory is aligned to at least (a page: what NVIDIA asks of
/// imports, `minImportedHostPointerAlignment`, is 4096).
const MIN_ALIGN: usize = 4096;

/// A dense host matrix (leading dimension = its inner extent) in memory imported into a set of
/// devices, made by [`Context::pinned_matrix`] or
/// [`MultiContext::pinned_matrix`](crate::MultiContext::pinned_matrix). Read and write it through
/// [`PinnedMatrix::as_ref`], [`PinnedMatrix::as_mut`] or its slices; pass it to
/// [`Context::run`](crate::Context::run) or [`MultiContext::run`](crate::MultiContext::run), whose copies then read and
/// write it without a staging copy. A device that cannot import it (no
/// `VK_EXT_external_memory_host`, or more than one allocation) stages as for any host matrix:
/// [`PinnedMatrix::imported_on`] says which. Starts zeroed.
pub struct PinnedMatrix<T: Element> {
    imports: Vec<Arc<Buffer>>,
    memory: Arc<HostMemory>,
    rows: usize,
    cols: usize,
    layout: Layout,
    _t: PhantomData<T>,
}

impl<T: Element> PinnedMatrix<T> {
    /// A zeroed `rows x cols` matrix stored `layout`, imported into each of `devices` that can.
    pub(crate) fn new(devices: &[&Arc<Device>], rows: usize, cols: usize, layout: Layout) -> Result<Self> {
        if rows == 0 || cols == 0 {
            return Err(Error::ZeroSize { m: rows, n: cols, k: 0 });
        }
        let bytes = rows
            .checked_mul(cols)
            .and_then(|e| e.checked_mul(size_of::<T>()))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::TooLarge(format!("a {rows}x{cols} pinned matrix of {}", T::TYPE)))?;
        let align = devices
            .iter()
            .filter_map(|d| d.host_import().map(|h| h.alignment))
            .filter(|a| a.is_power_of_two() && *a <= 1 << 30)
            .fold(MIN_ALIGN, |acc, a| acc.max(a as usize));
        let memory = Arc::new(HostMemory::new(bytes, align)?);
        let mut imports = Vec::new();
        for device in devices {
            let limit = device.info().limits.max_memory_allocation_size;
            if let Some(b) = Buffer::import(device, &memory, limit)? {
                imports.push(Arc::new(b));
            }
        }
        Ok(Self {
            imports,
            memory,
            rows,
            cols,
            layout,
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

    /// Storage order.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Whether `ctx`'s device copies this matrix in place (else through staging).
    pub fn imported_on(&self, ctx: &Context) -> bool {
        self.imports.iter().any(|b| b.on(&ctx.device))
    }

    /// The elements, in storage order.
    pub fn data(&self) -> &[T] {
        // SAFETY: the memory holds at least rows * cols elements of T, zero-initialised (valid
        // for any Pod), aligned to a page; the GPU touches it only inside calls that borrow
        // `self` (and wait before returning), so no write overlaps this borrow.
        unsafe { std::slice::from_raw_parts(self.memory.ptr().cast::<T>(), self.rows * self.cols) }
    }

    /// The elements, in storage order, to write.
    pub fn data_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `data`; `&mut self` makes this the only borrow.
        unsafe { std::slice::from_raw_parts_mut(self.memory.ptr().cast::<T>(), self.rows * self.cols) }
    }

    /// The matrix as a host view.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        let (rows, cols, layout) = (self.rows, self.cols, self.layout);
        let ld = layout.outer_inner(rows, cols).1;
        MatRef {
            data: self.data(),
            rows,
            cols,
            layout,
            ld,
        }
    }

    /// The matrix as a mutable host view.
    pub fn as_mut(&mut self) -> MatMut<'_, T> {
        let (rows, cols, layout) = (self.rows, self.cols, self.layout);
        let ld = layout.outer_inner(rows, cols).1;
        MatMut {
            data: self.data_mut(),
            rows,
            cols,
            layout,
            ld,
        }
    }

    /// Where the devices find this matrix's bytes (no borrow of it: the imports are shared).
    pub(crate) fn direct(&self) -> Direct {
        Direct {
            base: self.memory.ptr() as usize,
            len: self.memory.len(),
            imports: self.imports.clone(),
        }
    }
}

impl<T: Element> std::fmt::Debug for PinnedMatrix<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedMatrix<{}>({}x{}, {:?}, imported on {} devices)",
            T::TYPE,
            self.rows,
            self.cols,
            self.layout,
            self.imports.len()
        )
    }
}

/// A pinned matrix's memory as its devices see it: each import, and the host address range
/// they map. A view into it ([`MatRef::block`], rows of C) is found there by its address.
#[derive(Clone)]
pub(crate) struct Direct {
    base: usize,
    len: usize,
    imports: Vec<Arc<Buffer>>,
}

impl Direct {
    /// `device`'s import and the offsets in it of the stored lines of `m` (rows of a row-major
    /// view), where all of `m` lies in it.
    pub fn lines_of<T>(&self, device: &Arc<Device>, m: &MatRef<'_, T>) -> Option<(&Arc<Buffer>, Lines)> {
        let lines = Lines::of_view((self.base, self.len), m)?;
        Some((self.import_on(device)?, lines))
    }

    /// Like [`Direct::lines_of`], for rows given as slices (a multi-device GEMM's block of C).
    pub fn rows_of<T>(&self, device: &Arc<Device>, rows: &[&mut [T]]) -> Option<(&Arc<Buffer>, Lines)> {
        let lines = Lines::of_rows((self.base, self.len), rows)?;
        Some((self.import_on(device)?, lines))
    }

    fn import_on(&self, device: &Arc<Device>) -> Option<&Arc<Buffer>> {
        self.imports.iter().find(|b| b.on(device))
    }
}

/// Equal-length lines of a matrix in an import: each one's byte offset, and their length.
#[derive(Clone)]
pub(crate) struct Lines {
    offsets: Vec<u64>,
    bytes: u64,
}

impl Lines {
    /// The lines of `m` in memory at `(base, len)` (addresses), where all of `m` lies there.
    fn of_view<T>((base, len): (usize, usize), m: &MatRef<'_, T>) -> Option<Self> {
        let (outer, inner) = m.layout.outer_inner(m.rows, m.cols);
        if outer == 0 || inner == 0 {
            return None;
        }
        let es = size_of::<T>();
        let span = ((outer - 1) * m.ld + inner) * es;
        let first = offset_in((base, len), m.data.as_ptr() as usize, span)?;
        let offsets = (0..outer).map(|i| first + (i * m.ld * es) as u64).collect();
        Some(Self {
            offsets,
            bytes: (inner * es) as u64,
        })
    }

    /// Rows given as slices of equal length, where all of them lie in `(base, len)`.
    fn of_rows<T>((base, len): (usize, usize), rows: &[&mut [T]]) -> Option<Self> {
        let bytes = size_of_val::<[T]>(rows.first()?);
        let offsets = rows
            .iter()
            .map(|r| {
                let r: &[T] = r;
                (size_of_val(r) == bytes)
                    .then(|| offset_in((base, len), r.as_ptr() as usize, bytes))
                    .flatten()
            })
            .collect::<Option<Vec<u64>>>()?;
        Some(Self {
            offsets,
            bytes: bytes as u64,
        })
    }

    /// Copy regions between these lines and a device matrix's lines `ld_bytes` apart (line i of
    /// one to line i of the other), neighbours that continue each other merged into one.
    fn regions(&self, ld_bytes: u64, import_is_src: bool) -> Vec<ash::vk::BufferCopy> {
        let mut out: Vec<ash::vk::BufferCopy> = Vec::new();
        for (i, &off) in self.offsets.iter().enumerate() {
            let dev = i as u64 * ld_bytes;
            let (src, dst) = if import_is_src { (off, dev) } else { (dev, off) };
            match out.last_mut() {
                Some(r) if r.src_offset + r.size == src && r.dst_offset + r.size == dst => r.size += self.bytes,
                _ => out.push(ash::vk::BufferCopy {
                    src_offset: src,
                    dst_offset: dst,
                    size: self.bytes,
                }),
            }
        }
        out
    }
}

/// The offset of `bytes` bytes at address `at` in memory at `(base, len)`, where they lie in it.
fn offset_in((base, len): (usize, usize), at: usize, bytes: usize) -> Option<u64> {
    let offset = at.checked_sub(base)?;
    (offset.checked_add(bytes)? <= len).then_some(offset as u64)
}

impl Context {
    /// A zeroed `rows x cols` host matrix stored `layout`, imported into this context's device
    /// where it can be (see [`PinnedMatrix`]).
    pub fn pinned_matrix<T: Element>(&self, rows: usize, cols: usize, layout: Layout) -> Result<PinnedMatrix<T>> {
        PinnedMatrix::new(&[&self.device], rows, cols, layout)
    }

    /// Uploads `m`, whose `lines` lie in `import`, by a copy in place.
    pub(crate) fn upload_in_place<T: Element>(
        &self,
        m: &MatRef<'_, T>,
        lines: (&Arc<Buffer>, Lines),
    ) -> Result<DeviceMatrix<T>> {
        check_matrix("matrix", m)?;
        let dm = self.alloc_matrix::<T>(m.rows, m.cols, m.layout)?;
        let ld_bytes = (dm.ld * size_of::<T>()) as u64;
        self.run_blocking(|core| self.enqueue_copy_in(core, lines, &dm.buffer, ld_bytes))?;
        Ok(dm)
    }

    /// Downloads `m` into `lines` of `import` (its stored lines, in its order) by a copy in
    /// place, waiting until they are written.
    pub(crate) fn download_in_place<T: Element>(
        &self,
        m: &DeviceMatrix<T>,
        lines: (&Arc<Buffer>, Lines),
    ) -> Result<()> {
        self.check_owned(&m.buffer)?;
        let ld_bytes = (m.ld * size_of::<T>()) as u64;
        self.run_blocking(|core| self.enqueue_copy_out(core, &m.buffer, ld_bytes, lines))
    }

    /// Records the copy of `lines` of `import` into the lines of `dst` (`ld_bytes` apart), which
    /// the stream declares written. The import is held, not ordered: callers copy disjoint
    /// lines of it, and the host touches it only after waiting.
    pub(crate) fn enqueue_copy_in(
        &self,
        core: &mut StreamCore,
        (import, lines): (&Arc<Buffer>, Lines),
        dst: &Arc<Buffer>,
        ld_bytes: u64,
    ) -> Result<()> {
        core.access(&[], &[dst.into()])?;
        core.hold(import.clone(), false);
        let regions = lines.regions(ld_bytes, true);
        let mut rec = core.recording()?;
        if lines.bytes < ld_bytes {
            // The kernels read whole vectors past each line's end: the padding must be zeros,
            // as the staged path packs it (a pooled buffer holds its last user's data).
            rec.fill(dst.raw(), lines.offsets.len() as u64 * ld_bytes, 0);
            rec.barrier(Access::TRANSFER_WRITE, Access::TRANSFER_WRITE);
        }
        rec.copy_regions(import.raw(), dst.raw(), &regions);
        Ok(())
    }

    /// Records the copy of the lines of `src` (`ld_bytes` apart) into `lines` of `import`, made
    /// visible to the host once the submission completes.
    pub(crate) fn enqueue_copy_out(
        &self,
        core: &mut StreamCore,
        src: &Arc<Buffer>,
        ld_bytes: u64,
        (import, lines): (&Arc<Buffer>, Lines),
    ) -> Result<()> {
        core.access(&[src.into()], &[])?;
        core.hold(import.clone(), false);
        let regions = lines.regions(ld_bytes, false);
        let mut rec = core.recording()?;
        rec.copy_regions(src.raw(), import.raw(), &regions);
        rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Lines, MatMut, MatRef};
    use ash::vk::BufferCopy;

    /// Regions as (source offset, destination offset, size).
    fn t(regions: &[BufferCopy]) -> Vec<(u64, u64, u64)> {
        regions.iter().map(|r| (r.src_offset, r.dst_offset, r.size)).collect()
    }

    #[test]
    fn lines_are_found_by_address_and_merged_where_they_continue() {
        let data = vec![0u16; 12 * 10];
        let base = (data.as_ptr() as usize, data.len() * 2);
        let m = MatRef::new(&data, 12, 10);
        // Rows 2..5, columns 3..7: four-element lines 20 bytes apart, from byte 46.
        let lines = Lines::of_view(base, &m.block(2..5, 3..7)).expect("inside");
        assert_eq!((lines.offsets.clone(), lines.bytes), (vec![46, 66, 86], 8));
        // Into device lines 16 bytes apart: three regions; back out likewise.
        let regions = lines.regions(16, true);
        assert_eq!(t(&regions), [(46, 0, 8), (66, 16, 8), (86, 32, 8)]);
        assert_eq!(t(&lines.regions(16, false))[2], (32, 86, 8));
        // Whole rows whose device lines are as long: one region.
        let whole = Lines::of_view(base, &m.block(4..12, 0..10)).expect("inside");
        assert_eq!(t(&whole.regions(20, true)), [(80, 0, 160)]);
        // A column-major view's lines are its columns.
        let t = MatRef::col_major(&data, 10, 12);
        assert_eq!(
            Lines::of_view(base, &t.block(0..10, 1..3)).expect("inside").offsets,
            vec![20, 40]
        );
        // Memory elsewhere is not found.
        let other = vec![0u16; 4];
        assert!(Lines::of_view(base, &MatRef::new(&other, 2, 2)).is_none());
        assert!(Lines::of_view((base.0, base.1 - 2), &m).is_none());
    }

    #[test]
    fn rows_given_as_slices_are_found_by_address() {
        let mut data = vec![0f32; 6 * 5];
        let base = (data.as_ptr() as usize, data.len() * 4);
        let m = MatMut::new(&mut data, 6, 5);
        let rows: Vec<&mut [f32]> = m.data.chunks_mut(5).skip(1).take(3).map(|r| &mut r[1..4]).collect();
        let lines = Lines::of_rows(base, &rows).expect("inside");
        assert_eq!((lines.offsets, lines.bytes), (vec![24, 44, 64], 12));
        // Rows of unequal length, or outside the memory, are not lines of it.
        let (x, y) = m.data.split_at_mut(7);
        assert!(Lines::of_rows(base, &[&mut x[..2], &mut y[..3]]).is_none());
        let mut elsewhere = [0f32; 3];
        assert!(Lines::of_rows(base, &[&mut x[..3], &mut elsewhere[..]]).is_none());
    }
}
