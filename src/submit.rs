//! Submission: timeline semaphores and [`Ticket`]s, and the stream core that owns command
//! buffers, orders work on memory shared between submissions, stages uploads through a ring of
//! host-visible memory, and keeps every buffer a submission uses alive until the GPU is done.
//!
//! Ordering rules (docs/runtime.md): inside one stream a global barrier goes between two
//! commands only where the second reads what an earlier one wrote, or writes what an earlier one
//! read or wrote, since the last barrier; between streams (and the context's blocking calls),
//! a submission waits on the timeline of every other submission that last wrote a buffer it uses,
//! or read a buffer it writes. So submissions that touch the same memory run in the order they
//! were submitted, and nothing else waits.

use crate::device::{Device, QueueRef};
use crate::error::{Error, Result};
use crate::memory::{Buffer, BufferKind, BufferPool};
use crate::record::{Access, Recording};
pub(crate) use crate::sync::SUBMIT_TIMEOUT;
use crate::sync::{Batch, Timeline, Uses};
use ash::vk;
use rustc_hash::FxHashSet;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

/// Bytes of a new staging chunk (larger uploads get a chunk of their own size).
const STAGING_CHUNK: u64 = 8 << 20;

/// A point on a stream's timeline, returned by [`Stream::submit`](crate::Stream::submit): the
/// work submitted up to it is done once it is reached. Any ticket may be waited on from any
/// thread, or handed to another stream ([`Stream::wait_for`](crate::Stream::wait_for)).
///
/// A ticket handed out before its work was submitted (a [`Download`](crate::Download)'s) belongs
/// to that one submission: until the stream submits it, and forever if the stream is dropped
/// first, every query of it is [`Error::NotSubmitted`], whatever else ran since.
#[derive(Clone)]
pub struct Ticket {
    timeline: Arc<Timeline>,
    batch: Arc<Batch>,
}

impl Ticket {
    /// Blocks until the work is done (an error after the context's
    /// [`gpu_timeout`](crate::ContextOptions::gpu_timeout), 600 s by default: the GPU did not
    /// finish). [`Error::NotSubmitted`] if its stream has not submitted it, or never will.
    pub fn wait(&self) -> Result<()> {
        self.timeline.wait(self.batch.value()?)
    }

    /// Whether the work is done, without waiting. [`Error::NotSubmitted`] if its stream has not
    /// submitted it, or never will (polling it could never end).
    pub fn is_done(&self) -> Result<bool> {
        let value = self.batch.value()?;
        Ok(self.timeline.completed()? >= value)
    }

    /// The timeline and value to wait on, once submitted.
    fn point(&self) -> Result<(Arc<Timeline>, u64)> {
        Ok((self.timeline.clone(), self.batch.value()?))
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.batch.fate.get() {
            Some(Some(value)) => write!(f, "Ticket({:?} @ {value})", self.timeline.raw),
            Some(None) => write!(f, "Ticket({:?}, discarded)", self.timeline.raw),
            None => write!(f, "Ticket({:?}, not submitted)", self.timeline.raw),
        }
    }
}

/// A buffer a command uses: vk-sgmat's own (ordered between streams and kept alive), or the
/// caller's (only ordered within the stream).
#[derive(Copy, Clone)]
pub(crate) struct Touch<'a> {
    pub raw: vk::Buffer,
    pub owned: Option<&'a Arc<Buffer>>,
}

impl Touch<'_> {
    /// A buffer the stream orders but does not keep alive (the caller's, or a pooled one the
    /// stream holds by other means).
    pub fn unowned(raw: vk::Buffer) -> Self {
        Self { raw, owned: None }
    }
}

impl<'a> From<&'a Arc<Buffer>> for Touch<'a> {
    fn from(b: &'a Arc<Buffer>) -> Self {
        Self {
            raw: b.raw(),
            owned: Some(b),
        }
    }
}

/// A buffer a submission holds until the GPU is done with it; `pooled` ones go back to the
/// context's pool then (if nothing else still holds them).
struct Held {
    buffer: Arc<Buffer>,
    pooled: bool,
}

struct InFlight {
    value: u64,
    cmd: vk::CommandBuffer,
    held: Vec<Held>,
    /// The timelines it waits on: a semaphore must outlive every submission waiting on it, even
    /// one already signalled (another stream's, which may be dropped first).
    waited: Vec<Arc<Timeline>>,
}

/// Buffers read and written since the last barrier of a stream (hash sets: a stream of
/// thousands of independent GEMMs checks each against all of them).
#[derive(Default)]
struct Hazards {
    read: FxHashSet<vk::Buffer>,
    written: FxHashSet<vk::Buffer>,
}

impl Hazards {
    /// Notes the accesses; true if a barrier must go before them.
    fn access(&mut self, reads: &[vk::Buffer], writes: &[vk::Buffer]) -> bool {
        let conflict = reads.iter().any(|b| self.written.contains(b))
            || writes.iter().any(|b| self.written.contains(b) || self.read.contains(b));
        if conflict {
            self.read.clear();
            self.written.clear();
        }
        self.read.extend(reads);
        self.written.extend(writes);
        conflict
    }
}

/// Host-visible chunks that uploads are staged through, each reused once the GPU has read it.
#[derive(Default)]
struct StagingRing {
    chunks: Vec<(Buffer, u64, u64)>, // (buffer, bytes used, last timeline value using it)
    current: usize,
}

impl StagingRing {
    /// Bytes of its chunks.
    fn bytes(&self) -> u64 {
        self.chunks.iter().map(|(b, _, _)| b.size()).sum()
    }

    /// Frees the chunks no submission past `completed` uses; returns their bytes.
    fn release(&mut self, completed: u64) -> u64 {
        let before = self.bytes();
        self.chunks.retain(|&(_, _, last)| last > completed);
        self.current = self.chunks.len(); // none current: the next upload looks for a free chunk
        before - self.bytes()
    }

    /// `size` bytes of a chunk for the submission that will signal `pending`: (chunk, offset).
    fn alloc(&mut self, pool: &BufferPool, size: u64, pending: u64, completed: u64) -> Result<(usize, u64)> {
        let size = size.next_multiple_of(16);
        if let Some((buffer, used, last)) = self.chunks.get_mut(self.current) {
            if *used + size <= buffer.size() {
                let offset = *used;
                *used += size;
                *last = pending;
                return Ok((self.current, offset));
            }
        }
        let free = self
            .chunks
            .iter()
            .position(|(b, _, last)| *last <= completed && b.size() >= size);
        let i = match free {
            Some(i) => i,
            None => {
                // Never a chunk over the allocation limit: only an upload that is over it fails.
                let bytes = size.max(STAGING_CHUNK.min(pool.max_allocation()));
                self.chunks.push((pool.allocate(bytes, BufferKind::Upload)?, 0, 0));
                self.chunks.len() - 1
            }
        };
        self.chunks[i].1 = size;
        self.chunks[i].2 = pending;
        self.current = i;
        Ok((i, 0))
    }
}

/// One stream's submission state: a command pool on one queue, the open command buffer, the
/// submissions in flight with what they hold, and the stream's timeline.
pub(crate) struct StreamCore {
    device: Arc<Device>,
    pool: Arc<BufferPool>,
    queue: QueueRef,
    timeline: Arc<Timeline>,
    command_pool: vk::CommandPool,
    free: Vec<vk::CommandBuffer>,
    in_flight: VecDeque<InFlight>,
    open: Option<vk::CommandBuffer>,
    /// Buffers of other owners this submission reads (false) or writes (true).
    touched: Vec<(Arc<Buffer>, bool)>,
    held: Vec<Held>,
    waits: Vec<(Arc<Timeline>, u64)>,
    hazards: Hazards,
    staging: StagingRing,
    /// The submission being recorded: what [`StreamCore::next_ticket`] hands out.
    batch: Arc<Batch>,
}

impl StreamCore {
    pub fn new(device: &Arc<Device>, pool: &Arc<BufferPool>, queue: QueueRef, timeout: Duration) -> Result<Self> {
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(device.family_of(queue))
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        let timeline = Timeline::new(device, timeout)?;
        // SAFETY: valid create info on a live device.
        let command_pool = unsafe { device.raw().create_command_pool(&info, None) }
            .map_err(|r| Error::vk("vkCreateCommandPool", r))?;
        Ok(Self {
            device: device.clone(),
            pool: pool.clone(),
            queue,
            timeline,
            command_pool,
            free: Vec::new(),
            in_flight: VecDeque::new(),
            open: None,
            touched: Vec::new(),
            held: Vec::new(),
            waits: Vec::new(),
            hazards: Hazards::default(),
            staging: StagingRing::default(),
            batch: Batch::open(),
        })
    }

    /// The queue it submits to.
    pub fn queue(&self) -> QueueRef {
        self.queue
    }

    /// The value the next submission signals.
    fn pending(&self) -> u64 {
        self.timeline.submitted.load(Ordering::Acquire) + 1
    }

    /// A ticket for the submission being recorded (a download's): it waits for that
    /// submission alone, and is [`Error::NotSubmitted`] if it is discarded instead.
    pub fn next_ticket(&self) -> Ticket {
        Ticket {
            timeline: self.timeline.clone(),
            batch: self.batch.clone(),
        }
    }

    /// The submission being recorded.
    pub(crate) fn batch(&self) -> &Arc<Batch> {
        &self.batch
    }

    /// Settles the submission being recorded and opens the next one.
    fn settle_batch(&mut self, fate: Option<u64>) -> Arc<Batch> {
        let batch = std::mem::replace(&mut self.batch, Batch::open());
        batch.settle(fate);
        batch
    }

    /// The open command buffer, begun on first use.
    pub fn recording(&mut self) -> Result<Recording<'_>> {
        self.device.usable()?;
        let cmd = match self.open {
            Some(cmd) => cmd,
            None => {
                self.recycle()?;
                let cmd = match self.free.pop() {
                    Some(cmd) => cmd,
                    None => {
                        let info = vk::CommandBufferAllocateInfo::default()
                            .command_pool(self.command_pool)
                            .level(vk::CommandBufferLevel::PRIMARY)
                            .command_buffer_count(1);
                        // SAFETY: the pool is this stream's alone.
                        unsafe { self.device.raw().allocate_command_buffers(&info) }
                            .map_err(|r| Error::vk("vkAllocateCommandBuffers", r))?[0]
                    }
                };
                let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
                // SAFETY: a free command buffer is in the initial state.
                if let Err(r) = unsafe { self.device.raw().begin_command_buffer(cmd, &begin) } {
                    self.free.push(cmd);
                    return Err(Error::vk("vkBeginCommandBuffer", r));
                }
                self.open = Some(cmd);
                cmd
            }
        };
        let copies_only = matches!(self.queue, QueueRef::Copy(_));
        Ok(Recording::new(&self.device, cmd).copies_only(copies_only))
    }

    /// Declares what the next command reads and writes: records a barrier first where it
    /// conflicts with an earlier command of the stream, and remembers vk-sgmat's own buffers for
    /// ordering between streams at submission (the caller orders its own buffers).
    pub fn access(&mut self, reads: &[Touch<'_>], writes: &[Touch<'_>]) -> Result<()> {
        for b in reads.iter().chain(writes).filter_map(|t| t.owned) {
            b.uses().check_filled(&self.batch)?;
        }
        let raw = |v: &[Touch<'_>]| v.iter().map(|t| t.raw).collect::<Vec<_>>();
        let barrier = self.hazards.access(&raw(reads), &raw(writes));
        let mut rec = self.recording()?;
        if barrier {
            rec.barrier(Access::ANY_WRITE, Access::ANY);
        }
        for (list, write) in [(reads, false), (writes, true)] {
            for t in list {
                if let Some(b) = t.owned {
                    self.touched.push((b.clone(), write));
                }
            }
        }
        Ok(())
    }

    /// Records a barrier between everything before and everything after.
    pub fn barrier(&mut self) -> Result<()> {
        self.hazards = Hazards::default();
        self.recording()?.barrier(Access::ANY_WRITE, Access::ANY);
        Ok(())
    }

    /// Keeps `buffer` alive until this submission completes (then back to the pool if `pooled`).
    pub fn hold(&mut self, buffer: Arc<Buffer>, pooled: bool) {
        self.held.push(Held { buffer, pooled });
    }

    /// Stages `size` bytes written by `fill` and records their copy into `dst` at `dst_offset`
    /// (the caller declared the write with [`StreamCore::access`]).
    pub fn upload(&mut self, dst: vk::Buffer, dst_offset: u64, size: u64, fill: impl FnOnce(&mut [u8])) -> Result<()> {
        let completed = self.timeline.completed()?;
        let pending = self.pending();
        let (chunk, offset) = self.staging.alloc(&self.pool, size, pending, completed)?;
        let src = {
            let buffer = &mut self.staging.chunks[chunk].0;
            fill(&mut buffer.mapped_mut()?[offset as usize..(offset + size) as usize]);
            buffer.raw()
        };
        let mut rec = self.recording()?;
        rec.copy_region(src, offset, dst, dst_offset, size);
        Ok(())
    }

    /// Makes the next submission wait for `ticket` on the GPU. A ticket not yet submitted is
    /// refused: the GPU would wait for a value that may never be signalled.
    pub fn wait_for(&mut self, ticket: &Ticket) -> Result<()> {
        let (timeline, value) = ticket.point()?;
        if !Arc::ptr_eq(&timeline, &self.timeline) {
            self.waits.push((timeline, value));
        }
        Ok(())
    }

    /// Ends and submits the open command buffer (if any), after the work it depends on.
    pub fn submit(&mut self) -> Result<Ticket> {
        let Some(cmd) = self.open.take() else {
            if self.waits.is_empty() {
                // Nothing recorded since the last submission: a ticket handed out meanwhile is
                // done when that one is.
                let batch = self.settle_batch(Some(self.pending() - 1));
                return Ok(Ticket {
                    timeline: self.timeline.clone(),
                    batch,
                });
            }
            self.recording()?;
            return self.submit();
        };
        let raw = self.device.raw();
        // SAFETY: the command buffer is in the recording state.
        if let Err(r) = unsafe { raw.end_command_buffer(cmd) } {
            self.discard(cmd);
            return Err(Error::vk("vkEndCommandBuffer", r));
        }
        // Lock every shared buffer's record (in address order: no deadlock between streams), so
        // the order submissions see is the order they publish in.
        let shared = each_once_by_address(std::mem::take(&mut self.touched));
        let mut guards: Vec<MutexGuard<'_, Uses>> = shared.iter().map(|(b, _)| b.uses()).collect();
        let mut waits = std::mem::take(&mut self.waits);
        for (uses, (_, write)) in guards.iter().zip(&shared) {
            waits.extend(uses.write.iter().cloned());
            if *write {
                waits.extend(uses.reads.iter().cloned());
            }
        }
        waits.retain(|(t, _)| !Arc::ptr_eq(t, &self.timeline));
        let value = self.pending();
        if let Err(r) = self.queue_submit(cmd, &waits, value) {
            drop(guards);
            self.discard(cmd);
            return Err(self.device.note(Error::vk("vkQueueSubmit", r)));
        }
        self.timeline.submitted.store(value, Ordering::Release);
        for (uses, (_, write)) in guards.iter_mut().zip(&shared) {
            let me = (self.timeline.clone(), value);
            if *write {
                uses.write = Some(me);
                uses.reads.clear();
            } else {
                uses.reads.retain(|(t, _)| !Arc::ptr_eq(t, &self.timeline));
                uses.reads.push(me);
            }
        }
        drop(guards);
        // Settled after the uses are published: whoever sees it submitted sees them too.
        let batch = self.settle_batch(Some(value));
        let mut held = std::mem::take(&mut self.held);
        held.extend(shared.into_iter().map(|(buffer, _)| Held { buffer, pooled: false }));
        let waited = waits.into_iter().map(|(t, _)| t).collect();
        self.in_flight.push_back(InFlight {
            value,
            cmd,
            held,
            waited,
        });
        Ok(Ticket {
            timeline: self.timeline.clone(),
            batch,
        })
    }

    /// Submits `cmd` to the stream's queue, waiting for `waits` (timelines at values) and
    /// signalling this stream's timeline at `value`.
    fn queue_submit(
        &self,
        cmd: vk::CommandBuffer,
        waits: &[(Arc<Timeline>, u64)],
        value: u64,
    ) -> ash::prelude::VkResult<()> {
        let wait_semaphores: Vec<vk::Semaphore> = waits.iter().map(|(t, _)| t.raw).collect();
        let wait_values: Vec<u64> = waits.iter().map(|(_, v)| *v).collect();
        let stages = vec![vk::PipelineStageFlags::ALL_COMMANDS; waits.len()];
        let signal = [self.timeline.raw];
        let signal_values = [value];
        let mut timeline_info = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let cmds = [cmd];
        let submit = [vk::SubmitInfo::default()
            .wait_semaphores(&wait_semaphores)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cmds)
            .signal_semaphores(&signal)
            .push_next(&mut timeline_info)];
        let queue = self.device.queue(self.queue);
        // SAFETY: the queue is locked; every waited value was submitted earlier (uses are
        // published only after a successful submit); every resource the command buffer uses
        // is held until the timeline reaches `value`.
        unsafe { self.device.raw().queue_submit(*queue, &submit, vk::Fence::null()) }
    }

    /// Drops what was recorded since the last submission (after an error while recording, or
    /// when its stream is dropped): its tickets and downloads say so from then on.
    pub fn abort(&mut self) {
        self.waits.clear();
        let Some(cmd) = self.open.take() else {
            // Nothing recorded: a ticket handed out (a download's) still dies with the batch.
            self.settle_batch(None);
            return;
        };
        // SAFETY: recording state; ending makes it resettable.
        let _ = unsafe { self.device.raw().end_command_buffer(cmd) };
        self.discard(cmd); // settles the batch
    }

    fn discard(&mut self, cmd: vk::CommandBuffer) {
        // SAFETY: never submitted, so not in use.
        if unsafe {
            self.device
                .raw()
                .reset_command_buffer(cmd, vk::CommandBufferResetFlags::empty())
        }
        .is_ok()
        {
            self.free.push(cmd);
        }
        self.touched.clear();
        self.held.clear();
        self.hazards = Hazards::default();
        self.settle_batch(None);
    }

    /// Returns the command buffers and buffers of completed submissions.
    fn recycle(&mut self) -> Result<()> {
        let completed = self.timeline.completed()?;
        while self.in_flight.front().is_some_and(|f| f.value <= completed) {
            let done = self.in_flight.pop_front().expect("checked");
            // SAFETY: the submission completed.
            unsafe {
                self.device
                    .raw()
                    .reset_command_buffer(done.cmd, vk::CommandBufferResetFlags::empty())
            }
            .map_err(|r| Error::vk("vkResetCommandBuffer", r))?;
            self.free.push(done.cmd);
            // The semaphores it waited on may be destroyed now.
            drop(done.waited);
            // The other holders first, so a pooled buffer this submission also touched is
            // unwrapped below.
            let (pooled, others): (Vec<Held>, Vec<Held>) = done.held.into_iter().partition(|h| h.pooled);
            drop(others);
            for h in pooled {
                if let Ok(buffer) = Arc::try_unwrap(h.buffer) {
                    self.pool.give(buffer);
                }
            }
        }
        Ok(())
    }

    /// Bytes of staging memory it keeps.
    pub fn staging_bytes(&self) -> u64 {
        self.staging.bytes()
    }

    /// Frees the staging memory no submitted or enqueued work uses; returns its bytes.
    pub fn release_staging(&mut self) -> Result<u64> {
        let completed = self.timeline.completed()?;
        Ok(self.staging.release(completed))
    }

    /// Submits what is open and waits until everything submitted is done.
    pub fn finish(&mut self) -> Result<()> {
        let ticket = self.submit()?;
        ticket.wait()?;
        self.recycle()
    }
}

impl Drop for StreamCore {
    fn drop(&mut self) {
        self.abort();
        let last = self.pending() - 1;
        if self.timeline.failed.load(Ordering::Acquire) || self.timeline.wait(last).is_err() {
            // Work may still run: leaking beats freeing what it uses.
            std::mem::forget(std::mem::take(&mut self.in_flight));
            std::mem::forget(std::mem::take(&mut self.staging));
            return;
        }
        let _ = self.recycle();
        // SAFETY: every submission completed; freeing the pool frees its command buffers.
        unsafe { self.device.raw().destroy_command_pool(self.command_pool, None) };
    }
}

/// The buffers a submission touched, each once (written where any use wrote it), in address
/// order.
fn each_once_by_address(mut touched: Vec<(Arc<Buffer>, bool)>) -> Vec<(Arc<Buffer>, bool)> {
    touched.sort_by_key(|(b, _)| Arc::as_ptr(b) as usize);
    let mut shared: Vec<(Arc<Buffer>, bool)> = Vec::new();
    for (b, w) in touched {
        match shared.last_mut() {
            Some((last, lw)) if Arc::ptr_eq(last, &b) => *lw |= w,
            _ => shared.push((b, w)),
        }
    }
    shared
}
