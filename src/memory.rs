//! GPU buffers over gpu-allocator. A [`Buffer`] owns its `VkBuffer` and its allocation and frees
//! both on drop (gpu-allocator's `Allocation` does not free itself). [`BufferPool`] keeps released
//! buffers for reuse so repeated GEMMs do not allocate.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::submit::Uses;
use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};
use gpu_allocator::{AllocationError, MemoryLocation};
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
        }
    }

    fn location(self) -> MemoryLocation {
        match self {
            Self::Storage => MemoryLocation::GpuOnly,
            Self::Upload => MemoryLocation::CpuToGpu,
            Self::Readback => MemoryLocation::GpuToCpu,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Storage => "matrix storage",
            Self::Upload => "upload staging",
            Self::Readback => "readback staging",
        }
    }
}

/// A buffer and its memory.
pub(crate) struct Buffer {
    /// The submissions that last used it, where it is shared between streams.
    uses: Mutex<Uses>,
    allocation: Option<Allocation>,
    raw: vk::Buffer,
    size: u64,
    kind: BufferKind,
    device: Arc<Device>,
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
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(kind.usage())
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: valid create info on a live device.
        let raw = unsafe { raw_device.create_buffer(&info, None) }.map_err(|r| Error::vk("vkCreateBuffer", r))?;
        // SAFETY: `raw` was just created on this device.
        let requirements = unsafe { raw_device.get_buffer_memory_requirements(raw) };
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
    }
}

/// Released buffers kept for reuse, per kind.
pub(crate) struct BufferPool {
    device: Arc<Device>,
    free: Mutex<Vec<Buffer>>,
    /// The context's allocation limit ([`DispatchLimits::max_allocation`](crate::plan::DispatchLimits)).
    max_allocation: u64,
}

/// How many idle buffers the pool keeps.
const POOL_KEEP: usize = 16;

impl BufferPool {
    pub fn new(device: Arc<Device>, max_allocation: u64) -> Self {
        Self {
            device,
            free: Mutex::new(Vec::new()),
            max_allocation,
        }
    }

    /// The largest buffer it allocates.
    pub fn max_allocation(&self) -> u64 {
        self.max_allocation
    }

    /// A new buffer of `size` bytes within the context's allocation limit (not from the pool).
    pub fn allocate(&self, size: u64, kind: BufferKind) -> Result<Buffer> {
        Buffer::new(&self.device, size, kind, self.max_allocation)
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
