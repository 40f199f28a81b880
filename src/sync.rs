//! The GPU's progress as the host sees it: timeline semaphores ([`Timeline`]), the one
//! submission a ticket belongs to ([`Batch`]), and each buffer's record of the submissions that
//! last used it ([`Uses`]). Below memory, which keeps a `Uses` in every buffer, and submit, whose
//! streams order their work by them.

use crate::device::Device;
use crate::error::{Error, Result};
use ash::vk;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a submission may run before waiting on it reports failure, unless the context's
/// options say otherwise ([`ContextOptions::gpu_timeout`](crate::ContextOptions::gpu_timeout)).
pub(crate) const SUBMIT_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a wait polls the semaphore (yielding the thread) before it blocks in the driver: a
/// blocking wait's wake-up costs tens of microseconds, more than many GEMMs take.
const SPIN: Duration = Duration::from_millis(20);
/// A timeline semaphore with the highest value submitted to signal it.
pub(crate) struct Timeline {
    pub(crate) raw: vk::Semaphore,
    pub(crate) submitted: AtomicU64,
    /// Set when a wait timed out: the GPU may still use what the timeline guards.
    pub(crate) failed: AtomicBool,
    /// How long a wait may last before the GPU counts as hung.
    timeout: Duration,
    device: Arc<Device>,
}

impl Timeline {
    pub(crate) fn new(device: &Arc<Device>, timeout: Duration) -> Result<Arc<Self>> {
        let mut kind = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
        // SAFETY: valid create info on a live device (timelineSemaphore is enabled).
        let raw =
            unsafe { device.raw().create_semaphore(&info, None) }.map_err(|r| Error::vk("vkCreateSemaphore", r))?;
        Ok(Arc::new(Self {
            raw,
            submitted: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            timeout,
            device: device.clone(),
        }))
    }

    /// The value the GPU has reached.
    pub(crate) fn completed(&self) -> Result<u64> {
        // SAFETY: a live timeline semaphore.
        unsafe { self.device.raw().get_semaphore_counter_value(self.raw) }
            .map_err(|r| self.device.note(Error::vk("vkGetSemaphoreCounterValue", r)))
    }

    /// Waits until the GPU reaches `value`, which must have been submitted.
    pub(crate) fn wait(&self, value: u64) -> Result<()> {
        if value > self.submitted.load(Ordering::Acquire) {
            return Err(Error::NotSubmitted { discarded: false });
        }
        let start = Instant::now();
        while start.elapsed() < SPIN.min(self.timeout) {
            if self.completed()? >= value {
                return Ok(());
            }
            std::thread::yield_now();
        }
        let values = [value];
        let semaphores = [self.raw];
        let info = vk::SemaphoreWaitInfo::default().semaphores(&semaphores).values(&values);
        let timeout = self.timeout.saturating_sub(start.elapsed()).as_nanos() as u64;
        // SAFETY: a live timeline semaphore; the value was submitted.
        match unsafe { self.device.raw().wait_semaphores(&info, timeout) } {
            Ok(()) => Ok(()),
            Err(vk::Result::TIMEOUT) => {
                self.failed.store(true, Ordering::Release);
                self.device.abandon_work(self.timeout);
                Err(Error::GpuTimeout { timeout: self.timeout })
            }
            Err(r) => Err(self.device.note(Error::vk("vkWaitSemaphores", r))),
        }
    }
}

impl Drop for Timeline {
    fn drop(&mut self) {
        // A timeout here (`failed`) marks the device too.
        if self.device.work_abandoned() {
            return; // possibly still pending: leaking beats destroying it in use
        }
        // SAFETY: the stream that signals it waited for its last value before dropping its Arc,
        // and other holders only wait on values already reached.
        unsafe { self.device.raw().destroy_semaphore(self.raw, None) };
    }
}

/// One submission of a stream, from the first command enqueued after the last `submit` to the
/// next: the tickets (and downloads) handed out before it is submitted refer to it, never to a
/// timeline value, which a later submission of a recycled stream core could reach.
pub(crate) struct Batch {
    /// Unset while open; `Some(value)` once submitted (the timeline value it signals); `None`
    /// once discarded (its stream was dropped, or its recording or submission failed).
    pub(crate) fate: OnceLock<Option<u64>>,
}

impl Batch {
    pub(crate) fn open() -> Arc<Self> {
        Arc::new(Self { fate: OnceLock::new() })
    }

    /// Settles an open batch; a settled one keeps its fate.
    pub(crate) fn settle(&self, fate: Option<u64>) {
        let _ = self.fate.set(fate);
    }

    /// The timeline value it signals, or why there is none.
    pub(crate) fn value(&self) -> Result<u64> {
        match self.fate.get() {
            Some(Some(value)) => Ok(*value),
            Some(None) => Err(Error::NotSubmitted { discarded: true }),
            None => Err(Error::NotSubmitted { discarded: false }),
        }
    }
}

/// The submissions that last used a buffer, for ordering between timelines.
#[derive(Default)]
pub(crate) struct Uses {
    pub(crate) write: Option<(Arc<Timeline>, u64)>,
    pub(crate) reads: Vec<(Arc<Timeline>, u64)>,
    /// The submission that writes its first contents (a stream's upload into a new matrix),
    /// until it is seen submitted: until then no other submission may use the buffer, whose
    /// memory holds whatever it held before (another matrix's data, say).
    fill: Option<Arc<Batch>>,
}

impl Uses {
    /// Marks the buffer as first written by `batch`.
    pub(crate) fn filled_by(&mut self, batch: &Arc<Batch>) {
        self.fill = Some(batch.clone());
    }

    /// Refuses the buffer to any submission but `by` while the one that fills it is not
    /// submitted, and for good once that one is discarded.
    pub(crate) fn check_filled(&mut self, by: &Arc<Batch>) -> Result<()> {
        let Some(fill) = &self.fill else {
            return Ok(());
        };
        if Arc::ptr_eq(fill, by) {
            return Ok(());
        }
        match fill.value() {
            Ok(_) => {
                self.fill = None;
                Ok(())
            }
            Err(Error::NotSubmitted { discarded: true }) => Err(Error::InvalidOperand(
                "this matrix's upload was discarded (its stream was dropped, or failed, before \
                 submit()), so it holds no data: upload into it again"
                    .into(),
            )),
            Err(_) => Err(Error::InvalidOperand(
                "this matrix's upload is enqueued on another stream that has not submitted it: \
                 call submit() on that stream first"
                    .into(),
            )),
        }
    }
}
