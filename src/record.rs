//! Recording: plan + bindings -> commands in a command buffer, with exactly the barriers the plan
//! needs inside it. Nothing here submits or waits.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::kernel::{self, PushConstants};
use crate::pipeline::Pipelines;
use crate::plan::{GemmPlan, Operand, Window};
use ash::vk;

/// An open command buffer being recorded: ours or the caller's. Bindings are pushed
/// (`VK_KHR_push_descriptor`), so recording needs no descriptor memory that would have to
/// outlive the command buffer.
pub(crate) struct Recording<'a> {
    device: &'a Device,
    cmd: vk::CommandBuffer,
    /// On a copy lane: barriers keep to the stages a copy-only queue has.
    copies_only: bool,
}

/// A pipeline barrier's two halves.
#[derive(Copy, Clone)]
pub(crate) struct Access {
    pub stage: vk::PipelineStageFlags,
    pub access: vk::AccessFlags,
}

impl Access {
    pub const TRANSFER_WRITE: Self = Self {
        stage: vk::PipelineStageFlags::TRANSFER,
        access: vk::AccessFlags::TRANSFER_WRITE,
    };
    pub const SHADER_READ_WRITE: Self = Self {
        stage: vk::PipelineStageFlags::COMPUTE_SHADER,
        access: vk::AccessFlags::from_raw(
            vk::AccessFlags::SHADER_READ.as_raw() | vk::AccessFlags::SHADER_WRITE.as_raw(),
        ),
    };
    pub const HOST_READ: Self = Self {
        stage: vk::PipelineStageFlags::HOST,
        access: vk::AccessFlags::HOST_READ,
    };
    /// Every write vk-sgmat's commands make (copies, fills, kernels).
    pub const ANY_WRITE: Self = Self {
        stage: vk::PipelineStageFlags::from_raw(
            vk::PipelineStageFlags::COMPUTE_SHADER.as_raw() | vk::PipelineStageFlags::TRANSFER.as_raw(),
        ),
        access: vk::AccessFlags::from_raw(
            vk::AccessFlags::SHADER_WRITE.as_raw() | vk::AccessFlags::TRANSFER_WRITE.as_raw(),
        ),
    };
    /// Every access vk-sgmat's commands make.
    pub const ANY: Self = Self {
        stage: Self::ANY_WRITE.stage,
        access: vk::AccessFlags::from_raw(
            vk::AccessFlags::SHADER_READ.as_raw()
                | vk::AccessFlags::SHADER_WRITE.as_raw()
                | vk::AccessFlags::TRANSFER_READ.as_raw()
                | vk::AccessFlags::TRANSFER_WRITE.as_raw(),
        ),
    };
}

impl Access {
    /// The part a copy-only queue has: transfer and host stages (the transfer stage where none
    /// is left: a barrier needs one).
    fn copies_only(self) -> Self {
        let stages = vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::HOST;
        let accesses = vk::AccessFlags::TRANSFER_READ
            | vk::AccessFlags::TRANSFER_WRITE
            | vk::AccessFlags::HOST_READ
            | vk::AccessFlags::HOST_WRITE;
        let stage = match self.stage & stages {
            s if s.is_empty() => vk::PipelineStageFlags::TRANSFER,
            s => s,
        };
        Self {
            stage,
            access: self.access & accesses,
        }
    }
}

impl<'a> Recording<'a> {
    /// Records into `cmd`, which must be in the recording state on a queue family with compute.
    pub fn new(device: &'a Device, cmd: vk::CommandBuffer) -> Self {
        Self {
            device,
            cmd,
            copies_only: false,
        }
    }

    /// Marks the recording as a copy lane's, which records copies and fills alone.
    pub fn copies_only(self, copies_only: bool) -> Self {
        Self { copies_only, ..self }
    }

    pub fn barrier(&mut self, src: Access, dst: Access) {
        let (src, dst) = match self.copies_only {
            true => (src.copies_only(), dst.copies_only()),
            false => (src, dst),
        };
        let mb = [vk::MemoryBarrier::default()
            .src_access_mask(src.access)
            .dst_access_mask(dst.access)];
        // SAFETY: recording state; a global memory barrier has no resource references.
        unsafe {
            self.device.raw().cmd_pipeline_barrier(
                self.cmd,
                src.stage,
                dst.stage,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            )
        };
    }

    pub fn copy(&mut self, src: vk::Buffer, dst: vk::Buffer, size: u64) {
        let region = [vk::BufferCopy::default().size(size)];
        // SAFETY: both buffers are live for the submission and at least `size` bytes long.
        unsafe { self.device.raw().cmd_copy_buffer(self.cmd, src, dst, &region) };
    }

    /// Copies `size` bytes from `src` at `src_offset` to `dst` at `dst_offset`.
    pub fn copy_region(&mut self, src: vk::Buffer, src_offset: u64, dst: vk::Buffer, dst_offset: u64, size: u64) {
        let region = [vk::BufferCopy::default()
            .src_offset(src_offset)
            .dst_offset(dst_offset)
            .size(size)];
        // SAFETY: both buffers are live for the submission and large enough.
        unsafe { self.device.raw().cmd_copy_buffer(self.cmd, src, dst, &region) };
    }

    /// Copies `regions` from `src` to `dst`.
    pub fn copy_regions(&mut self, src: vk::Buffer, dst: vk::Buffer, regions: &[vk::BufferCopy]) {
        if regions.is_empty() {
            return;
        }
        // SAFETY: both buffers are live for the submission and hold every region.
        unsafe { self.device.raw().cmd_copy_buffer(self.cmd, src, dst, regions) };
    }

    /// Writes a timestamp after all prior commands complete.
    pub fn timestamp(&mut self, pool: vk::QueryPool, index: u32) {
        // SAFETY: the pool has more than `index` queries and was reset in this command buffer.
        unsafe {
            self.device
                .raw()
                .cmd_write_timestamp(self.cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, index)
        };
    }

    /// Resets `count` queries of `pool`.
    pub fn reset_queries(&mut self, pool: vk::QueryPool, count: u32) {
        // SAFETY: recording state; the pool has `count` queries.
        unsafe { self.device.raw().cmd_reset_query_pool(self.cmd, pool, 0, count) };
    }

    /// Writes `words` at the start of `buffer` from the command buffer itself (no staging),
    /// in the pieces of at most 64 KiB that `vkCmdUpdateBuffer` takes.
    pub fn update(&mut self, buffer: vk::Buffer, words: &[u32]) {
        const MAX_WORDS: usize = 65536 / 4;
        for (i, piece) in words.chunks(MAX_WORDS).enumerate() {
            let offset = (i * MAX_WORDS * 4) as u64;
            // SAFETY: recording state; the buffer is a transfer destination of at least
            // `4 * words.len()` bytes, live for the submission; offsets and sizes are multiples of 4.
            unsafe {
                self.device
                    .raw()
                    .cmd_update_buffer(self.cmd, buffer, offset, bytemuck::cast_slice(piece))
            };
        }
    }

    /// Fills `size` bytes (a multiple of 4) with a 32-bit pattern.
    pub fn fill(&mut self, buffer: vk::Buffer, size: u64, pattern: u32) {
        self.fill_at(buffer, 0, size, pattern);
    }

    /// Fills `size` bytes (a multiple of 4) at `offset` (a multiple of 4) with a 32-bit pattern.
    pub fn fill_at(&mut self, buffer: vk::Buffer, offset: u64, size: u64, pattern: u32) {
        // SAFETY: the buffer has TRANSFER_DST usage and at least `offset + size` bytes.
        unsafe {
            self.device
                .raw()
                .cmd_fill_buffer(self.cmd, buffer, offset, size, pattern)
        };
    }

    /// Fills the elements of a row-major `rows x cols` matrix of `elem_bytes`-byte elements with
    /// leading dimension `ld` (a multiple of 16 bytes) with `pattern`, leaving the padding
    /// between rows as it is: a device matrix's padding stays zero, which the kernels rely on
    /// when the matrix is later read as A or B.
    pub fn fill_rows(
        &mut self,
        buffer: vk::Buffer,
        offset: u64,
        (rows, cols, ld): (usize, usize, usize),
        elem_bytes: usize,
        pattern: u32,
    ) {
        let (row, pitch) = ((cols * elem_bytes) as u64, (ld * elem_bytes) as u64);
        if row == pitch {
            return self.fill_at(buffer, offset, pitch * rows as u64, pattern);
        }
        let whole = row - row % 4;
        for r in 0..rows as u64 {
            let start = offset + r * pitch;
            if whole > 0 {
                self.fill_at(buffer, start, whole, pattern);
            }
            if whole < row {
                // A 2-byte element ends the row mid-word: poison its half, keep the padding's zero.
                self.fill_at(buffer, start + whole, 4, pattern & 0xffff);
            }
        }
    }

    /// Pushes the operand windows (binding, buffer, window) and dispatches `groups` workgroups.
    pub fn dispatch(
        &mut self,
        pipeline: vk::Pipeline,
        layout: vk::PipelineLayout,
        buffers: &[(u32, vk::Buffer, Window)],
        push: &PushConstants,
        groups: [u32; 3],
    ) -> Result<()> {
        debug_assert!(!self.copies_only, "a dispatch on a copy lane");
        let raw = self.device.raw();
        let infos: Vec<_> = buffers
            .iter()
            .map(|&(_, b, w)| {
                [vk::DescriptorBufferInfo::default()
                    .buffer(b)
                    .offset(w.bind_offset)
                    .range(w.bind_range)]
            })
            .collect();
        let writes: Vec<_> = infos
            .iter()
            .zip(buffers)
            .map(|(info, &(binding, _, _))| {
                vk::WriteDescriptorSet::default()
                    .dst_binding(binding)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: windows were planned inside each buffer and within maxStorageBufferRange, at
        // offsets aligned to minStorageBufferOffsetAlignment; the layout's set 0 is a push
        // descriptor set of storage buffers (bindings past 2 only for kernels that read them).
        unsafe {
            raw.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            self.device.push_descriptor().cmd_push_descriptor_set(
                self.cmd,
                vk::PipelineBindPoint::COMPUTE,
                layout,
                0,
                &writes,
            );
            raw.cmd_push_constants(
                self.cmd,
                layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytemuck::bytes_of(push),
            );
            raw.cmd_dispatch(self.cmd, groups[0], groups[1], groups[2]);
        }
        Ok(())
    }
}

/// The buffers a plan's operands are bound to.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Bindings {
    pub a: vk::Buffer,
    pub b: vk::Buffer,
    pub c: vk::Buffer,
    /// Needed when the plan has scratch ([`GemmPlan::scratch_bytes`]).
    pub scratch: Option<vk::Buffer>,
    /// A fused epilogue's bias, row scales and column scales, where it reads them, then a
    /// grouped GEMM's counts on the device, where it has them.
    pub vectors: [Option<vk::Buffer>; 4],
}

impl Bindings {
    fn get(&self, operand: Operand) -> Result<vk::Buffer> {
        match operand {
            Operand::A => Ok(self.a),
            Operand::B => Ok(self.b),
            Operand::C => Ok(self.c),
            Operand::Scratch => self
                .scratch
                .ok_or_else(|| Error::InvalidOperand("the plan needs a scratch buffer and none was bound".into())),
            Operand::Bias | Operand::RowScales | Operand::ColScales | Operand::Counts => {
                let i = operand as usize - Operand::Bias as usize;
                self.vectors[i].ok_or_else(|| {
                    Error::InvalidOperand(format!("the plan's epilogue reads {operand:?} and none was given"))
                })
            }
        }
    }
}

/// Records `plan`'s dispatches with the barriers between them. The caller orders the plan after
/// whatever wrote A, B and C, and whatever reads C after it.
pub(crate) fn record_plan(
    rec: &mut Recording<'_>,
    pipelines: &Pipelines,
    plan: &GemmPlan,
    buffers: &Bindings,
) -> Result<()> {
    record_plan_marked(rec, pipelines, plan, buffers, &mut |_, _| {})
}

/// [`record_plan`], calling `after_dispatch` with each dispatch's index right after recording it
/// (for a timestamp per step).
pub(crate) fn record_plan_marked(
    rec: &mut Recording<'_>,
    pipelines: &Pipelines,
    plan: &GemmPlan,
    buffers: &Bindings,
    after_dispatch: &mut dyn FnMut(&mut Recording<'_>, usize),
) -> Result<()> {
    if plan.zeroed_scratch_bytes > 0 {
        rec.fill_at(buffers.get(Operand::Scratch)?, 0, plan.zeroed_scratch_bytes, 0);
        rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
    }
    if !plan.scratch_words.is_empty() {
        rec.update(buffers.get(Operand::Scratch)?, &plan.scratch_words);
        rec.barrier(Access::TRANSFER_WRITE, Access::SHADER_READ_WRITE);
    }
    for (i, d) in plan.dispatches.iter().enumerate() {
        if d.after_previous {
            rec.barrier(Access::SHADER_READ_WRITE, Access::SHADER_READ_WRITE);
        }
        let pipeline = pipelines.kernel(&d.kernel)?;
        let [a, b, c] = d.bindings;
        let mut bind = Vec::with_capacity(kernel::BINDINGS as usize);
        let optional = std::iter::once(d.aux).chain(d.vectors);
        for (binding, slot) in (0..).zip([Some(a), Some(b), Some(c)].into_iter().chain(optional)) {
            if let Some((operand, window)) = slot {
                bind.push((binding, buffers.get(operand)?, window));
            }
        }
        rec.dispatch(pipeline.raw, pipelines.layout, &bind, &d.push, d.groups)?;
        after_dispatch(rec, i);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Access;
    use ash::vk::{AccessFlags as A, PipelineStageFlags as S};

    #[test]
    fn copy_lane_barriers_keep_to_transfer_and_host() {
        let any = Access::ANY_WRITE.copies_only();
        assert_eq!((any.stage, any.access), (S::TRANSFER, A::TRANSFER_WRITE));
        let all = Access::ANY.copies_only();
        assert_eq!(all.access, A::TRANSFER_READ | A::TRANSFER_WRITE);
        let host = Access::HOST_READ.copies_only();
        assert_eq!((host.stage, host.access), (S::HOST, A::HOST_READ));
        // A kernel's half has nothing a copy queue runs: the transfer stage stands in, no access.
        let shader = Access::SHADER_READ_WRITE.copies_only();
        assert_eq!((shader.stage, shader.access), (S::TRANSFER, A::empty()));
    }
}
