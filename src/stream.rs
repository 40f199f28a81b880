//! [`Stream`]: many GEMMs, uploads and downloads in flight on one context, with no host wait
//! between them. Work is recorded as it is enqueued and runs once [`Stream::submit`] hands it to
//! the GPU; the returned [`Ticket`] is waited on or polled. docs/runtime.md has the rules.

use crate::api::{Context, DeviceMatrix, Element, Input, MatMut, MatRef, Matmul, Output};
use crate::device::QueueRef;
use crate::error::{Error, Result};
use crate::memory::Buffer;
use crate::submit::{StreamCore, Ticket};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;

/// A sequence of GPU work on a [`Context`]: enqueue GEMMs on device-resident matrices, uploads
/// and downloads, then [`submit`](Stream::submit) them as one batch and wait on the [`Ticket`]
/// when the results are needed. Made by [`Context::stream`].
///
/// Within a stream, each command sees the results of the ones enqueued before it: a barrier
/// goes between two commands only where they touch the same memory (a GEMM's C feeding the next
/// GEMM's A, say). Between streams, and with the context's blocking calls, submissions that
/// touch the same matrix run in the order they were submitted; others may run concurrently.
/// Every matrix and buffer a submission uses is kept alive until the GPU is done with it, so
/// dropping a [`DeviceMatrix`] right after enqueueing work on it is fine. Dropping a stream
/// waits for its submitted work and discards what was enqueued but not submitted.
pub struct Stream<'c> {
    ctx: &'c Context,
    /// Taken back by the context when the stream is dropped (see [`Drop`] below).
    pub(crate) core: ManuallyDrop<StreamCore>,
}

impl Context {
    /// A new stream. Streams are spread over the device's compute queues (up to 4; the
    /// blocking calls use queue 0), so independent streams can run concurrently.
    pub fn stream(&self) -> Result<Stream<'_>> {
        self.stream_on(self.next_stream_queue())
    }

    /// A new stream on compute queue `queue` (modulo [`Context::queue_count`]).
    pub fn stream_on(&self, queue: usize) -> Result<Stream<'_>> {
        self.stream_at(QueueRef::Compute(queue % self.device.queue_count()))
    }

    /// A stream on copy lane `lane`, for host copies alone (no GEMM): they run beside the
    /// compute queue's kernels, on the copy engines where the device has a copy-only family.
    pub(crate) fn copy_stream(&self, lane: usize) -> Result<Stream<'_>> {
        self.stream_at(QueueRef::Copy(lane))
    }

    fn stream_at(&self, queue: QueueRef) -> Result<Stream<'_>> {
        let core = match self.idle_core(queue) {
            Some(core) => core,
            None => StreamCore::new(&self.device, &self.pool, queue, self.options.gpu_timeout)?,
        };
        Ok(Stream {
            core: ManuallyDrop::new(core),
            ctx: self,
        })
    }

    /// [`Stream::download`] on a stream core.
    pub(crate) fn download_on<T: Element>(&self, core: &mut StreamCore, m: &DeviceMatrix<T>) -> Result<Download<T>> {
        let staging = std::sync::Arc::new(self.enqueue_download(core, m)?);
        core.hold(staging.clone(), true);
        let (rows, cols) = m.layout().outer_inner(m.rows(), m.cols());
        Ok(Download {
            staging: ManuallyDrop::new(staging),
            pool: self.pool.clone(),
            ticket: core.next_ticket(),
            rows,
            cols,
            ld: m.ld(),
            _t: PhantomData,
        })
    }

    /// How many compute queues the context submits to.
    pub fn queue_count(&self) -> usize {
        self.device.queue_count()
    }
}

impl<'c> Stream<'c> {
    /// The context.
    pub fn context(&self) -> &'c Context {
        self.ctx
    }

    /// Enqueues the upload of a host matrix into a new device matrix. The data is copied into
    /// staging memory now, so `m` may change as soon as this returns.
    pub fn upload<T: Element>(&mut self, m: MatRef<'_, T>) -> Result<DeviceMatrix<T>> {
        crate::api::check_matrix("matrix", &m)?;
        let dm = self.ctx.alloc_matrix::<T>(m.rows, m.cols, m.layout)?;
        self.ctx.enqueue_upload(&mut self.core, &m, &dm)?;
        // Its memory holds nothing of `m` until this submission runs: no other may read it first.
        dm.buffer.uses().filled_by(self.core.batch());
        Ok(dm)
    }

    /// Enqueues the upload of a host matrix into an existing device matrix of the same shape
    /// and storage order (e.g. new activations for the same weights).
    pub fn upload_into<T: Element>(&mut self, m: MatRef<'_, T>, dst: &mut DeviceMatrix<T>) -> Result<()> {
        crate::api::check_matrix("matrix", &m)?;
        if (m.rows, m.cols, m.layout) != (dst.rows(), dst.cols(), dst.layout()) {
            return Err(Error::ShapeMismatch(format!(
                "uploading a {}x{} {:?} matrix into a {}x{} {:?} one",
                m.rows,
                m.cols,
                m.layout,
                dst.rows(),
                dst.cols(),
                dst.layout()
            )));
        }
        self.ctx.check_owned(&dst.buffer)?;
        self.ctx.enqueue_upload(&mut self.core, &m, dst)
    }

    /// Enqueues `op` ([`Context::run`]'s description) on device operands:
    /// [`DeviceMatrix`], the caller's [`BufferMatrix`](crate::BufferMatrix) (whose buffers the
    /// caller keeps alive and orders against other streams), or [`DeviceBatch`](crate::DeviceBatch);
    /// C in either storage order. Host vectors of its epilogue are copied now. Shapes, types
    /// and options are checked and the pipelines created now; an error leaves the stream as it
    /// was. A grouped GEMM with device counts reads them when the stream runs, after whatever
    /// the stream ordered before; counts adding up to more rows than A's run no group (C stays
    /// as it was), and nothing reports it here (the blocking [`Context::run`] reads them back).
    pub fn run<'x, 'y, 'z, TA: Element, TB: Element, TC: Element>(
        &mut self,
        op: &Matmul<'_>,
        a: impl Input<'x, TA>,
        b: impl Input<'y, TB>,
        c: impl Output<'z, TC>,
    ) -> Result<()> {
        self.ctx.enqueue_run(&mut self.core, op, a, b, c)
    }

    /// Enqueues the download of a device matrix; its data is read with [`Download::wait`] after
    /// the stream is submitted.
    pub fn download<T: Element>(&mut self, m: &DeviceMatrix<T>) -> Result<Download<T>> {
        self.ctx.download_on(&mut self.core, m)
    }

    /// Orders everything enqueued after this after everything enqueued before it, whether or not
    /// they touch the same memory (for work between them that vk-sgmat does not see, such as
    /// the caller's own kernels on the same data).
    pub fn barrier(&mut self) -> Result<()> {
        self.core.barrier()
    }

    /// Makes the next submission wait, on the GPU, for `ticket` (of any stream of the context).
    /// [`Error::NotSubmitted`] for a ticket whose work is not submitted: the GPU would wait for
    /// it forever if it never is.
    pub fn wait_for(&mut self, ticket: &Ticket) -> Result<()> {
        self.core.wait_for(ticket)
    }

    /// Submits everything enqueued since the last submission, returning the ticket that marks
    /// its completion. With nothing enqueued, the ticket of the last submission.
    pub fn submit(&mut self) -> Result<Ticket> {
        self.core.submit()
    }

    /// Submits and waits until everything submitted on this stream is done.
    pub fn synchronize(&mut self) -> Result<()> {
        self.core.finish()
    }
}

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        // SAFETY: `core` is never used again: this is the stream's last use of it.
        let core = unsafe { ManuallyDrop::take(&mut self.core) };
        self.ctx.recycle_core(core);
    }
}

impl std::fmt::Debug for Stream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stream({:?})", self.ctx)
    }
}

/// A download in flight: [`Download::wait`] returns the matrix once its stream was submitted
/// and the GPU is done.
pub struct Download<T: Element> {
    /// Shared with the stream until the submission completes; whichever lets go last returns
    /// it to the context's pool (readback memory is costly to allocate and fault in again).
    staging: ManuallyDrop<std::sync::Arc<Buffer>>,
    pool: std::sync::Arc<crate::memory::BufferPool>,
    ticket: Ticket,
    /// The stored (outer, inner) extents: rows x cols for row-major, cols x rows for column-major.
    rows: usize,
    cols: usize,
    ld: usize,
    _t: PhantomData<T>,
}

impl<T: Element> Drop for Download<T> {
    fn drop(&mut self) {
        // SAFETY: the field is not used after this.
        let staging = unsafe { ManuallyDrop::take(&mut self.staging) };
        if let Ok(buffer) = std::sync::Arc::try_unwrap(staging) {
            self.pool.give(buffer); // the stream let go first: its submission is complete
        }
    }
}

impl<T: Element> std::fmt::Debug for Download<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Download<{}>({}x{}, {:?})",
            T::TYPE,
            self.rows,
            self.cols,
            self.ticket
        )
    }
}

impl<T: Element> Download<T> {
    /// The ticket of the submission that carries the download.
    pub fn ticket(&self) -> &Ticket {
        &self.ticket
    }

    /// Waits for the download and returns the elements in the device matrix's storage order
    /// (row-major `rows x cols` for a row-major matrix; its transpose's for a column-major one),
    /// densely packed. [`Error::NotSubmitted`] if its stream has not submitted it, or dropped it
    /// unsubmitted.
    pub fn wait(self) -> Result<Vec<T>> {
        self.ticket.wait()?;
        self.read()
    }

    /// Whether the download is done, without waiting; [`Error::NotSubmitted`] as
    /// [`Download::wait`].
    pub fn is_done(&self) -> Result<bool> {
        self.ticket.is_done()
    }

    /// The data if the download is done (`None` while the GPU still works on it), without
    /// waiting; [`Error::NotSubmitted`] as [`Download::wait`].
    pub fn try_wait(&self) -> Result<Option<Vec<T>>> {
        if !self.ticket.is_done()? {
            return Ok(None);
        }
        self.read().map(Some)
    }

    /// The staged data, densely packed (the download is done).
    fn read(&self) -> Result<Vec<T>> {
        let mut out = vec![T::from_f64(0.0); self.rows * self.cols];
        let bytes = self.staging.mapped()?;
        crate::api::unpack(bytes, self.ld, MatMut::new(&mut out, self.rows, self.cols));
        Ok(out)
    }

    /// Like [`Download::wait`], each stored row into the slice of `out` of the same index
    /// (rows and their lengths as stored: a multi-device GEMM's block of the caller's C).
    pub(crate) fn wait_rows(self, out: &mut [&mut [T]]) -> Result<()> {
        if out.len() != self.rows || out.iter().any(|r| r.len() != self.cols) {
            return Err(Error::ShapeMismatch(format!(
                "{} rows received for a {}x{} download",
                out.len(),
                self.rows,
                self.cols
            )));
        }
        self.ticket.wait()?;
        let bytes = self.staging.mapped()?;
        crate::api::unpack_rows(bytes, self.ld, out);
        Ok(())
    }

    /// Like [`Download::wait`], into `out` (row-major, the stored shape).
    pub fn wait_into(self, out: MatMut<'_, T>) -> Result<()> {
        crate::api::check_download_target((self.rows, self.cols), &out)?;
        self.ticket.wait()?;
        crate::api::unpack(self.staging.mapped()?, self.ld, out);
        Ok(())
    }
}
