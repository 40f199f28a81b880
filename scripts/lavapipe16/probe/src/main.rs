//! Creates a compute pipeline from a SPIR-V file on device 0 with the cooperative-matrix
//! features on, runs it once on 8x8 f16 inputs, prints C[0][0]. Args: SPV [required_size] [full].
use ash::vk;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let words: Vec<u32> = std::fs::read(&args[1])
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let required: u32 = args.get(2).map_or(0, |s| s.parse().unwrap());
    let full = args.get(3).is_some_and(|s| s == "full");
    unsafe {
        let entry = ash::Entry::load().unwrap();
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = entry
            .create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)
            .unwrap();
        let pd = instance.enumerate_physical_devices().unwrap()[0];
        let mut sub = vk::PhysicalDeviceSubgroupProperties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sub);
        instance.get_physical_device_properties2(pd, &mut p2);
        let name = std::ffi::CStr::from_ptr(p2.properties.device_name.as_ptr());
        println!("device {name:?}, subgroup size {}", sub.subgroup_size);
        let mut cm = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(true);
        let mut v11 = vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(true);
        let mut v12 = vk::PhysicalDeviceVulkan12Features::default()
            .shader_float16(true)
            .vulkan_memory_model(true)
            .vulkan_memory_model_device_scope(true);
        let mut v13 = vk::PhysicalDeviceVulkan13Features::default()
            .subgroup_size_control(true)
            .compute_full_subgroups(true);
        let exts = [ash::khr::cooperative_matrix::NAME.as_ptr()];
        let prio = [1.0f32];
        let q = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(0)
            .queue_priorities(&prio)];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&q)
            .enabled_extension_names(&exts)
            .push_next(&mut cm)
            .push_next(&mut v11)
            .push_next(&mut v12)
            .push_next(&mut v13);
        let device = instance.create_device(pd, &info, None).unwrap();
        let module = device
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
            .unwrap();
        let bindings: Vec<_> = (0..3)
            .map(|i| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(i)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let dsl = device
            .create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)
            .unwrap();
        let layouts = [dsl];
        let pl = device
            .create_pipeline_layout(&vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts), None)
            .unwrap();
        let size = sub.subgroup_size.max(required);
        let spec_entry = [vk::SpecializationMapEntry::default().constant_id(0).offset(0).size(4)];
        let spec_data = size.to_le_bytes();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&spec_entry)
            .data(&spec_data);
        let mut req = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default().required_subgroup_size(required);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main")
            .specialization_info(&spec);
        if full {
            stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS);
        }
        if required > 0 {
            stage = stage.push_next(&mut req);
        }
        println!("creating the pipeline (local size {size}, required subgroup size {required}, full subgroups {full})");
        let pipe = device
            .create_compute_pipelines(
                vk::PipelineCache::null(),
                &[vk::ComputePipelineCreateInfo::default().stage(stage).layout(pl)],
                None,
            )
            .unwrap()[0];
        println!("pipeline created");
        // Run it: A = B = identity-ish ones, C[0][0] = 8.
        let mem_props = instance.get_physical_device_memory_properties(pd);
        let mut bufs = Vec::new();
        for bytes in [128u64, 128, 256] {
            let b = device
                .create_buffer(
                    &vk::BufferCreateInfo::default()
                        .size(bytes)
                        .usage(vk::BufferUsageFlags::STORAGE_BUFFER),
                    None,
                )
                .unwrap();
            let r = device.get_buffer_memory_requirements(b);
            let t = (0..mem_props.memory_type_count)
                .find(|&i| {
                    r.memory_type_bits & (1 << i) != 0
                        && mem_props.memory_types[i as usize]
                            .property_flags
                            .contains(vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT)
                })
                .unwrap();
            let m = device
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(r.size)
                        .memory_type_index(t),
                    None,
                )
                .unwrap();
            device.bind_buffer_memory(b, m, 0).unwrap();
            let p = device.map_memory(m, 0, bytes, vk::MemoryMapFlags::empty()).unwrap();
            if bytes == 128 {
                std::slice::from_raw_parts_mut(p as *mut u16, 64).fill(half::f16::ONE.to_bits());
            } else {
                std::slice::from_raw_parts_mut(p as *mut f32, 64).fill(-1.0);
            }
            bufs.push((b, p));
        }
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(3)];
        let dp = device
            .create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes),
                None,
            )
            .unwrap();
        let set = device
            .allocate_descriptor_sets(
                &vk::DescriptorSetAllocateInfo::default()
                    .descriptor_pool(dp)
                    .set_layouts(&layouts),
            )
            .unwrap()[0];
        let infos: Vec<_> = bufs
            .iter()
            .map(|(b, _)| [vk::DescriptorBufferInfo::default().buffer(*b).range(vk::WHOLE_SIZE)])
            .collect();
        let writes: Vec<_> = infos
            .iter()
            .enumerate()
            .map(|(i, bi)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(bi)
            })
            .collect();
        device.update_descriptor_sets(&writes, &[]);
        let pool = device
            .create_command_pool(&vk::CommandPoolCreateInfo::default().queue_family_index(0), None)
            .unwrap();
        let cmd = device
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .command_buffer_count(1),
            )
            .unwrap()[0];
        device
            .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
            .unwrap();
        device.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipe);
        device.cmd_bind_descriptor_sets(cmd, vk::PipelineBindPoint::COMPUTE, pl, 0, &[set], &[]);
        device.cmd_dispatch(cmd, 1, 1, 1);
        device.end_command_buffer(cmd).unwrap();
        let queue = device.get_device_queue(0, 0);
        let cmds = [cmd];
        device
            .queue_submit(
                queue,
                &[vk::SubmitInfo::default().command_buffers(&cmds)],
                vk::Fence::null(),
            )
            .unwrap();
        device.queue_wait_idle(queue).unwrap();
        let c = std::slice::from_raw_parts(bufs[2].1 as *const f32, 64);
        println!("C[0][0] = {} (expected 8), C[7][7] = {}", c[0], c[63]);
    }
}
