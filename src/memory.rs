//! GPU buffers over gpu-allocator. A [`Buffer`] owns its `VkBuffer` and its allocation and frees
//! both on drop (gpu-allocator's `Allocation` does not free itself). [`BufferPool`] keeps released
//! buffers for reuse so repeated GEMMs do not allocate. [`HostMemory`] is host memory that
//! devices import ([`Buffer::import`]) so their copy engines read and write it in place.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::sync::Uses;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::{AllocationError, MemoryLocation};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What a buffer is for; decides its usage flags and memory location.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum BufferKind {
    /// Device-local storage for matrices (also a copy source and destination, and fillable).
    Storage,
    /// Host-visible source of uploads.
    Upload,
    /// Host-visible destination of downloads.
    Readback,
    /// [`HostMemory`] imported with `VK_EXT_external_memory_host` (copy source and destination).
    Imported,
}

impl BufferKind {
    fn usage(self) -> vk::BufferUsageFlags {
        match self {
            Self::Storage => {
                vk::BufferUsageFlags::STORAGE_BUFFER
                    | vk::BufferUsageFlags::TRANSFER_DST
                    | vk::BufferUsageFlags::TRANSFER_SRC
            }
            Self::Upload => vk::BufferUsageFlags::TRANSFER_SRC,
            Self::Readback => vk::BufferUsageFlags::TRANSFER_DST,
            Self::Imported => vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST,
        }
    }

    fn location(self) -> MemoryLocation {
        match self {
            Self::Storage => MemoryLocation::GpuOnly,
            Self::Upload => MemoryLocation::CpuToGpu,
            Self::Readback => MemoryLocation::GpuToCpu,
            Self::Imported => MemoryLocation::Unknown,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Storage => "matrix storage",
            Self::Upload => "upload staging",
            Self::Readback => "readback staging",
            Self::Imported => "imported host memory",
        }
    }
}

/// Device buffers of at least this many bytes start on a multiple of it within the allocator's
/// blocks. On the H200 a GEMM whose activations and C had been placed after a 48.4 MiB weight (a
/// multiple of 128 KiB, not of 2 MiB) ran 7-27% slower than with the same buffers on 2 MiB
/// boundaries (512x22016x4096 f16 -> f32 `nt`: 412 against 342 us), whatever the data
/// (docs/perf/JOURNAL.md, "Buffers on 2 MiB boundaries").
pub(crate) const BIG_PAGE: u64 = 2 << 20;

/// A buffer and its memory.
pub(crate) struct Buffer {
    /// The submissions that last used it, where it is shared between streams.
    uses: Mutex<Uses>,
    allocation: Option<Allocation>,
    /// An import's memory, and the host memory behind it (freed after the import).
    imported: Option<(vk::DeviceMemory, Arc<HostMemory>)>,
    raw: vk::Buffer,
    size: u64,
    kind: BufferKind,
    device: Arc<Device>,
}

/// `info` shared between `families` (the compute and copy-only queues, so a band copied in on
/// one is multiplied on the other without ownership transfers), or exclusive where that is one.
fn sharing<'a>(info: vk::BufferCreateInfo<'a>, families: &'a [u32]) -> vk::BufferCreateInfo<'a> {
    match families.len() {
        0 | 1 => info.sharing_mode(vk::SharingMode::EXCLUSIVE),
        _ => info
            .sharing_mode(vk::SharingMode::CONCURRENT)
            .queue_family_indices(families),
    }
}

impl Buffer {
    /// A buffer of `size` bytes (at least 16), refused as [`Error::TooLarge`] over `limit`
    /// (the context's allocation limit: [`BufferPool::allocate`] passes it).
    fn new(device: &Arc<Device>, size: u64, kind: BufferKind, limit: u64) -> Result<Self> {
        let size = size.max(16);
        if size > limit {
            return Err(Error::TooLarge(format!(
                "a {} buffer of {size} bytes exceeds the allocation limit of {limit} bytes (maxMemoryAllocationSize, or ContextOptions::limits_override): host GEMMs run larger operands in pieces, but a device matrix must fit one allocation",
                kind.name()
            )));
        }
        let raw_device = device.raw();
        let families = device.sharing_families();
        let info = sharing(
            vk::BufferCreateInfo::default().size(size).usage(kind.usage()),
            &families,
        );
        // SAFETY: valid create info on a live device.
        let raw = unsafe { raw_device.create_buffer(&info, None) }.map_err(|r| Error::vk("vkCreateBuffer", r))?;
        // SAFETY: `raw` was just created on this device.
        let mut requirements = unsafe { raw_device.get_buffer_memory_requirements(raw) };
        if kind == BufferKind::Storage && size >= BIG_PAGE {
            requirements.alignment = requirements.alignment.max(BIG_PAGE);
        }
        let allocation = device.allocator().allocate(&AllocationCreateDesc {
            name: kind.name(),
            requirements,
            location: kind.location(),
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        });
        let allocation = match allocation {
            Ok(a) => a,
            Err(e) => {
                // SAFETY: the buffer is unused and unbound.
                unsafe { raw_device.destroy_buffer(raw, None) };
                return Err(match e {
                    AllocationError::OutOfMemory => Error::OutOfDeviceMemory {
                        what: kind.name(),
                        bytes: size,
                    },
                    e => Error::Allocation {
                        what: kind.name(),
                        message: e.to_string(),
                    },
                });
            }
        };
        // SAFETY: the allocation satisfies the buffer's requirements and is not bound elsewhere.
        let bound = unsafe { raw_device.bind_buffer_memory(raw, allocation.memory(), allocation.offset()) };
        let buffer = Self {
            uses: Mutex::new(Uses::default()),
            allocation: Some(allocation),
            imported: None,
            raw,
            size,
            kind,
            device: device.clone(),
        };
        bound.map_err(|r| Error::vk("vkBindBufferMemory", r))?;
        Ok(buffer)
    }

    pub fn raw(&self) -> vk::Buffer {
        self.raw
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// The mapped bytes of a host-visible buffer.
    pub fn mapped_mut(&mut self) -> Result<&mut [u8]> {
        let size = self.size as usize;
        self.allocation
            .as_mut()
            .and_then(|a| a.mapped_slice_mut())
            .map(|s| &mut s[..size])
            .ok_or(Error::Allocation {
                what: "staging",
                message: "memory is not host-visible".into(),
            })
    }

    /// The mapped bytes of a host-visible buffer, for reading after the GPU wrote them.
    pub fn mapped(&self) -> Result<&[u8]> {
        let size = self.size as usize;
        self.allocation
            .as_ref()
            .and_then(|a| a.mapped_slice())
            .map(|s| &s[..size])
            .ok_or(Error::Allocation {
                what: "staging",
                message: "memory is not host-visible".into(),
            })
    }

    /// The record of the submissions that last used this buffer.
    pub(crate) fn uses(&self) -> std::sync::MutexGuard<'_, Uses> {
        self.uses.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the buffer belongs to `device`.
    pub fn on(&self, device: &Arc<Device>) -> bool {
        Arc::ptr_eq(&self.device, device)
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer({} bytes, {})", self.size, self.kind.name())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Some(a) = self.allocation.take() {
            let _ = self.device.allocator().free(a);
        }
        // SAFETY: every submission that uses a buffer holds it (an Arc, or by the blocking call
        // that waits) until the GPU is done with it; the allocation was freed above.
        unsafe { self.device.raw().destroy_buffer(self.raw, None) };
        if let Some((memory, host)) = self.imported.take() {
            // SAFETY: the buffer bound to it is gone; the host memory outlives the import.
            unsafe { self.device.raw().free_memory(memory, None) };
            drop(host);
        }
    }
}

/// Zeroed host memory aligned for import by every device of a set (start and length both
/// multiples of the alignment). Only raw pointers to it are handed out:
/// [`PinnedMatrix`](crate::PinnedMatrix) borrows it as slices, the GPU reads and writes it
/// through imports, and the two never overlap in time (every call that uses an import waits
/// for it before it returns).
pub(crate) struct HostMemory {
    ptr: std::ptr::NonNull<u8>,
    layout: std::alloc::Layout,
}

// SAFETY: plain memory with no thread affinity; access is ordered by the borrows of its owner.
unsafe impl Send for HostMemory {}
// SAFETY: as above.
unsafe impl Sync for HostMemory {}

impl HostMemory {
    /// At least `bytes` bytes (rounded up to `align`, a power of two), zeroed.
    pub fn new(bytes: usize, align: usize) -> Result<Self> {
        let too_large = || Error::TooLarge(format!("{bytes} bytes of host memory aligned to {align}"));
        let len = bytes.max(1).checked_next_multiple_of(align).ok_or_else(too_large)?;
        let layout = std::alloc::Layout::from_size_align(len, align).map_err(|_| too_large())?;
        // SAFETY: the layout's size is not zero.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(ptr).ok_or_else(|| Error::Allocation {
            what: "pinned host memory",
            message: format!("the system allocator refused {len} bytes"),
        })?;
        Ok(Self { ptr, layout })
    }

    /// The first byte.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The length in bytes (a multiple of [`HostMemory::align`]).
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// The alignment of the start and the length.
    pub fn align(&self) -> usize {
        self.layout.align()
    }
}

impl Drop for HostMemory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; every import holding it is gone.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

impl Buffer {
    /// `host` imported into `device` as a buffer its copy engines read and write in place, or
    /// `None` where the device cannot import it (no `VK_EXT_external_memory_host`, an alignment
    /// or size it does not take, no memory type for it): then callers stage through copies.
    pub fn import(device: &Arc<Device>, host: &Arc<HostMemory>, limit: u64) -> Result<Option<Self>> {
        let Some(hi) = device.host_import() else {
            return Ok(None);
        };
        let size = host.len() as u64;
        if host.align() as u64 % hi.alignment != 0 || size % hi.alignment != 0 || size > limit {
            return Ok(None);
        }
        let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
        let mut props = vk::MemoryHostPointerPropertiesEXT::default();
        // SAFETY: the pointer is to live host memory aligned as the device requires.
        let queried = unsafe {
            (hi.loader.fp().get_memory_host_pointer_properties_ext)(
                device.raw().handle(),
                handle,
                host.ptr() as *const std::ffi::c_void,
                &mut props,
            )
        };
        if queried != vk::Result::SUCCESS {
            return Ok(None);
        }
        let raw_device = device.raw();
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(handle);
        let families = device.sharing_families();
        let info = sharing(
            vk::BufferCreateInfo::default()
                .size(size)
                .usage(BufferKind::Imported.usage()),
            &families,
        )
        .push_next(&mut external);
        // SAFETY: valid create info on a live device.
        let raw = unsafe { raw_device.create_buffer(&info, None) }.map_err(|r| Error::vk("vkCreateBuffer", r))?;
        // SAFETY: `raw` was just created on this device.
        let requirements = unsafe { raw_device.get_buffer_memory_requirements(raw) };
        let types = requirements.memory_type_bits & props.memory_type_bits;
        let destroy = || {
            // SAFETY: unused and unbound.
            unsafe { raw_device.destroy_buffer(raw, None) };
        };
        if types == 0 || requirements.size > size {
            destroy();
            return Ok(None);
        }
        let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
            .handle_type(handle)
            .host_pointer(host.ptr().cast());
        let alloc = vk::MemoryAllocateInfo::default()
            .allocation_size(size)
            .memory_type_index(types.trailing_zeros())
            .push_next(&mut import);
        // SAFETY: the host memory outlives the allocation (the buffer keeps it until after
        // freeing it); size and pointer are aligned as the device requires.
        let memory = match unsafe { raw_device.allocate_memory(&alloc, None) } {
            Ok(m) => m,
            Err(_) => {
                destroy();
                return Ok(None);
            }
        };
        let buffer = Self {
            uses: Mutex::new(Uses::default()),
            allocation: None,
            imported: Some((memory, host.clone())),
            raw,
            size,
            kind: BufferKind::Imported,
            device: device.clone(),
        };
        // SAFETY: the memory is new, large enough and of a type the buffer takes.
        unsafe { raw_device.bind_buffer_memory(raw, memory, 0) }.map_err(|r| Error::vk("vkBindBufferMemory", r))?;
        Ok(Some(buffer))
    }
}

/// Released buffers kept for reuse, per kind.
pub(crate) struct BufferPool {
    device: Arc<Device>,
    free: Mutex<Vec<Buffer>>,
    /// The context's allocation limit ([`DispatchLimits::max_allocation`](crate::plan::DispatchLimits)).
    max_allocation: u64,
    /// Buffers allocated so far (a diagnostic: a pipeline that reuses its buffers adds none).
    allocated: AtomicUsize,
}

/// How many idle buffers the pool keeps.
const POOL_KEEP: usize = 16;

impl BufferPool {
    pub fn new(device: Arc<Device>, max_allocation: u64) -> Self {
        Self {
            device,
            free: Mutex::new(Vec::new()),
            max_allocation,
            allocated: AtomicUsize::new(0),
        }
    }

    /// The largest buffer it allocates.
    pub fn max_allocation(&self) -> u64 {
        self.max_allocation
    }

    /// A new buffer of `size` bytes within the context's allocation limit (not from the pool).
    pub fn allocate(&self, size: u64, kind: BufferKind) -> Result<Buffer> {
        self.allocated.fetch_add(1, Ordering::Relaxed);
        Buffer::new(&self.device, size, kind, self.max_allocation)
    }

    /// How many buffers it has allocated.
    pub fn allocations(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    /// A buffer of at least `size` bytes: the smallest idle one that fits, else a new one (sized to
    /// the next power of two so later, slightly larger requests reuse it).
    pub fn take(&self, size: u64, kind: BufferKind) -> Result<Buffer> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let best = free
            .iter()
            .enumerate()
            .filter(|(_, b)| b.kind == kind && b.size >= size && b.size <= size.saturating_mul(4).max(1 << 16))
            .min_by_key(|(_, b)| b.size)
            .map(|(i, _)| i);
        if let Some(i) = best {
            return Ok(free.swap_remove(i));
        }
        drop(free);
        let rounded = size.checked_next_power_of_two().unwrap_or(size);
        let size = if rounded > self.max_allocation { size } else { rounded };
        self.allocate(size, kind)
    }

    /// Bytes of the idle buffers it keeps.
    pub fn idle_bytes(&self) -> u64 {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.iter().map(|b| b.size).sum()
    }

    /// Frees every idle buffer; returns their bytes.
    pub fn trim(&self) -> u64 {
        let idle = std::mem::take(&mut *self.free.lock().unwrap_or_else(|e| e.into_inner()));
        idle.iter().map(|b| b.size).sum()
    }

    /// Returns a buffer for reuse.
    pub fn give(&self, buffer: Buffer) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.push(buffer);
        if free.len() > POOL_KEEP {
            // Drop the smallest: large buffers are the expensive ones to recreate.
            if let Some(i) = free.iter().enumerate().min_by_key(|(_, b)| b.size).map(|(i, _)| i) {
                free.swap_remove(i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Device buffers of 2 MiB or more start on a 2 MiB boundary of their memory, whatever was
    /// allocated before them; smaller ones and host-visible staging keep the driver's alignment.
    #[test]
    fn large_device_buffers_start_on_big_pages() {
        let ctx = crate::Context::new().expect("a Vulkan device (lavapipe in CI: scripts/provision-lavapipe.sh)");
        let offset = |b: &Buffer| b.allocation.as_ref().expect("allocator-owned").offset();
        // An odd-sized buffer first, so the next one would otherwise start off a boundary.
        let first = ctx
            .pool
            .allocate(BIG_PAGE + 4096, BufferKind::Storage)
            .expect("allocation");
        let small = ctx.pool.allocate(4096, BufferKind::Storage).expect("allocation");
        for size in [BIG_PAGE, 3 * BIG_PAGE + 16] {
            let b = ctx.pool.allocate(size, BufferKind::Storage).expect("allocation");
            assert_eq!(offset(&b) % BIG_PAGE, 0, "a {size}-byte buffer at {}", offset(&b));
        }
        assert_eq!(offset(&first) % BIG_PAGE, 0);
        // The small buffer went right after the first, off a boundary (the test's premise).
        assert_ne!(offset(&small) % BIG_PAGE, 0, "small buffer at {}", offset(&small));
    }
}
