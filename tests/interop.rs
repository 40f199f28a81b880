//! Bring your own device: the test creates its own ash instance (validation layer on), device,
//! buffers and command buffer, records a fill, vk-sgmat's GEMM and a copy into that command
//! buffer, submits on its own queue and checks every element exactly. Also: the caller's
//! buffers in a vk-sgmat stream, and a device missing what vk-sgmat needs.

#[path = "../support/verify/mod.rs"]
#[allow(dead_code)]
mod verify;
use crate::verify::Rng;
use ash::vk;
use half::f16;
use std::ffi::{c_void, CStr, CString};
use std::sync::Mutex;
use vk_sgmat::device::{AdoptedDevice, DeviceRequirements};
use vk_sgmat::Matmul;
use vk_sgmat::{BufferMatrix, Context, ContextOptions, Error, GemmOptions, Layout};

static MESSAGES: Mutex<Vec<String>> = Mutex::new(Vec::new());

unsafe extern "system" fn on_message(
    _severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the layer passes valid callback data for the call's duration.
    let text = unsafe { CStr::from_ptr((*data).p_message) }
        .to_string_lossy()
        .into_owned();
    MESSAGES.lock().unwrap().push(text);
    vk::FALSE
}

/// The caller's Vulkan objects, as a renderer would hold them.
struct App {
    entry: ash::Entry,
    instance: ash::Instance,
    messenger: (ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT),
    physical: vk::PhysicalDevice,
    family: u32,
}

impl App {
    fn new() -> App {
        // SAFETY: loading the loader the cargo runner points at.
        let entry =
            unsafe { ash::Entry::load() }.expect("a Vulkan loader (run through cargo: the runner provides lavapipe)");
        let layers = [c"VK_LAYER_KHRONOS_validation".as_ptr()];
        let extensions = [ash::ext::debug_utils::NAME.as_ptr()];
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let info = vk::InstanceCreateInfo::default()
            .application_info(&app)
            .enabled_layer_names(&layers)
            .enabled_extension_names(&extensions);
        // SAFETY: valid create info.
        let instance = unsafe { entry.create_instance(&info, None) }.expect("instance with the validation layer");
        let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
        let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
            .message_severity(
                vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
            )
            .message_type(vk::DebugUtilsMessageTypeFlagsEXT::GENERAL | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION)
            .pfn_user_callback(Some(on_message));
        // SAFETY: valid create info.
        let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) }.unwrap();
        // SAFETY: plain queries.
        let physical = unsafe { instance.enumerate_physical_devices() }.unwrap()[0];
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .expect("a compute queue") as u32;
        App {
            entry,
            instance,
            messenger: (loader, messenger),
            physical,
            family,
        }
    }

    /// A device with what vk-sgmat asks for (minus `drop_extension`, to test the refusal, and
    /// the optional packed dot products where `dot_products` is off).
    fn device(&self, drop_extension: Option<&CStr>, dot_products: bool) -> (ash::Device, AdoptedDevice) {
        // SAFETY: valid handles.
        let (mut req, _info) =
            unsafe { DeviceRequirements::query(&self.entry, &self.instance, self.physical) }.unwrap();
        req.features.shader_integer_dot_product &= dot_products;
        let extensions: Vec<&CStr> = req
            .extensions
            .iter()
            .copied()
            .filter(|e| Some(*e) != drop_extension)
            .collect();
        let names: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
        let priorities = [1.0];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(self.family)
            .queue_priorities(&priorities)];
        let mut chain = req.feature_chain();
        let info = chain
            .push_onto(vk::DeviceCreateInfo::default().queue_create_infos(&queues))
            .enabled_extension_names(&names);
        // SAFETY: valid create info; the features were reported by the device.
        let device = unsafe { self.instance.create_device(self.physical, &info, None) }.unwrap();
        let adopted = AdoptedDevice {
            entry: self.entry.clone(),
            instance: self.instance.clone(),
            physical_device: self.physical,
            device: device.clone(),
            queue_family_index: self.family,
            queue_index: 0,
            enabled_extensions: extensions.iter().map(|e| CString::from(*e)).collect(),
            enabled_features: req.features,
        };
        (device, adopted)
    }
}

impl Drop for App {
    fn drop(&mut self) {
        // SAFETY: every object made from the instance is gone.
        unsafe {
            self.messenger.0.destroy_debug_utils_messenger(self.messenger.1, None);
            self.instance.destroy_instance(None);
        }
    }
}

/// A host-visible buffer of the caller's, mapped.
struct HostBuffer {
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
    size: u64,
}

impl HostBuffer {
    fn new(app: &App, device: &ash::Device, size: u64, usage: vk::BufferUsageFlags) -> HostBuffer {
        // SAFETY: valid create infos on a live device; memory is host-visible and coherent.
        unsafe {
            let buffer = device
                .create_buffer(&vk::BufferCreateInfo::default().size(size).usage(usage), None)
                .unwrap();
            let req = device.get_buffer_memory_requirements(buffer);
            let props = app.instance.get_physical_device_memory_properties(app.physical);
            let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
            let index = (0..props.memory_type_count)
                .find(|&i| {
                    req.memory_type_bits & (1 << i) != 0 && props.memory_types[i as usize].property_flags.contains(want)
                })
                .unwrap();
            let memory = device
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(req.size)
                        .memory_type_index(index),
                    None,
                )
                .unwrap();
            device.bind_buffer_memory(buffer, memory, 0).unwrap();
            let ptr = device
                .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                .unwrap() as *mut u8;
            std::ptr::write_bytes(ptr, 0, size as usize);
            HostBuffer {
                buffer,
                memory,
                ptr,
                size,
            }
        }
    }

    fn write<T: bytemuck::Pod>(&self, offset: usize, data: &[T]) {
        let bytes = bytemuck::cast_slice::<T, u8>(data);
        assert!(offset + bytes.len() <= self.size as usize);
        // SAFETY: inside the mapped range; the GPU is not using the buffer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) };
    }

    fn read_f32(&self, offset: usize, count: usize) -> Vec<f32> {
        let mut out = vec![0f32; count];
        // SAFETY: inside the mapped range; the GPU finished writing it.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.add(offset), out.as_mut_ptr() as *mut u8, count * 4);
        }
        out
    }

    fn destroy(self, device: &ash::Device) {
        // SAFETY: no longer in use.
        unsafe {
            device.destroy_buffer(self.buffer, None);
            device.free_memory(self.memory, None);
        }
    }
}

fn small_ints(rng: &mut Rng, n: usize) -> Vec<f16> {
    (0..n)
        .map(|_| f16::from_f32((rng.next_u64() % 7) as f32 - 3.0))
        .collect()
}

fn barrier(device: &ash::Device, cmd: vk::CommandBuffer, src: vk::PipelineStageFlags, dst: vk::PipelineStageFlags) {
    let mb = [vk::MemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)];
    // SAFETY: recording state.
    unsafe { device.cmd_pipeline_barrier(cmd, src, dst, vk::DependencyFlags::empty(), &mb, &[], &[]) };
}

#[test]
fn gemm_recorded_into_the_callers_command_buffer() {
    let app = App::new();
    let (device, adopted) = app.device(None, true);
    // SAFETY: the handles are valid and outlive the context (dropped before the device below).
    let ctx = unsafe { Context::from_raw(adopted, ContextOptions::default()) }.unwrap();
    let mut rng = Rng::new(Rng::fresh_seed());
    // A 45x21 row-major at offset 64 (ld 24), B 21x38 column-major (ld 24), C 45x38 (ld 40) at 32.
    let (m, k, n) = (45, 21, 38);
    let (lda, ldb, ldc) = (24, 24, 40);
    let a_host = small_ints(&mut rng, m * k);
    let b_host = small_ints(&mut rng, k * n); // column-major: element (r, c) at c * k + r
    let pad = |rows: usize, cols: usize, ld: usize, v: &[f16]| -> Vec<f16> {
        let mut out = vec![f16::ZERO; rows * ld];
        for r in 0..rows {
            out[r * ld..r * ld + cols].copy_from_slice(&v[r * cols..(r + 1) * cols]);
        }
        out
    };
    let storage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
    let a_buf = HostBuffer::new(&app, &device, 64 + (m * lda * 2) as u64, storage);
    let b_buf = HostBuffer::new(&app, &device, (n * ldb * 2) as u64, storage);
    let c_size = 32 + (m * ldc * 4) as u64;
    let c_buf = HostBuffer::new(&app, &device, c_size, storage | vk::BufferUsageFlags::TRANSFER_SRC);
    let readback = HostBuffer::new(&app, &device, c_size, vk::BufferUsageFlags::TRANSFER_DST);
    a_buf.write(64, &pad(m, k, lda, &a_host));
    b_buf.write(0, &pad(n, k, ldb, &b_host));
    // SAFETY: the buffers are valid, sized as stated, and zero-padded.
    let (a, b, mut c) = unsafe {
        (
            BufferMatrix::<f16>::new(a_buf.buffer, a_buf.size, 64, (m, k), Layout::RowMajor, lda).unwrap(),
            BufferMatrix::<f16>::new(b_buf.buffer, b_buf.size, 0, (k, n), Layout::ColMajor, ldb).unwrap(),
            BufferMatrix::<f32>::new(c_buf.buffer, c_buf.size, 32, (m, n), Layout::RowMajor, ldc).unwrap(),
        )
    };

    // SAFETY: plain object creation on the caller's device.
    let (pool, cmd, fence, queue) = unsafe {
        let pool = device
            .create_command_pool(
                &vk::CommandPoolCreateInfo::default().queue_family_index(app.family),
                None,
            )
            .unwrap();
        let cmd = device
            .allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(pool)
                    .command_buffer_count(1),
            )
            .unwrap()[0];
        let fence = device.create_fence(&vk::FenceCreateInfo::default(), None).unwrap();
        (pool, cmd, fence, device.get_device_queue(app.family, 0))
    };
    let options = GemmOptions {
        alpha: 2.0,
        ..Default::default()
    };
    // SAFETY: `cmd` is recording on a compute family; the context outlives its execution.
    unsafe {
        device
            .begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
            .unwrap();
        // The caller's own work before: poison C with NaN.
        device.cmd_fill_buffer(cmd, c_buf.buffer, 0, vk::WHOLE_SIZE, 0x7fc0_0000);
        barrier(
            &device,
            cmd,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::COMPUTE_SHADER,
        );
        // A bad call records nothing and says why.
        let mut wrong =
            BufferMatrix::<f32>::new(c_buf.buffer, c_buf.size, 32, (m, n - 1), Layout::RowMajor, ldc).unwrap();
        assert!(matches!(
            ctx.prepare(&Matmul::with_options(&options), &a, &b, &mut wrong)
                .and_then(|p| p.record(cmd)),
            Err(Error::ShapeMismatch(_))
        ));
        let gemm = ctx.prepare(&Matmul::with_options(&options), &a, &b, &mut c).unwrap();
        let recorded = gemm.record(cmd).unwrap();
        barrier(
            &device,
            cmd,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            vk::PipelineStageFlags::TRANSFER,
        );
        let region = [vk::BufferCopy::default().size(c_size)];
        device.cmd_copy_buffer(cmd, c_buf.buffer, readback.buffer, &region);
        barrier(
            &device,
            cmd,
            vk::PipelineStageFlags::TRANSFER,
            vk::PipelineStageFlags::HOST,
        );
        device.end_command_buffer(cmd).unwrap();
        let cmds = [cmd];
        device
            .queue_submit(queue, &[vk::SubmitInfo::default().command_buffers(&cmds)], fence)
            .unwrap();
        device.wait_for_fences(&[fence], true, 60_000_000_000).unwrap();
        drop(recorded);
    }
    let got = readback.read_f32(32, m * ldc);
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|p| 2.0 * a_host[i * k + p].to_f64() * b_host[j * k + p].to_f64())
                .sum();
            assert_eq!(f64::from(got[i * ldc + j]), want, "C[{i}][{j}]");
        }
    }

    // The same buffers in a vk-sgmat stream: C = A*B + C (C is now 2AB, so the result is 3AB).
    let mut s = ctx.stream().unwrap();
    s.run(
        &Matmul::with_options(&GemmOptions {
            beta: 1.0,
            ..Default::default()
        }),
        &a,
        &b,
        &mut c,
    )
    .unwrap();
    s.synchronize().unwrap();
    let got = c_buf.read_f32(32, m * ldc);
    for i in 0..m {
        for j in 0..n {
            let want: f64 = (0..k)
                .map(|p| 3.0 * a_host[i * k + p].to_f64() * b_host[j * k + p].to_f64())
                .sum();
            assert_eq!(f64::from(got[i * ldc + j]), want, "stream C[{i}][{j}]");
        }
    }
    drop(s);
    drop(ctx);
    // SAFETY: everything is idle; the context never destroyed the caller's device.
    unsafe {
        device.destroy_fence(fence, None);
        device.destroy_command_pool(pool, None);
    }
    for b in [a_buf, b_buf, c_buf, readback] {
        b.destroy(&device);
    }
    // SAFETY: every object of the device is destroyed.
    unsafe { device.destroy_device(None) };
    let messages = MESSAGES.lock().unwrap().clone();
    assert!(messages.is_empty(), "validation messages:\n{}", messages.join("\n"));
}

#[test]
fn a_device_without_what_vk_sgmat_needs_is_refused_by_name() {
    let app = App::new();
    let (device, adopted) = app.device(Some(ash::khr::push_descriptor::NAME), true);
    // SAFETY: valid handles.
    let e = unsafe { Context::from_raw(adopted, ContextOptions::default()) }.unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, Error::DeviceUnusable { .. }) && msg.contains("VK_KHR_push_descriptor"),
        "{msg}"
    );
    // Bad views of a buffer are typed errors too.
    // SAFETY: the buffer handle is never used (every call fails its checks).
    unsafe {
        let null = vk::Buffer::null();
        assert!(
            BufferMatrix::<f16>::new(null, 1024, 8, (4, 4), Layout::RowMajor, 8).is_err(),
            "offset 8"
        );
        assert!(
            BufferMatrix::<f16>::new(null, 1024, 0, (4, 4), Layout::RowMajor, 4).is_err(),
            "ld of 8 bytes"
        );
        assert!(
            BufferMatrix::<f16>::new(null, 1024, 0, (4, 9), Layout::RowMajor, 8).is_err(),
            "ld < cols"
        );
        assert!(
            BufferMatrix::<f16>::new(null, 100, 0, (8, 8), Layout::RowMajor, 8).is_err(),
            "too small"
        );
        assert!(BufferMatrix::<f16>::new(null, 128, 0, (8, 8), Layout::RowMajor, 8).is_ok());
    }
    // SAFETY: nothing was made from the device.
    unsafe { device.destroy_device(None) };
    let messages = MESSAGES.lock().unwrap().clone();
    assert!(messages.is_empty(), "validation messages:\n{}", messages.join("\n"));
}

/// Packed dot products are optional: a device created without them is adopted, and its 8-bit
/// GEMMs without matrix units widen to 32-bit products instead, exact.
#[test]
fn a_device_without_packed_dot_products_widens_8_bit_operands() {
    let app = App::new();
    let (device, adopted) = app.device(None, false);
    let options = ContextOptions {
        validation: true,
        matrix_units: false,
        ..Default::default()
    };
    // SAFETY: valid handles, the device outlives the context (dropped first below).
    let ctx = unsafe { Context::from_raw(adopted, options) }.unwrap();
    assert!(!ctx.device_info().features.shader_integer_dot_product);
    let plan = ctx
        .plan::<i8, i8, i32>(&Matmul::new(), (64, 64, 64), (Layout::RowMajor, Layout::ColMajor))
        .unwrap();
    assert_eq!(plan.main_kernel().loads, [vk_sgmat::kernel::Load::Widen; 2]);
    let mut rng = Rng::new(Rng::fresh_seed());
    for layouts in [
        (Layout::RowMajor, Layout::ColMajor),
        (Layout::ColMajor, Layout::RowMajor),
    ] {
        let check = crate::verify::run_random_gemm::<i8, i8, i32>(
            &ctx,
            &mut rng,
            (67, 45, 1031),
            layouts,
            3,
            &GemmOptions::default(),
            usize::MAX,
        )
        .unwrap();
        assert!(check.passed, "{layouts:?}: {check:?}");
    }
    assert!(ctx.validation_messages().messages().is_empty());
    drop(ctx);
    // SAFETY: the context and everything made from the device are gone.
    unsafe { device.destroy_device(None) };
    let messages = MESSAGES.lock().unwrap().clone();
    assert!(messages.is_empty(), "validation messages:\n{}", messages.join("\n"));
}
