//! Bring your own device: an application that owns its Vulkan instance, device, queue, buffers
//! and command buffer (as a renderer or simulation does) asks vk-sgmat what to enable, creates
//! its device, and records vk-sgmat's GEMM between its own commands in its own command buffer.
//! The synchronisation contract is in docs/runtime.md.
use ash::vk;
use half::f16;
use std::ffi::CString;
use vk_sgmat::device::{AdoptedDevice, DeviceRequirements};
use vk_sgmat::{BufferMatrix, Context, ContextOptions, Layout, Matmul};

fn main() -> anyhow::Result<()> {
    // SAFETY (whole example): every handle is created here, used while valid, and destroyed in
    // reverse order of creation; the context is dropped before the device.
    unsafe {
        let entry = ash::Entry::load()?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)?;
        let physical = instance.enumerate_physical_devices()?[0];
        let family = instance
            .get_physical_device_queue_family_properties(physical)
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or_else(|| anyhow::anyhow!("no compute queue"))? as u32;

        // 1. What vk-sgmat needs on this GPU, added to our own vkCreateDevice.
        let (req, info) = DeviceRequirements::query(&entry, &instance, physical)?;
        println!("device: {}; vk-sgmat needs {:?}", info.name, req.extensions);
        let names: Vec<_> = req.extensions.iter().map(|e| e.as_ptr()).collect();
        let priorities = [1.0];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&priorities)];
        let mut features = req.feature_chain();
        let create = features
            .push_onto(vk::DeviceCreateInfo::default().queue_create_infos(&queues))
            .enabled_extension_names(&names);
        let device = instance.create_device(physical, &create, None)?;
        let queue = device.get_device_queue(family, 0);

        // 2. A context on our device (it never destroys what it did not create).
        let ctx = Context::from_raw(
            AdoptedDevice {
                entry: entry.clone(),
                instance: instance.clone(),
                physical_device: physical,
                device: device.clone(),
                queue_family_index: family,
                queue_index: 0,
                enabled_extensions: req.extensions.iter().map(|e| CString::from(*e)).collect(),
                enabled_features: req.features,
            },
            ContextOptions::default(),
        )?;

        // 3. Our own buffers: A (m x k) and B (k x n) f16, C (m x n) f32, one host-visible buffer.
        let (m, n, k) = (32, 24, 16); // rows of 16-byte multiples: no padding needed
        let (a_off, b_off, c_off) = (0u64, (m * k * 2) as u64, (m * k * 2 + k * n * 2) as u64);
        let size = c_off + (m * n * 4) as u64;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        let buffer = device.create_buffer(&vk::BufferCreateInfo::default().size(size).usage(usage), None)?;
        let needs = device.get_buffer_memory_requirements(buffer);
        let props = instance.get_physical_device_memory_properties(physical);
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let memory_type = (0..props.memory_type_count)
            .find(|&i| {
                needs.memory_type_bits & (1 << i) != 0 && props.memory_types[i as usize].property_flags.contains(host)
            })
            .ok_or_else(|| anyhow::anyhow!("no host-visible memory"))?;
        let memory = device.allocate_memory(
            &vk::MemoryAllocateInfo::default()
                .allocation_size(needs.size)
                .memory_type_index(memory_type),
            None,
        )?;
        device.bind_buffer_memory(buffer, memory, 0)?;
        let ptr = device.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())? as *mut u8;
        let a: Vec<f16> = (0..m * k).map(|i| f16::from_f32((i % 5) as f32 - 2.0)).collect();
        let b: Vec<f16> = (0..k * n).map(|i| f16::from_f32((i % 3) as f32 - 1.0)).collect();
        std::ptr::copy_nonoverlapping(a.as_ptr() as *const u8, ptr.add(a_off as usize), m * k * 2);
        std::ptr::copy_nonoverlapping(b.as_ptr() as *const u8, ptr.add(b_off as usize), k * n * 2);
        let am = BufferMatrix::<f16>::new(buffer, size, a_off, (m, k), Layout::RowMajor, k)?;
        let bm = BufferMatrix::<f16>::new(buffer, size, b_off, (k, n), Layout::RowMajor, n)?;
        let mut cm = BufferMatrix::<f32>::new(buffer, size, c_off, (m, n), Layout::RowMajor, n)?;

        // 4. Our command buffer: our own work, a barrier, vk-sgmat's GEMM, a barrier to the host.
        let pool =
            device.create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(family), None)?;
        let cmd = device.allocate_command_buffers(
            &vk::CommandBufferAllocateInfo::default()
                .command_pool(pool)
                .command_buffer_count(1),
        )?[0];
        device.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())?;
        device.cmd_fill_buffer(cmd, buffer, c_off, (m * n * 4) as u64, 0); // stands for our own work
        let barrier = |src, dst, dst_access| {
            let mb = [vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(dst_access)];
            device.cmd_pipeline_barrier(cmd, src, dst, vk::DependencyFlags::empty(), &mb, &[], &[]);
        };
        barrier(
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
        );
        let gemm = ctx.prepare(&Matmul::new(), &am, &bm, &mut cm)?;
        let recorded = gemm.record(cmd)?;
        barrier(
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::PipelineStageFlags::HOST,
            vk::AccessFlags::HOST_READ,
        );
        device.end_command_buffer(cmd)?;
        let fence = device.create_fence(&vk::FenceCreateInfo::default(), None)?;
        let cmds = [cmd];
        device.queue_submit(queue, &[vk::SubmitInfo::default().command_buffers(&cmds)], fence)?;
        device.wait_for_fences(&[fence], true, u64::MAX)?;
        drop(recorded); // the command buffer has run: its scratch (if any) may go

        let c = std::slice::from_raw_parts(ptr.add(c_off as usize) as *const f32, m * n);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = (0..k).map(|p| a[i * k + p].to_f32() * b[p * n + j].to_f32()).sum();
                anyhow::ensure!(c[i * n + j] == want, "C[{i}][{j}] = {} != {want}", c[i * n + j]);
            }
        }
        println!(
            "GEMM recorded into our own command buffer: all {} elements exact",
            m * n
        );

        drop(ctx);
        device.destroy_fence(fence, None);
        device.destroy_command_pool(pool, None);
        device.destroy_buffer(buffer, None);
        device.free_memory(memory, None);
        device.destroy_device(None);
        instance.destroy_instance(None);
    }
    Ok(())
}
