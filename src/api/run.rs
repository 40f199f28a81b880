//! [`Context::run`]: a [`Matmul`] on operands of any residency, now. Routes the combination of
//! operands to the host path (staged through the pool, cut into pieces over the allocation
//! limit), the pinned path, or the device path ([`Context::plan_work`]), and waits.

use super::argument::{input, output, In, Input, Out, Output};
use super::batch::{BatchMut, BatchRef};
use super::context::Context;
use super::fused::Fused;
use super::matmul::{Groups, Matmul};
use super::matrix::Element;
use super::work::Work;
use crate::error::{Error, Result};
use crate::submit::StreamCore;

impl Context {
    /// Runs `op` on these operands and waits for the result: `c = act(alpha * a*b + beta * c +
    /// bias)`.
    ///
    /// - **Host** operands ([`MatRef`](crate::MatRef), [`MatMut`](crate::MatMut); strided
    ///   [`BatchRef`](crate::BatchRef)/[`BatchMut`](crate::BatchMut), where a lone `MatRef` A or B
    ///   is shared by every entry; ndarray views with the `ndarray` feature) are uploaded, run
    ///   and downloaded in one submission, in pieces where a copy would pass the device's
    ///   allocation limit. C may be row- or column-major.
    /// - **Device** operands ([`DeviceMatrix`](crate::DeviceMatrix), the caller's
    ///   [`BufferMatrix`](crate::BufferMatrix), [`DeviceBatch`](crate::DeviceBatch)) stay where
    ///   they are.
    /// - **Pinned** matrices ([`PinnedMatrix`](crate::PinnedMatrix)): the copy engine reads A
    ///   and B and writes C in place, in bands that overlap the multiplies.
    /// - A grouped `op` ([`Matmul::grouped`]) takes A and C whole and B as a batch of weights.
    /// - **Quantized** weights ([`QuantMatrix`](crate::QuantMatrix), or its transpose
    ///   [`QuantMatrix::t`](crate::QuantMatrix::t)) as A or B, beside device operands or host ones
    ///   (then uploaded, run and downloaded); one GEMM at a time.
    ///
    /// A and B take the same type, or a 16-bit float and f32 (see [`route`](crate::plan::route)
    /// and [`GemmOptions::compute`](crate::GemmOptions::compute)). Integer results (i8 or u8
    /// inputs, i32 or u32 results) accumulate in 32 bits and **wrap modulo 2^32** when a sum
    /// leaves the result type's range, as cuBLAS's integer GEMMs do; alpha and beta are applied
    /// in the same 32-bit arithmetic. With 8-bit inputs no sum can wrap while K <= 66_051 (u8 ->
    /// u32) or K <= 131_071 (i8 -> i32). A batch of f32 operands in the default accurate mode
    /// runs the exact f32 kernel (the accurate split scales an operand by its one largest
    /// magnitude, which a batch's entries would share).
    ///
    /// Everything is checked before anything reaches the GPU; an unsupported combination of
    /// operands is [`Error::Unsupported`] or [`Error::InvalidOperand`] naming each operand.
    pub fn run<'a, 'b, 'c, TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        a: impl Input<'a, TA>,
        b: impl Input<'b, TB>,
        c: impl Output<'c, TC>,
    ) -> Result<()> {
        self.run_operands(op, input(a), input(b), output(c))
    }

    /// [`Context::run`] on operands named.
    pub(crate) fn run_operands<TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        a: In<'_, TA>,
        b: In<'_, TB>,
        c: Out<'_, TC>,
    ) -> Result<()> {
        #[cfg(feature = "ndarray")]
        if matches!(a, In::Array(_)) || matches!(b, In::Array(_)) || matches!(c, Out::Array(_)) {
            return super::arrays::run_arrays(self, op, a, b, c);
        }
        match (a, b, c) {
            (In::Pinned(a), In::Pinned(b), Out::Pinned(c)) => {
                op.plain_only("pinned matrices (upload them for the rest)")?;
                self.gemm_pinned(a, b, c, &op.options)
            }
            (a, b, c) if on_host(&a) && on_host(&b) && matches!(c, Out::Host(_) | Out::HostBatch(_)) => {
                self.run_host(op, a, b, c)
            }
            (a, b, Out::Host(c)) if a.is_quantized() || b.is_quantized() => self.run_quantized_host(op, a, b, c),
            (a, b, c) => {
                let planned = self.plan_work(op, (&a, &b, &c))?;
                self.run_work(planned.work(), op.fused.as_ref())
            }
        }
    }

    /// `op` on host operands: one GEMM, a strided batch, or groups.
    fn run_host<TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        a: In<'_, TA>,
        b: In<'_, TB>,
        c: Out<'_, TC>,
    ) -> Result<()> {
        let (options, fused) = (&op.options, op.fused.as_ref());
        match (op.groups, a, b, c) {
            (Groups::Rows(rows), In::Host(a), In::HostBatch(b), Out::Host(c)) => {
                self.grouped_host(a, b, c, rows, options, fused)
            }
            (Groups::Rows(_), ..) => Err(Error::InvalidOperand(
                "a grouped GEMM on the host takes A and C as MatRef and MatMut, and B as a BatchRef of one weight per group".into(),
            )),
            (Groups::Counted(_), ..) => Err(Error::Unsupported(
                "device counts go with device operands: A and C DeviceMatrix, B a DeviceBatch".into(),
            )),
            // One GEMM is a batch of one: the batched path stages through the pool and cuts
            // what passes the allocation limit into pieces, epilogue or not.
            (Groups::None, In::Host(a), In::Host(b), Out::Host(c)) => {
                let (a, b) = (BatchRef::strided(a, 1, 0), BatchRef::strided(b, 1, 0));
                self.batched(a, b, BatchMut::strided(c, 1, 0), options, op.fused)
            }
            (Groups::None, a, b, Out::HostBatch(c)) => match (as_batch(a, c.count), as_batch(b, c.count)) {
                (Some(a), Some(b)) => self.batched(a, b, c, options, op.fused),
                _ => Err(Error::InvalidOperand("a host batch takes host operands".into())),
            },
            (Groups::None, ..) => Err(Error::InvalidOperand(
                "a batch of A or B writes a batch C: pass C as a BatchMut".into(),
            )),
        }
    }

    /// [`Stream::run`](crate::Stream::run) on a stream core: `op` on device operands, planned
    /// and recorded.
    pub(crate) fn enqueue_run<'a, 'b, 'c, TA: Element, TB: Element, TC: Element>(
        &self,
        core: &mut StreamCore,
        op: &Matmul<'_>,
        a: impl Input<'a, TA>,
        b: impl Input<'b, TB>,
        c: impl Output<'c, TC>,
    ) -> Result<()> {
        let (a, b, c) = (input(a), input(b), output(c));
        let planned = self.plan_work(op, (&a, &b, &c))?;
        self.enqueue_work(core, planned.work(), op.fused.as_ref())
    }

    /// Runs planned device work and waits (a grouped GEMM's device counts then read back).
    pub(crate) fn run_work(&self, work: Work<'_>, fused: Option<&Fused<'_>>) -> Result<()> {
        self.run_checked(work, |core| self.enqueue_work(core, work, fused))
    }

    /// Records planned device work on `core`: its pipelines created first (so a failure leaves
    /// the stream as it was), the epilogue's host vectors uploaded, one ordering point, then
    /// every plan with no barrier between them.
    pub(crate) fn enqueue_work(&self, core: &mut StreamCore, work: Work<'_>, fused: Option<&Fused<'_>>) -> Result<()> {
        let fused = fused.copied().unwrap_or_default();
        let counts = work.counts.map(|c| c.at);
        self.enqueue_fused_plans(core, work.plans, work.whole, &fused, (work.output, counts))
    }
}

fn on_host<T: Element>(x: &In<'_, T>) -> bool {
    matches!(x, In::Host(_) | In::HostBatch(_))
}

/// A host input as a batch of `count`: a lone matrix is shared by every entry.
fn as_batch<T: Element>(x: In<'_, T>, count: usize) -> Option<BatchRef<'_, T>> {
    match x {
        In::HostBatch(b) => Some(b),
        In::Host(m) => Some(BatchRef::broadcast(m, count)),
        _ => None,
    }
}
