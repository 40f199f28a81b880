//! GPU timing of GEMMs with timestamp queries, warm-up until steady, and the diagnostic probes.

use crate::api::{Context, Prepared, RunMark};
use crate::error::{Error, Result};
use crate::kernel::Probe;
use crate::memory::Buffer;
use crate::plan::GemmPlan;
use crate::stream::Stream;
use crate::tiling::KernelScope;
use crate::timestamps::{median, TimestampPool};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a batch of work on one stream cost ([`Stream::timed`]).
#[derive(Copy, Clone, Debug, serde::Serialize)]
pub struct StreamTiming {
    /// GEMMs (or other operations) the batch enqueued, as its closure reported.
    pub operations: usize,
    /// Host time spent in the closure that enqueued them, in seconds.
    pub enqueue_s: f64,
    /// GPU time from the batch's first command starting to its last finishing, in seconds.
    pub gpu_span_s: f64,
    /// Host time from submission to the ticket being reached, in seconds.
    pub submit_to_done_s: f64,
    /// Of that, the time `submit` itself took (recording ends, `vkQueueSubmit`), in seconds.
    pub submit_s: f64,
}

impl Stream<'_> {
    /// Runs `enqueue` on this stream (it returns how many operations it enqueued), submits,
    /// waits, and reports the host cost of enqueueing and the GPU span of the batch (timestamps
    /// before its first and after its last command). Work enqueued before is submitted first.
    pub fn timed(&mut self, enqueue: impl FnOnce(&mut Stream<'_>) -> Result<usize>) -> Result<StreamTiming> {
        let ctx = self.context();
        ctx.require_timestamps()?;
        self.submit()?;
        let pool = TimestampPool::new(&ctx.device, 2)?;
        {
            let mut rec = self.core.recording()?;
            rec.reset_queries(pool.raw, pool.count);
            rec.timestamp(pool.raw, 0);
        }
        let start = Instant::now();
        let operations = match enqueue(self) {
            Ok(operations) => operations,
            Err(e) => {
                // The batch holds the query pool's commands, and the pool goes with this call:
                // submitted later, it would write into a destroyed pool.
                self.core.abort();
                return Err(e);
            }
        };
        let enqueue_s = start.elapsed().as_secs_f64();
        self.core.recording()?.timestamp(pool.raw, 1);
        let start = Instant::now();
        let ticket = self.submit()?;
        let submit_s = start.elapsed().as_secs_f64();
        ticket.wait()?;
        let submit_to_done_s = start.elapsed().as_secs_f64();
        Ok(StreamTiming {
            operations,
            enqueue_s,
            gpu_span_s: pool.intervals()?[0],
            submit_to_done_s,
            submit_s,
        })
    }
}

impl Context {
    /// A typed error where the device has no timestamp queries, which every timing here reads.
    pub(crate) fn require_timestamps(&self) -> Result<()> {
        if self.device_info().limits.timestamp_period > 0.0 {
            Ok(())
        } else {
            Err(Error::Unsupported("the device has no timestamp queries".into()))
        }
    }
}

/// How [`Prepared::time`] times a prepared GEMM, each run on the GPU's timestamps (submission
/// overhead excluded).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Timing {
    /// `reps` runs in one submission, a barrier between each: each run's GPU seconds
    /// ([`Timings::Runs`]).
    Runs(u32),
    /// `reps` runs in one submission, a barrier between each: the GPU time from the first
    /// one's start to the last one's end divided by `reps` ([`Timings::Mean`]). That is how
    /// graph-level benchmarks time a kernel (ggml-vulkan's `mm_bench`: the wall clock over a
    /// graph of copies of one node, barriers between them): a GEMM's launch and drain overlap
    /// the barriers around it, which its own timestamps count.
    Stream(u32),
    /// For each dispatch of the plan (a copy or conversion pass, the GEMM, a split-K
    /// reduction), its kernel and each of `reps` runs' GPU seconds from the end of the step
    /// before (the first from the run's start, with any scratch fill); dispatches that run
    /// concurrently with the one before share their time with it ([`Timings::Steps`]).
    Steps(u32),
    /// Runs untimed for at least `.0` and until two consecutive batches' median GPU times agree
    /// within 3% (at most `.1`), so that timings taken next see a steady kernel: NVIDIA's driver
    /// runs a freshly compiled pipeline slowly at first (docs/perf/JOURNAL.md). The last batch's
    /// median ([`Timings::Mean`]).
    WarmUp(Duration, Duration),
    /// `reps` runs of a diagnostic variant of the kernel with one part of its main loop removed
    /// (see [`Probe`]), as [`Timing::Runs`]. For performance analysis only: C's contents are
    /// unspecified afterwards.
    Probe(Probe, u32),
}

/// What [`Prepared::time`] measured, in seconds.
#[derive(Clone, Debug)]
pub enum Timings {
    /// Each run's GPU seconds.
    Runs(Vec<f64>),
    /// One figure per run (a mean over the runs, or a warm-up's last median).
    Mean(f64),
    /// Each dispatch's GPU seconds per run.
    Steps(Vec<GemmStep>),
}

impl Timings {
    /// Seconds per run: each run's ([`Timings::Runs`]), the one figure ([`Timings::Mean`]), or
    /// each run's steps summed ([`Timings::Steps`]).
    pub fn into_seconds(self) -> Vec<f64> {
        match self {
            Timings::Runs(r) => r,
            Timings::Mean(m) => vec![m],
            Timings::Steps(steps) => {
                let runs = steps.first().map_or(0, |s| s.seconds.len());
                (0..runs).map(|r| steps.iter().map(|s| s.seconds[r]).sum()).collect()
            }
        }
    }

    /// The median seconds per run: of [`Timings::Runs`], the figure of [`Timings::Mean`], the
    /// median of the steps' summed runs.
    pub fn median(&self) -> f64 {
        match self {
            Timings::Runs(r) => median(&mut r.clone()),
            Timings::Mean(m) => *m,
            Timings::Steps(_) => median(&mut self.clone().into_seconds()),
        }
    }
}

impl Prepared<'_> {
    /// Times it as `how` says. Timing takes one plan (not a grouped GEMM of several) on
    /// vk-sgmat's own matrices, on a device with timestamp queries; each is otherwise a typed
    /// error.
    pub fn time(&self, how: Timing) -> Result<Timings> {
        let ctx = self.context();
        ctx.require_timestamps()?;
        let work = self.work();
        let (plan, operands) = match (work.plans, work.counts) {
            ([(plan, _)], None) => {
                let [a, b, c] = work.whole.map(|p| p.owned);
                match (a, b, c) {
                    (Some(a), Some(b), Some(c)) => (plan, plan.bind_order([a, b, c])),
                    _ => {
                        return Err(Error::InvalidOperand(
                            "timing takes vk-sgmat's own matrices (DeviceMatrix, DeviceBatch), not buffer matrices".into(),
                        ))
                    }
                }
            }
            _ => {
                return Err(Error::Unsupported(
                    "timing takes one plan; this GEMM runs several (a grouped GEMM of groups planned apart, or device counts)".into(),
                ))
            }
        };
        let vectors = self.vector_raws();
        Ok(match how {
            Timing::Runs(reps) => Timings::Runs(ctx.time_plan_with(plan, operands, vectors, reps)?),
            Timing::Stream(reps) => Timings::Mean(ctx.time_plan_stream(plan, (operands, vectors), reps)?),
            Timing::Steps(reps) => Timings::Steps(ctx.time_plan_steps(plan, (operands, vectors), reps)?),
            Timing::WarmUp(min, max) => Timings::Mean(ctx.warm_plan(plan, (operands, vectors), (min, max))?),
            Timing::Probe(probe, reps) => {
                let plan = ctx.probe_plan(plan, probe)?;
                Timings::Runs(ctx.time_plan_with(&plan, operands, vectors, reps)?)
            }
        })
    }
}

impl Context {
    /// `plan` timed as a stream ([`Timing::Stream`]).
    fn time_plan_stream(
        &self,
        plan: &GemmPlan,
        operands: ([&Arc<Buffer>; 3], [Option<ash::vk::Buffer>; 3]),
        reps: u32,
    ) -> Result<f64> {
        let reps = reps.max(1);
        let pool = self.run_stamped(plan, operands, reps, 2, |r, mark| match mark {
            RunMark::Start if r == 0 => Some(0),
            RunMark::End if r + 1 == reps => Some(1),
            _ => None,
        })?;
        Ok(pool.intervals()?[0] / f64::from(reps))
    }

    /// Runs `plan` untimed until steady ([`Timing::WarmUp`]); the last batch's median.
    pub(crate) fn warm_plan(
        &self,
        plan: &GemmPlan,
        (operands, vectors): ([&Arc<Buffer>; 3], [Option<ash::vk::Buffer>; 3]),
        (min, max): (Duration, Duration),
    ) -> Result<f64> {
        let start = Instant::now();
        let mut last = f64::INFINITY;
        loop {
            let median = median(&mut self.time_plan_with(plan, operands, vectors, 8)?);
            let steady = (median - last).abs() <= 0.03 * last;
            last = median;
            if (steady && start.elapsed() >= min) || start.elapsed() >= max {
                return Ok(median);
            }
        }
    }

    /// `plan` with one part of its main loop removed ([`Timing::Probe`]), checked against what
    /// the probe can take apart.
    fn probe_plan(&self, plan: &GemmPlan, probe: Probe) -> Result<GemmPlan> {
        if let (Some(key), false) = (plan.gemv_kernel(), probe == Probe::Full) {
            return Err(Error::Unsupported(format!(
                "probes take apart the GEMM kernels; this problem runs on {} (matrix_vector: Some(false) runs a GEMM kernel)",
                key.name()
            )));
        }
        let scheme = plan.scheme;
        if scheme.scope() == KernelScope::Workgroup && probe != Probe::Full {
            return Err(Error::Unsupported(format!(
                "probes take apart the subgroup-scope kernel; {} is workgroup-scope",
                scheme.name()
            )));
        }
        let g = scheme.geometry(&plan.config);
        let (bm, bn, bk) = (g.bm, g.bn, g.bk);
        if probe == Probe::Unchecked {
            let p = &plan.problem;
            let whole = plan
                .gemm_dispatches()
                .all(|d| d.push.m % bm == 0 && d.push.n % bn == 0 && d.push.k % bk == 0);
            if !whole || plan.is_split_k() {
                return Err(Error::Unsupported(format!(
                    "the unchecked probe needs whole {bm}x{bn}x{bk} tiles and no split-K; {}x{}x{} is not",
                    p.m, p.n, p.k
                )));
            }
        }
        if let Probe::SharedAtLeast(bytes) = probe {
            let max = self.device_info().limits.max_shared_memory;
            if bytes > max {
                return Err(Error::Unsupported(format!(
                    "{bytes} bytes of shared memory exceed the device's {max}"
                )));
            }
        }
        let plan = plan.clone().with_probe(probe);
        self.pipelines.prepare(&plan)?;
        Ok(plan)
    }

    /// Runs `plan` `reps` times in one submission and returns each run's GPU time in seconds.
    pub(crate) fn time_plan(&self, plan: &GemmPlan, operands: [&Arc<Buffer>; 3], reps: u32) -> Result<Vec<f64>> {
        self.time_plan_with(plan, operands, [None; 3], reps)
    }

    /// [`Context::time_plan`] with a fused epilogue's vector buffers bound.
    pub(crate) fn time_plan_with(
        &self,
        plan: &GemmPlan,
        operands: [&Arc<Buffer>; 3],
        vectors: [Option<ash::vk::Buffer>; 3],
        reps: u32,
    ) -> Result<Vec<f64>> {
        let reps = reps.max(1);
        let pool = self.run_stamped(plan, (operands, vectors), reps, 2 * reps, |r, mark| match mark {
            RunMark::Start => Some(2 * r),
            RunMark::End => Some(2 * r + 1),
            RunMark::Dispatched(_) => None,
        })?;
        pool.intervals()
    }

    /// Runs `plan` `reps` times in one submission (see [`Context::run_plan`]) with a pool of
    /// `stamps` timestamp queries, reset first; `stamp` names the query, if any, that each run's
    /// marks write. Returns the pool to be read. Its pipelines are created first, so that no
    /// compile lands inside the timed submission's recording.
    fn run_stamped(
        &self,
        plan: &GemmPlan,
        operands: ([&Arc<Buffer>; 3], [Option<ash::vk::Buffer>; 3]),
        reps: u32,
        stamps: u32,
        stamp: impl Fn(u32, RunMark) -> Option<u32>,
    ) -> Result<TimestampPool> {
        self.require_timestamps()?;
        self.pipelines.prepare(plan)?;
        let pool = TimestampPool::new(&self.device, stamps)?;
        self.run_plan(
            plan,
            operands,
            reps,
            |rec, r, mark| {
                if let Some(q) = stamp(r, mark) {
                    rec.timestamp(pool.raw, q);
                }
            },
            |rec| rec.reset_queries(pool.raw, pool.count),
        )?;
        Ok(pool)
    }

    /// `plan` timed step by step ([`Timing::Steps`]).
    fn time_plan_steps(
        &self,
        plan: &GemmPlan,
        operands: ([&Arc<Buffer>; 3], [Option<ash::vk::Buffer>; 3]),
        reps: u32,
    ) -> Result<Vec<GemmStep>> {
        let (reps, steps) = (reps.max(1), plan.dispatches.len() as u32);
        // Each run: a timestamp at its start and one after each dispatch.
        let per_run = steps + 1;
        let pool = self.run_stamped(plan, operands, reps, per_run * reps, |r, mark| match mark {
            RunMark::Start => Some(per_run * r),
            RunMark::Dispatched(i) => Some(per_run * r + 1 + i as u32),
            RunMark::End => None,
        })?;
        let runs = pool.steps(per_run as usize)?;
        Ok(plan
            .dispatches
            .iter()
            .enumerate()
            .map(|(i, d)| GemmStep {
                kernel: d.kernel.label(),
                seconds: runs.iter().map(|run| run[i]).collect(),
            })
            .collect())
    }
}

/// One dispatch of a timed GEMM ([`Timing::Steps`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct GemmStep {
    /// What it ran: a GEMM's tile scheme, or the pass (`transpose`, `round`, `reduce`, ...).
    pub kernel: String,
    /// Its GPU seconds in each run.
    pub seconds: Vec<f64>,
}
