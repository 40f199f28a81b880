//! The logical device: compute queues, exactly the features vk-sgmat uses
//! ([`DeviceRequirements`]), and the memory allocator; or a device the caller created. Buffers and pipelines hold an `Arc<Device>`, so it is destroyed after all of them.

use super::info::rank_devices;
use super::requirements::{DeviceRequirements, EnabledFeatures};
use super::{query_device, DeviceInfo, DeviceSelector, Instance};
use crate::error::{Error, Result};
use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A `VkDevice` with its compute queues and allocator: created here ([`Device::new`]) or the
/// caller's ([`Device::adopt`], never destroyed here).
pub struct Device {
    allocator: ManuallyDrop<Mutex<Allocator>>,
    raw: ash::Device,
    push_descriptor: ash::khr::push_descriptor::Device,
    /// Each queue with its external-synchronisation lock.
    queues: Vec<Mutex<vk::Queue>>,
    queue_family: u32,
    /// A family that only copies (DMA engines that run beside the compute units), with the
    /// queues of it vk-sgmat submits copies to; `None` where the device has none or was adopted.
    copy: Option<(u32, Vec<Mutex<vk::Queue>>)>,
    physical: vk::PhysicalDevice,
    info: DeviceInfo,
    owned: bool,
    /// Set once a wait on this device gave up (a timeout): its work may still run, so nothing
    /// that work could use is destroyed from then on (semaphores, pipelines, the device). Holds
    /// the timeout that passed, in nanoseconds plus one (0: none did).
    abandoned: AtomicU64,
    /// Set once a call reported the device lost.
    lost: AtomicBool,
    /// Where the caller's host memory can be imported (`VK_EXT_external_memory_host`).
    host_import: Option<HostImport>,
    instance: Arc<Instance>,
}

/// `VK_EXT_external_memory_host` on a device: host allocations aligned to `alignment` (start
/// and size) can be bound to buffers that the GPU's copy engines read and write directly.
pub(crate) struct HostImport {
    pub loader: ash::ext::external_memory_host::Device,
    pub alignment: u64,
}

/// How many queues of the compute family a device made here gets (streams spread over them).
const MAX_QUEUES: u32 = 4;

/// How many queues of a copy-only family it gets: one for each direction over the bus.
pub const MAX_COPY_QUEUES: u32 = 2;

/// A queue vk-sgmat submits to: compute queue `i`, or copy lane `i`, which records copies alone
/// and runs on the copy-only family where the device has one (else on compute queue `1 + i`).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum QueueRef {
    Compute(usize),
    Copy(usize),
}

/// A device the caller created, with what it enabled: handed to
/// [`Context::from_raw`](crate::Context::from_raw).
pub struct AdoptedDevice {
    /// The Vulkan entry the instance was created from.
    pub entry: ash::Entry,
    /// The instance (Vulkan 1.3 or later).
    pub instance: ash::Instance,
    /// The physical device `device` was created on.
    pub physical_device: vk::PhysicalDevice,
    /// The device.
    pub device: ash::Device,
    /// A queue family with compute, and the index of a queue of it that vk-sgmat may submit to.
    /// vk-sgmat locks nothing of the caller's: the caller must not use this queue from another
    /// thread while a vk-sgmat call submits to it.
    pub queue_family_index: u32,
    /// See `queue_family_index`.
    pub queue_index: u32,
    /// The device extensions the caller enabled.
    pub enabled_extensions: Vec<std::ffi::CString>,
    /// The features the caller enabled (Vulkan has no query for them: vk-sgmat trusts this).
    pub enabled_features: EnabledFeatures,
}

impl Device {
    /// Selects a device and creates it, with at most `copy_queues` queues of a copy-only family,
    /// planning within `compute` where given (a diagnostic: the device's own limits, tightened).
    pub fn new(
        instance: Arc<Instance>,
        selector: &DeviceSelector,
        copy_queues: u32,
        compute: Option<&super::ComputeLimits>,
    ) -> Result<Arc<Self>> {
        let (physical, mut info) = select(&instance, selector)?;
        if let Some(c) = compute {
            info = info.within(c);
        }
        Self::create(instance, physical, info, copy_queues)
    }

    fn create(
        instance: Arc<Instance>,
        physical: vk::PhysicalDevice,
        info: DeviceInfo,
        copy_queues: u32,
    ) -> Result<Arc<Self>> {
        let raw_instance = instance.raw();
        // SAFETY: plain query.
        let families = unsafe { raw_instance.get_physical_device_queue_family_properties(physical) };
        let (queue_family, family) = families
            .iter()
            .enumerate()
            .find(|(_, f)| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| Error::DeviceUnusable {
                device: info.name.clone(),
                missing: vec!["a compute queue".into()],
            })?;
        let queue_family = queue_family as u32;
        let queue_count = family.queue_count.clamp(1, MAX_QUEUES);
        // Host copies on a copy-only family run on its own engines while the compute queue
        // multiplies; on the compute queue, NVIDIA runs them in turn with the kernels.
        let copy = families
            .iter()
            .position(|f| {
                f.queue_flags.contains(vk::QueueFlags::TRANSFER)
                    && !f
                        .queue_flags
                        .intersects(vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE)
            })
            .map(|i| (i as u32, families[i].queue_count.min(copy_queues.min(MAX_COPY_QUEUES))))
            .filter(|&(_, count)| count > 0);
        let required = DeviceRequirements::for_device(&info);
        let mut extensions: Vec<_> = required.extensions.iter().map(|e| e.as_ptr()).collect();
        // Optional, for host matrices the copy engines read in place (`PinnedMatrix`).
        let host_import = info.features.ext_external_memory_host;
        if host_import {
            extensions.push(ash::ext::external_memory_host::NAME.as_ptr());
        }
        let priorities = vec![1.0f32; queue_count.max(MAX_COPY_QUEUES) as usize];
        let mut queue_info = vec![vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities[..queue_count as usize])];
        if let Some((family, count)) = copy {
            queue_info.push(
                vk::DeviceQueueCreateInfo::default()
                    .queue_family_index(family)
                    .queue_priorities(&priorities[..count as usize]),
            );
        }
        let mut chain = required.feature_chain();
        let create = chain
            .push_onto(vk::DeviceCreateInfo::default().queue_create_infos(&queue_info))
            .enabled_extension_names(&extensions);
        // SAFETY: every pointer in `create` outlives the call; the features requested were
        // reported as supported (the device passed its requirements).
        let raw = unsafe { raw_instance.create_device(physical, &create, None) }
            .map_err(|r| Error::vk("vkCreateDevice", r))?;
        Self::wrap(
            instance,
            physical,
            info,
            raw,
            (queue_family, 0..queue_count),
            copy,
            (true, host_import),
        )
    }

    /// Wraps a device the caller created, after checking that its queue family computes and that
    /// it enabled everything [`DeviceRequirements::for_device`] lists.
    ///
    /// # Safety
    /// Every handle in `adopted` must be valid, `enabled_*` must be what the device was created
    /// with, and the instance and device must outlive every object made from the returned one.
    pub unsafe fn adopt(adopted: AdoptedDevice) -> Result<Arc<Self>> {
        // SAFETY: the caller guarantees the handles.
        let instance = unsafe { Instance::adopt(adopted.entry, adopted.instance) };
        // SAFETY: the caller guarantees the handles.
        let pdevs = unsafe { instance.raw().enumerate_physical_devices() }
            .map_err(|r| Error::vk("vkEnumeratePhysicalDevices", r))?;
        let index = pdevs.iter().position(|&p| p == adopted.physical_device).unwrap_or(0);
        let mut info = query_device(&instance, adopted.physical_device, index)?;
        if !adopted.enabled_features.nv_per_element_operations {
            // Optional: without it, fused epilogues keep to subgroup-scope kernels.
            if let Some(cm2) = info.cooperative_matrix2.as_mut() {
                cm2.per_element_operations = false;
            }
        }
        optional_features_as_enabled(&mut info, &adopted.enabled_features);
        // SAFETY: plain query.
        let families = unsafe {
            instance
                .raw()
                .get_physical_device_queue_family_properties(adopted.physical_device)
        };
        let mut missing = info.missing();
        match families.get(adopted.queue_family_index as usize) {
            Some(f) if f.queue_flags.contains(vk::QueueFlags::COMPUTE) && adopted.queue_index < f.queue_count => {}
            _ => missing.push(format!(
                "queue {} of family {} with compute",
                adopted.queue_index, adopted.queue_family_index
            )),
        }
        let required = DeviceRequirements::for_device(&info);
        for ext in &required.extensions {
            if !adopted.enabled_extensions.iter().any(|e| e.as_c_str() == *ext) {
                missing.push(format!("extension {} enabled", ext.to_string_lossy()));
            }
        }
        missing.extend(
            required
                .features
                .missing_from(&adopted.enabled_features)
                .into_iter()
                .map(|f| format!("feature {f} enabled")),
        );
        if !missing.is_empty() {
            return Err(Error::DeviceUnusable {
                device: info.name.clone(),
                missing,
            });
        }
        let queues = (adopted.queue_family_index, adopted.queue_index..adopted.queue_index + 1);
        let host_import = adopted
            .enabled_extensions
            .iter()
            .any(|e| e.as_c_str() == ash::ext::external_memory_host::NAME);
        Self::wrap(
            instance,
            adopted.physical_device,
            info,
            adopted.device,
            queues,
            None,
            (false, host_import),
        )
    }

    fn wrap(
        instance: Arc<Instance>,
        physical: vk::PhysicalDevice,
        info: DeviceInfo,
        raw: ash::Device,
        (queue_family, queue_indices): (u32, std::ops::Range<u32>),
        copy: Option<(u32, u32)>,
        (owned, host_import): (bool, bool),
    ) -> Result<Arc<Self>> {
        let raw_instance = instance.raw();
        // SAFETY: the family has these queues (created here, or checked by `adopt`).
        let queues = queue_indices
            .map(|i| Mutex::new(unsafe { raw.get_device_queue(queue_family, i) }))
            .collect();
        let copy = copy.map(|(family, count)| {
            let queues = (0..count)
                // SAFETY: the device was created with these queues.
                .map(|i| Mutex::new(unsafe { raw.get_device_queue(family, i) }))
                .collect();
            (family, queues)
        });
        let allocator = Allocator::new(&AllocatorCreateDesc {
            instance: raw_instance.clone(),
            device: raw.clone(),
            physical_device: physical,
            debug_settings: Default::default(),
            buffer_device_address: false,
            allocation_sizes: Default::default(),
        });
        let allocator = match allocator {
            Ok(a) => a,
            Err(e) => {
                if owned {
                    // SAFETY: nothing was created from the device yet.
                    unsafe { raw.destroy_device(None) };
                }
                return Err(Error::Allocation {
                    what: "allocator",
                    message: e.to_string(),
                });
            }
        };
        let host_import = host_import
            .then(|| host_import_of(raw_instance, physical, &raw))
            .flatten();
        Ok(Arc::new(Self {
            allocator: ManuallyDrop::new(Mutex::new(allocator)),
            host_import,
            push_descriptor: ash::khr::push_descriptor::Device::new(raw_instance, &raw),
            raw,
            queues,
            queue_family,
            copy,
            physical,
            info,
            owned,
            abandoned: AtomicU64::new(0),
            lost: AtomicBool::new(false),
            instance,
        }))
    }

    /// The ash device.
    pub fn raw(&self) -> &ash::Device {
        &self.raw
    }

    /// What was queried about this device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The instance.
    pub fn instance(&self) -> &Arc<Instance> {
        &self.instance
    }

    /// The physical device handle.
    pub fn physical(&self) -> vk::PhysicalDevice {
        self.physical
    }

    /// The compute queue family index.
    pub fn queue_family(&self) -> u32 {
        self.queue_family
    }

    /// How many queues vk-sgmat submits to.
    pub fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// Notes that a wait gave up on work that may still run (see [`Device::work_abandoned`]).
    pub(crate) fn abandon_work(&self, timeout: std::time::Duration) {
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX - 1);
        let _ = self
            .abandoned
            .compare_exchange(0, nanos + 1, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Notes `e` and returns it: a lost device stays lost (see [`Device::usable`]).
    pub(crate) fn note(&self, e: Error) -> Error {
        if matches!(e, Error::DeviceLost { .. }) {
            self.lost.store(true, Ordering::Release);
        }
        e
    }

    /// Whether new work may go to the device: not after it was lost
    /// ([`Error::DeviceLost`]), nor after a wait on it timed out ([`Error::GpuTimeout`]), so a
    /// later call fails at once instead of hanging.
    pub(crate) fn usable(&self) -> Result<()> {
        if self.lost.load(Ordering::Acquire) {
            return Err(Error::DeviceLost {
                call: "an earlier call",
            });
        }
        match self.abandoned.load(Ordering::Acquire) {
            0 => Ok(()),
            n => Err(Error::GpuTimeout {
                timeout: std::time::Duration::from_nanos(n - 1),
            }),
        }
    }

    /// Whether a wait gave up on this device's work: objects that work may use are then leaked
    /// rather than destroyed under the GPU.
    pub(crate) fn work_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire) != 0
    }

    /// Whether vk-sgmat created the device (and so destroys it).
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// The queue, locked for submission (the index taken modulo its family's count).
    pub(crate) fn queue(&self, queue: QueueRef) -> MutexGuard<'_, vk::Queue> {
        let (list, i) = match (queue, &self.copy) {
            (QueueRef::Copy(i), Some((_, copies))) => (copies, i),
            // Not the first: the blocking calls use it.
            (QueueRef::Copy(i), None) => (&self.queues, 1 + i),
            (QueueRef::Compute(i), _) => (&self.queues, i),
        };
        list[i % list.len()].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The family of `queue`.
    pub(crate) fn family_of(&self, queue: QueueRef) -> u32 {
        match (queue, &self.copy) {
            (QueueRef::Copy(_), Some((family, _))) => *family,
            _ => self.queue_family,
        }
    }

    /// How many queues of a copy-only family host copies run on (0: they share the compute
    /// queues).
    pub fn copy_queue_count(&self) -> usize {
        self.copy.as_ref().map_or(0, |(_, queues)| queues.len())
    }

    /// The families a buffer is shared between: empty where all queues are of one family.
    pub(crate) fn sharing_families(&self) -> Vec<u32> {
        match self.copy {
            Some((family, _)) => vec![self.queue_family, family],
            None => Vec::new(),
        }
    }

    pub(crate) fn push_descriptor(&self) -> &ash::khr::push_descriptor::Device {
        &self.push_descriptor
    }

    /// Host-memory import, where the device has it enabled.
    pub(crate) fn host_import(&self) -> Option<&HostImport> {
        self.host_import.as_ref()
    }

    pub(crate) fn allocator(&self) -> MutexGuard<'_, Allocator> {
        self.allocator.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.work_abandoned() {
            return; // work may still run on it: leaking beats destroying it under the GPU
        }
        // SAFETY: every buffer and pipeline holds an Arc<Device>, so none is alive, and every
        // submission of ours was waited for; the allocator must go before the device it allocates
        // from. A caller's device is left alone (waiting idle would touch the caller's queues).
        unsafe {
            if self.owned {
                let _ = self.raw.device_wait_idle();
            }
            ManuallyDrop::drop(&mut self.allocator);
            if self.owned {
                self.raw.destroy_device(None);
            }
        }
    }
}

/// How `raw` imports host memory, where the extension is enabled and buffers of vk-sgmat's
/// transfer usage can be bound to imported host allocations.
fn host_import_of(instance: &ash::Instance, physical: vk::PhysicalDevice, raw: &ash::Device) -> Option<HostImport> {
    let handle = vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;
    let info = vk::PhysicalDeviceExternalBufferInfo::default()
        .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
        .handle_type(handle);
    let mut external = vk::ExternalBufferProperties::default();
    // SAFETY: plain query (Vulkan 1.1 core).
    unsafe { instance.get_physical_device_external_buffer_properties(physical, &info, &mut external) };
    let features = external.external_memory_properties.external_memory_features;
    if !features.contains(vk::ExternalMemoryFeatureFlags::IMPORTABLE) {
        return None;
    }
    let mut props = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut props);
    // SAFETY: plain query; the struct is the extension's, which the device has.
    unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
    Some(HostImport {
        loader: ash::ext::external_memory_host::Device::new(instance, raw),
        alignment: props.min_imported_host_pointer_alignment.max(1),
    })
}

fn select(instance: &Instance, selector: &DeviceSelector) -> Result<(vk::PhysicalDevice, DeviceInfo)> {
    let mut devices = instance.devices()?;
    let available = || {
        devices
            .iter()
            .map(|(_, d)| format!("{}: {}", d.index, d.name))
            .collect::<Vec<_>>()
    };
    let chosen = match selector {
        DeviceSelector::Best => {
            let mut infos: Vec<DeviceInfo> = devices.iter().map(|(_, d)| d.clone()).collect();
            rank_devices(&mut infos);
            match infos.first() {
                Some(best) if best.usable() => best.index,
                _ => {
                    return Err(Error::NoUsableDevice {
                        reasons: infos.iter().map(|d| (d.name.clone(), d.missing())).collect(),
                    })
                }
            }
        }
        DeviceSelector::Index(i) => match devices.iter().position(|(_, d)| d.index == *i) {
            Some(p) => p,
            None => {
                return Err(Error::DeviceNotFound {
                    selector: i.to_string(),
                    available: available(),
                })
            }
        },
        DeviceSelector::Name(name) => {
            let needle = name.to_lowercase();
            let mut matches: Vec<&DeviceInfo> = devices
                .iter()
                .map(|(_, d)| d)
                .filter(|d| d.name.to_lowercase().contains(&needle))
                .collect();
            matches.sort_by_key(|d| (!d.usable(), !d.has_matrix_units(), d.kind, d.index));
            match matches.first() {
                Some(d) => d.index,
                None => {
                    return Err(Error::DeviceNotFound {
                        selector: name.clone(),
                        available: available(),
                    })
                }
            }
        }
    };
    let (pdev, info) = devices.swap_remove(chosen);
    if !info.usable() {
        return Err(Error::DeviceUnusable {
            device: info.name.clone(),
            missing: info.missing(),
        });
    }
    Ok((pdev, info))
}

/// The features an adopted device may lack without being refused, as its creator enabled them:
/// packed dot products (the 8-bit kernel without matrix units then widens), and 16-bit storage
/// and f16 arithmetic where no f16 config needs them (16-bit results without matrix units are
/// then refused, and workgroup-scope bf16 schemes not offered).
fn optional_features_as_enabled(info: &mut DeviceInfo, enabled: &EnabledFeatures) {
    use crate::config::ComponentType::F16;
    let f = &mut info.features;
    f.shader_integer_dot_product &= enabled.shader_integer_dot_product;
    if !info
        .configs
        .all()
        .any(|c| c.component_type == F16 || c.result_type == F16)
    {
        f.storage_buffer_16bit_access &= enabled.storage_buffer_16bit_access;
        f.shader_float16 &= enabled.shader_float16;
    }
}
