//! The logical device: one compute queue, exactly the features the kernels use, and the memory
//! allocator. Buffers and pipelines hold an `Arc<Device>`, so it is destroyed after all of them.

use super::info::rank_devices;
use super::nv_coopmat2;
use super::query::{Bf16Features, EXT_SHADER_BFLOAT16};
use super::{DeviceInfo, DeviceSelector, Instance};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use ash::vk;
use gpu_allocator::vulkan::{Allocator, AllocatorCreateDesc};
use std::mem::ManuallyDrop;
use std::sync::{Arc, Mutex, MutexGuard};

/// An owned `VkDevice` with its compute queue and allocator.
pub struct Device {
    allocator: ManuallyDrop<Mutex<Allocator>>,
    raw: ash::Device,
    queue: Mutex<vk::Queue>,
    queue_family: u32,
    physical: vk::PhysicalDevice,
    info: DeviceInfo,
    instance: Arc<Instance>,
}

impl Device {
    /// Selects a device and creates it.
    pub fn new(instance: Arc<Instance>, selector: &DeviceSelector) -> Result<Arc<Self>> {
        let (physical, info) = select(&instance, selector)?;
        Self::create(instance, physical, info)
    }

    fn create(instance: Arc<Instance>, physical: vk::PhysicalDevice, info: DeviceInfo) -> Result<Arc<Self>> {
        let raw_instance = instance.raw();
        // SAFETY: plain query.
        let families = unsafe { raw_instance.get_physical_device_queue_family_properties(physical) };
        let queue_family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| Error::DeviceUnusable {
                device: info.name.clone(),
                missing: vec!["a compute queue".into()],
            })? as u32;

        let uses = |t: ComponentType| info.configs.all().any(|c| c.component_type == t || c.result_type == t);
        let f16 = uses(ComponentType::F16);
        let int8 = uses(ComponentType::I8) || uses(ComponentType::U8);
        let bf16 = uses(ComponentType::Bf16);
        let t = |on: bool| if on { vk::TRUE } else { vk::FALSE };
        // The workgroup-scope kernels read A and B through arrays of their element type.
        let cm2 = info.cooperative_matrix2.as_ref().is_some_and(|c| c.usable());
        let int8_storage = int8 && cm2 && info.features.storage_buffer_8bit_access;
        // f16 configs imply 16-bit storage (the config filter requires it).
        let storage16 = f16 || (bf16 && cm2 && info.features.storage_buffer_16bit_access);

        let mut f11 = vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(storage16);
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
            .shader_float16(f16)
            .shader_int8(int8)
            .storage_buffer8_bit_access(int8_storage)
            .vulkan_memory_model(true)
            .vulkan_memory_model_device_scope(true);
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default()
            .subgroup_size_control(true)
            .compute_full_subgroups(true);
        let mut fcm = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(true);
        let mut fbf = Bf16Features {
            shader_bfloat16_type: t(bf16),
            shader_bfloat16_cooperative_matrix: t(bf16),
            ..Default::default()
        };
        let mut extensions = vec![ash::khr::cooperative_matrix::NAME.as_ptr()];
        let priorities = [1.0f32];
        let queue_info = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities)];
        let mut create = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_info)
            .push_next(&mut f11)
            .push_next(&mut f12)
            .push_next(&mut f13)
            .push_next(&mut fcm);
        if bf16 {
            extensions.push(EXT_SHADER_BFLOAT16.as_ptr());
            create = create.push_next(&mut fbf);
        }
        let mut fcm2 = nv_coopmat2::Features::for_kernels();
        if cm2 {
            extensions.push(nv_coopmat2::EXTENSION.as_ptr());
            create = create.push_next(&mut fcm2);
        }
        // Kernel statistics (registers, spills) for tuning, where the driver offers them.
        let mut fpe =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
        if info.features.pipeline_executable_info {
            extensions.push(ash::khr::pipeline_executable_properties::NAME.as_ptr());
            create = create.push_next(&mut fpe);
        }
        let create = create.enabled_extension_names(&extensions);
        // SAFETY: every pointer in `create` outlives the call; the features requested were
        // reported as supported (the device passed its requirements).
        let raw = unsafe { raw_instance.create_device(physical, &create, None) }
            .map_err(|r| Error::vk("vkCreateDevice", r))?;
        // SAFETY: the family was created with one queue.
        let queue = unsafe { raw.get_device_queue(queue_family, 0) };
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
                // SAFETY: nothing was created from the device yet.
                unsafe { raw.destroy_device(None) };
                return Err(Error::Allocation {
                    what: "allocator",
                    message: e.to_string(),
                });
            }
        };
        Ok(Arc::new(Self {
            allocator: ManuallyDrop::new(Mutex::new(allocator)),
            raw,
            queue: Mutex::new(queue),
            queue_family,
            physical,
            info,
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

    pub(crate) fn queue(&self) -> MutexGuard<'_, vk::Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn allocator(&self) -> MutexGuard<'_, Allocator> {
        self.allocator.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: every buffer and pipeline holds an Arc<Device>, so none is alive; the allocator
        // must go before the device it allocates from.
        unsafe {
            let _ = self.raw.device_wait_idle();
            ManuallyDrop::drop(&mut self.allocator);
            self.raw.destroy_device(None);
        }
    }
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
            matches.sort_by_key(|d| (!d.usable(), d.kind, d.index));
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
