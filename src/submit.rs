//! Submission on our own queue: one command buffer per call, recorded by `crate::record`, and a
//! fence wait with a time limit (a GPU that does not answer becomes an error, not a hang).

use crate::device::Device;
use crate::error::{Error, Result};
use crate::kernel::BINDINGS;
use crate::record::Recording;
use ash::vk;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a submission may run before it is reported as failed.
pub(crate) const SUBMIT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a submission's fence is polled before blocking.
const SPIN: Duration = Duration::from_micros(500);

/// Owns the command pool and the objects every submission reuses (one command buffer, one fence,
/// a descriptor pool that grows on demand): one submission at a time per context, and no Vulkan
/// object is created or destroyed on the hot path.
pub(crate) struct Submitter {
    state: Mutex<SubmitState>,
    device: Arc<Device>,
}

struct SubmitState {
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    descriptors: vk::DescriptorPool,
    descriptor_capacity: u32,
    /// Set when a submission timed out: its command buffer may still run, so nothing is reused.
    poisoned: bool,
}

fn create_descriptor_pool(device: &Device, sets: u32) -> Result<vk::DescriptorPool> {
    let sizes = [vk::DescriptorPoolSize::default()
        .ty(vk::DescriptorType::STORAGE_BUFFER)
        .descriptor_count(sets * BINDINGS)];
    let info = vk::DescriptorPoolCreateInfo::default()
        .max_sets(sets)
        .pool_sizes(&sizes);
    // SAFETY: valid create info.
    unsafe { device.raw().create_descriptor_pool(&info, None) }.map_err(|r| Error::vk("vkCreateDescriptorPool", r))
}

impl Submitter {
    pub fn new(device: Arc<Device>) -> Result<Self> {
        let raw = device.raw();
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(device.queue_family())
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create info on a live device.
        let pool = unsafe { raw.create_command_pool(&info, None) }.map_err(|r| Error::vk("vkCreateCommandPool", r))?;
        let mut state = SubmitState {
            pool,
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            descriptors: vk::DescriptorPool::null(),
            descriptor_capacity: 0,
            poisoned: false,
        };
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        let submitter = |state| Self {
            state: Mutex::new(state),
            device: device.clone(),
        };
        // SAFETY: the pool is ours alone here.
        match unsafe { raw.allocate_command_buffers(&info) } {
            Ok(c) => state.cmd = c[0],
            Err(r) => {
                drop(submitter(state));
                return Err(Error::vk("vkAllocateCommandBuffers", r));
            }
        }
        // SAFETY: plain creation.
        match unsafe { raw.create_fence(&vk::FenceCreateInfo::default(), None) } {
            Ok(f) => state.fence = f,
            Err(r) => {
                drop(submitter(state));
                return Err(Error::vk("vkCreateFence", r));
            }
        }
        match create_descriptor_pool(&device, 64) {
            Ok(d) => {
                state.descriptors = d;
                state.descriptor_capacity = 64;
            }
            Err(e) => {
                drop(submitter(state));
                return Err(e);
            }
        }
        Ok(submitter(state))
    }

    /// Records with `record` (which may bind up to `max_sets` descriptor sets), submits, and waits.
    pub fn run(
        &self,
        set_layout: vk::DescriptorSetLayout,
        max_sets: u32,
        record: impl FnOnce(&mut Recording<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.poisoned {
            return Err(Error::Vulkan {
                call: "submission (an earlier GEMM did not finish; create a new Context)",
                result: vk::Result::TIMEOUT,
            });
        }
        let raw = self.device.raw();
        if max_sets > st.descriptor_capacity {
            let capacity = max_sets.next_power_of_two();
            let pool = create_descriptor_pool(&self.device, capacity)?;
            // SAFETY: no submission is pending (the previous one waited on its fence).
            unsafe { raw.destroy_descriptor_pool(st.descriptors, None) };
            st.descriptors = pool;
            st.descriptor_capacity = capacity;
        }
        // SAFETY: the previous submission completed, so the pool's sets and the command buffer are
        // no longer in use.
        unsafe {
            raw.reset_descriptor_pool(st.descriptors, vk::DescriptorPoolResetFlags::empty())
                .map_err(|r| Error::vk("vkResetDescriptorPool", r))?;
            raw.reset_command_buffer(st.cmd, vk::CommandBufferResetFlags::empty())
                .map_err(|r| Error::vk("vkResetCommandBuffer", r))?;
        }
        let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: the command buffer is in the initial state.
        unsafe { raw.begin_command_buffer(st.cmd, &begin) }.map_err(|r| Error::vk("vkBeginCommandBuffer", r))?;
        let mut rec = Recording::new(&self.device, st.cmd, st.descriptors, set_layout);
        let recorded = record(&mut rec);
        // SAFETY: recording state; ending also on the error path leaves the buffer resettable.
        let ended = unsafe { raw.end_command_buffer(st.cmd) };
        recorded?;
        ended.map_err(|r| Error::vk("vkEndCommandBuffer", r))?;
        let cmds = [st.cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        {
            let queue = self.device.queue();
            // SAFETY: the queue is externally synchronised by its mutex; the command buffer is
            // complete and every resource it uses outlives the fence wait below.
            unsafe { raw.queue_submit(*queue, &submit, st.fence) }.map_err(|r| Error::vk("vkQueueSubmit", r))?;
        }
        // Short GEMMs finish in microseconds: poll briefly before a blocking wait, whose wake-up
        // alone costs tens of microseconds.
        let spin_until = std::time::Instant::now() + SPIN;
        let mut waited = Err(vk::Result::NOT_READY);
        while std::time::Instant::now() < spin_until {
            // SAFETY: the fence was submitted above.
            match unsafe { raw.get_fence_status(st.fence) } {
                Ok(true) => {
                    waited = Ok(());
                    break;
                }
                Ok(false) => std::hint::spin_loop(),
                Err(r) => {
                    waited = Err(r);
                    break;
                }
            }
        }
        if waited == Err(vk::Result::NOT_READY) {
            // SAFETY: the fence was submitted above.
            waited = unsafe { raw.wait_for_fences(&[st.fence], true, SUBMIT_TIMEOUT.as_nanos() as u64) };
        }
        match waited {
            Ok(()) => {
                // SAFETY: the fence is signalled and not in use.
                unsafe { raw.reset_fences(&[st.fence]) }.map_err(|r| Error::vk("vkResetFences", r))
            }
            Err(vk::Result::TIMEOUT) => {
                st.poisoned = true;
                Err(Error::Vulkan {
                    call: "vkWaitForFences (GEMM did not finish in time)",
                    result: vk::Result::TIMEOUT,
                })
            }
            Err(r) => Err(Error::vk("vkWaitForFences", r)),
        }
    }
}

impl Drop for Submitter {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if st.poisoned {
            // A command buffer may still be running: leaking beats freeing objects in use.
            return;
        }
        let raw = self.device.raw();
        // SAFETY: every submission waited on its fence; nothing is pending.
        unsafe {
            if st.descriptors != vk::DescriptorPool::null() {
                raw.destroy_descriptor_pool(st.descriptors, None);
            }
            if st.fence != vk::Fence::null() {
                raw.destroy_fence(st.fence, None);
            }
            raw.destroy_command_pool(st.pool, None);
        }
    }
}

/// A timestamp query pool, destroyed on drop.
pub(crate) struct TimestampPool {
    pub raw: vk::QueryPool,
    pub count: u32,
    device: Arc<Device>,
}

impl TimestampPool {
    pub fn new(device: &Arc<Device>, count: u32) -> Result<Self> {
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(count);
        // SAFETY: valid create info.
        let raw =
            unsafe { device.raw().create_query_pool(&info, None) }.map_err(|r| Error::vk("vkCreateQueryPool", r))?;
        Ok(Self {
            raw,
            count,
            device: device.clone(),
        })
    }

    /// The timestamps in ticks (call after the submission that wrote them completed).
    pub fn read(&self) -> Result<Vec<u64>> {
        let mut data = vec![0u64; self.count as usize];
        // SAFETY: every query was written by a completed submission.
        unsafe {
            self.device.raw().get_query_pool_results(
                self.raw,
                0,
                &mut data,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .map_err(|r| Error::vk("vkGetQueryPoolResults", r))?;
        Ok(data)
    }

    /// Seconds between timestamps 2i and 2i+1, for each pair i (after the submission completed).
    pub fn intervals(&self) -> Result<Vec<f64>> {
        let period = f64::from(self.device.info().limits.timestamp_period) * 1e-9;
        Ok(self
            .read()?
            .chunks(2)
            .map(|t| t[1].wrapping_sub(t[0]) as f64 * period)
            .collect())
    }

    /// The median of [`TimestampPool::intervals`].
    pub fn median_interval(&self) -> Result<f64> {
        Ok(median(&mut self.intervals()?))
    }
}

/// Sorts `values` and returns the middle one (the upper middle for an even count; NaN when
/// empty): how vk-sgmat sums up every set of timings.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

impl Drop for TimestampPool {
    fn drop(&mut self) {
        // SAFETY: the submission that used the pool has completed.
        unsafe { self.device.raw().destroy_query_pool(self.raw, None) };
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_is_the_middle_of_the_sorted_values() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
        assert!(median(&mut []).is_nan());
    }
}
