//! GPU timestamps around each step of one device's host pipeline (B in, each band's A in,
//! multiply and C out), for finding where the copies and the kernels fail to overlap:
//! [`MultiContext::run_traced`], `vk-sgmat bench --devices all --trace`.

use super::MultiContext;
use crate::api::{Context, Element, Matmul, PinnedMatrix};
use crate::device::QueueRef;
use crate::error::{Error, Result};
use crate::submit::StreamCore;
use crate::timestamps::TimestampPool;
use std::time::{Duration, Instant};

/// A step of the host pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineStep {
    /// B's block copied in (once, before the first band).
    BIn,
    /// A band's rows of A copied in (and its rows of C, where beta reads them).
    AIn,
    /// A band's multiply.
    Multiply,
    /// A band's C copied out.
    COut,
}

/// When one step ran on the GPU, in milliseconds from the device's first timestamp of the call.
#[derive(Clone, Debug)]
pub struct TraceStep {
    /// Which step.
    pub step: PipelineStep,
    /// Its band (0 for [`PipelineStep::BIn`]).
    pub band: usize,
    /// What it did: bytes copied, or for a multiply its operations (2 x rows x N x K).
    pub work: u64,
    /// When its commands began (after what its stream waited for).
    pub start_ms: f64,
    /// When they completed.
    pub end_ms: f64,
}

/// Where one device's part spent the host's time, in milliseconds from the start of the call:
/// what the GPU timestamps cannot show (a part that starts late, records slowly or allocates).
#[derive(Clone, Debug, Default)]
pub struct HostTimes {
    /// When the device's thread began its part.
    pub began_ms: f64,
    /// When B's copy was submitted: the GPU's first step starts no earlier.
    pub first_submit_ms: f64,
    /// Time spent waiting for the GPU (for bands' C to land, and for the streams at the end).
    pub waiting_ms: f64,
    /// When the part returned, its C in place.
    pub ended_ms: f64,
    /// Buffers the part allocated rather than took from the pool.
    pub new_buffers: usize,
}

/// One device's steps, in the order they were recorded.
#[derive(Clone, Debug)]
pub struct PipelineTrace {
    /// The device's position in the [`MultiContext`].
    pub device: usize,
    /// Its steps.
    pub steps: Vec<TraceStep>,
    /// Its host side.
    pub host: HostTimes,
}

/// The host-side moments of a traced part that [`Tracer`] does not see itself.
pub(crate) struct HostMarks {
    /// After B's copy was submitted.
    pub first_submit: Instant,
    /// Time in waits.
    pub waiting: Duration,
}

/// Timestamps being recorded for one device's part.
pub(crate) struct Tracer {
    pool: TimestampPool,
    /// The device's position in the [`MultiContext`].
    device: usize,
    marks: Vec<(PipelineStep, usize, u64)>,
    /// When the call began, and this part.
    call: Instant,
    began: Instant,
    /// The context's pool allocations when the part began.
    allocations: usize,
}

impl Tracer {
    /// A tracer for `bands` bands of device `device` in a call that began at `call`, its
    /// queries reset on `core` (the multiplies' stream, which the copy streams' later steps wait
    /// on). An error where a queue the pipeline uses has no timestamps.
    pub fn new(ctx: &Context, (device, call): (usize, Instant), core: &mut StreamCore, bands: usize) -> Result<Self> {
        let began = Instant::now();
        let vk = &ctx.device;
        // SAFETY: plain query.
        let families = unsafe {
            vk.instance()
                .raw()
                .get_physical_device_queue_family_properties(vk.physical())
        };
        for queue in [QueueRef::Compute(0), QueueRef::Copy(0)] {
            let family = vk.family_of(queue) as usize;
            if families.get(family).is_none_or(|f| f.timestamp_valid_bits == 0) {
                return Err(Error::Unsupported(format!(
                    "tracing the host pipeline: queue family {family} of {} has no timestamps",
                    vk.info().name
                )));
            }
        }
        let count = 2 * (1 + 3 * bands) as u32;
        let pool = TimestampPool::new(vk, count)?;
        core.recording()?.reset_queries(pool.raw, count);
        Ok(Self {
            pool,
            device,
            marks: Vec::new(),
            call,
            began,
            allocations: ctx.pool.allocations(),
        })
    }

    /// Records `record` on `core` between two timestamps, as `step` of `band` doing `work`.
    pub fn around<R>(
        &mut self,
        core: &mut StreamCore,
        (step, band, work): (PipelineStep, usize, u64),
        record: impl FnOnce(&mut StreamCore) -> Result<R>,
    ) -> Result<R> {
        let i = 2 * self.marks.len() as u32;
        if i + 1 >= self.pool.count {
            return record(core); // more steps than planned: the rest go untimed
        }
        core.recording()?.timestamp(self.pool.raw, i);
        let out = record(core)?;
        core.recording()?.timestamp(self.pool.raw, i + 1);
        self.marks.push((step, band, work));
        Ok(out)
    }

    /// The steps' times (once every submission that wrote them completed), with the host's
    /// side of the part on `ctx`.
    pub fn finish(self, ctx: &Context, marks: HostMarks) -> Result<PipelineTrace> {
        let since = |t: Instant| t.duration_since(self.call).as_secs_f64() * 1e3;
        let host = HostTimes {
            began_ms: since(self.began),
            first_submit_ms: since(marks.first_submit),
            waiting_ms: marks.waiting.as_secs_f64() * 1e3,
            ended_ms: since(Instant::now()),
            new_buffers: ctx.pool.allocations() - self.allocations,
        };
        let ticks = self.pool.read()?;
        let used = &ticks[..2 * self.marks.len()];
        let first = used.iter().copied().min().unwrap_or(0);
        let period = f64::from(ctx.device_info().limits.timestamp_period) * 1e-6;
        let ms = |t: u64| t.wrapping_sub(first) as f64 * period;
        let steps = self
            .marks
            .iter()
            .zip(used.chunks(2))
            .map(|(&(step, band, work), t)| TraceStep {
                step,
                band,
                work,
                start_ms: ms(t[0]),
                end_ms: ms(t[1]),
            })
            .collect();
        Ok(PipelineTrace {
            device: self.device,
            steps,
            host,
        })
    }
}

impl MultiContext {
    /// [`MultiContext::run`] on pinned matrices, cut as `op`'s split says (default
    /// [`SplitKind::Auto`](crate::SplitKind::Auto)), with GPU timestamps around every step of
    /// each device's pipeline: a timing diagnostic, as [`Stream::timed`](crate::Stream::timed)
    /// is for streams. The timestamps of different queues are compared as one clock (so they
    /// are on NVIDIA). An error where a queue it uses has no timestamps.
    pub fn run_traced<TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        a: &PinnedMatrix<TA>,
        b: &PinnedMatrix<TB>,
        c: &mut PinnedMatrix<TC>,
    ) -> Result<Vec<PipelineTrace>> {
        op.plain_only("several GPUs")?;
        let split = self.split_of::<TA, TB>(op, (a.rows(), b.cols(), a.cols()))?;
        self.pinned_parts(a, b, c, &op.options, &split, true)
            .map(|traces| traces.into_iter().flatten().collect())
    }
}
