//! [`Context::prepare`]: a [`Matmul`] planned once for its device operands, with its
//! pipelines created and its epilogue's vectors on the device, then run, recorded into any
//! command buffer, or timed as often as needed (VkFFT's plan and append).

use super::argument::{input, output, Input, Output};
use super::context::{bindings, Context};
use super::matmul::Matmul;
use super::matrix::Element;
use super::operand::Placed;
use super::work::{Counts, Planned, Work};
use crate::error::Result;
use crate::memory::Buffer;
use crate::plan::GemmPlan;
use crate::record::{record_plan, Bindings, Recording};
use crate::submit::{StreamCore, Touch};
use std::sync::Arc;

/// A [`Matmul`] prepared on its device operands ([`Context::prepare`]): the plans made, the
/// pipelines created, host vectors of the epilogue uploaded. It holds vk-sgmat's buffers among
/// its operands, so they live as long as it does; the data in them may change between runs
/// (upload new activations into the same [`DeviceMatrix`](crate::DeviceMatrix)).
pub struct Prepared<'c> {
    ctx: &'c Context,
    /// The plans and operands, without owners (see `owners`).
    planned: Planned<'static>,
    /// vk-sgmat's buffers of A, B, C and the counts, if they are its.
    owners: [Option<Arc<Buffer>>; 4],
    /// The epilogue's vectors on the device (bias, row scales, column scales), in the plans'
    /// binding order.
    vectors: [Option<Arc<Buffer>>; 3],
}

impl Context {
    /// Prepares `op` on these device operands ([`DeviceMatrix`](crate::DeviceMatrix),
    /// [`BufferMatrix`](crate::BufferMatrix), [`DeviceBatch`](crate::DeviceBatch); everything
    /// [`Stream::run`](crate::Stream::run) takes): checks and plans it, creates its pipelines
    /// (compiling them where the pipeline cache lacks them: this is the step that takes time),
    /// runs the driver self-test's known-answer GEMM of each kernel family new to this device
    /// and driver ([`ContextOptions::self_test`](crate::ContextOptions::self_test): a
    /// submission of its own, on the context's queues) and uploads its epilogue's host vectors. Run it with [`Prepared::run`], record it with
    /// [`Prepared::record`], time it with `Prepared::time`.
    pub fn prepare<'a, 'b, 'c, TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'_>,
        a: impl Input<'a, TA>,
        b: impl Input<'b, TB>,
        c: impl Output<'c, TC>,
    ) -> Result<Prepared<'_>> {
        let (a, b, c) = (input(a), input(b), output(c));
        let planned = self.plan_work(op, (&a, &b, &c))?;
        for (plan, _) in planned.plans.as_slice() {
            self.pipelines.prepare(plan)?;
        }
        let transposed = planned.plans.as_slice().first().is_some_and(|(p, _)| p.transposed);
        let vectors = match &op.fused {
            Some(f) => self.hold_vectors(f, transposed)?,
            None => [None, None, None],
        };
        let [wa, wb, wc] = planned.whole;
        let owners = [
            wa.owned.cloned(),
            wb.owned.cloned(),
            wc.owned.cloned(),
            planned.counts.and_then(|c| c.at.owned.cloned()),
        ];
        Ok(Prepared {
            ctx: self,
            planned: detach(planned),
            owners,
            vectors,
        })
    }
}

/// Planned work without its operands' owners (the [`Prepared`] holds them).
fn detach(p: Planned<'_>) -> Planned<'static> {
    fn unowned(p: Placed<'_>) -> Placed<'static> {
        Placed { owned: None, ..p }
    }
    Planned {
        plans: p.plans.map(unowned),
        whole: p.whole.map(unowned),
        counts: p.counts.map(|c| Counts { at: unowned(c.at), ..c }),
        output: p.output,
    }
}

impl Prepared<'_> {
    /// The plans it runs, as plain data: one, or one per group of a grouped GEMM that cannot run
    /// as one dispatch.
    pub fn plans(&self) -> impl Iterator<Item = &GemmPlan> {
        self.planned.plans.as_slice().iter().map(|(p, _)| p)
    }

    /// The context it runs on.
    pub fn context(&self) -> &Context {
        self.ctx
    }

    /// Runs it and waits (a grouped GEMM's device counts are read back and checked, as
    /// [`Context::run`] does).
    pub fn run(&self) -> Result<()> {
        // Its own recording, which binds the epilogue's vectors it holds.
        self.ctx.run_checked(self.work(), |core| self.enqueue(core))
    }

    /// Records it into the caller's command buffer `cmd`. See docs/runtime.md for the contract:
    /// the caller places barriers before (after whatever wrote A, B and C) and after (before
    /// whatever reads C); inside, the GEMM's own passes are ordered. The bindings are pushed,
    /// and the returned [`RecordedGemm`] holds the buffers it binds that are vk-sgmat's (split-K
    /// scratch, the epilogue's vectors, the operands), so nothing but it and the context must
    /// outlive the command buffer's execution. C is not poisoned here.
    ///
    /// # Safety
    /// `cmd` must be a primary or secondary command buffer of the context's device, in the
    /// recording state, outside a render pass, for a queue family with compute; the returned
    /// [`RecordedGemm`] and the context must outlive its execution. vk-sgmat's matrices used here
    /// must not be written by the context's streams or blocking calls while it runs (the caller
    /// orders them).
    pub unsafe fn record(&self, cmd: ash::vk::CommandBuffer) -> Result<RecordedGemm> {
        let mut held: Vec<Arc<Buffer>> = self.owners.iter().chain(&self.vectors).flatten().cloned().collect();
        let mut rec = Recording::new(&self.ctx.device, cmd);
        let [v0, v1, v2] = self.vector_raws();
        let counts = self.planned.counts.map(|c| c.at.raw);
        for (plan, [a, b, c]) in self.planned.plans.as_slice() {
            let buf = self.ctx.scratch(plan)?.map(Arc::new);
            let buffers = Bindings {
                vectors: [v0, v1, v2, counts],
                ..bindings([a.raw, b.raw, c.raw], buf.as_deref())
            };
            record_plan(&mut rec, &self.ctx.pipelines, plan, &buffers)?;
            held.extend(buf);
        }
        Ok(RecordedGemm { _held: held })
    }

    /// Records it on `core`: one ordering point after whatever wrote its operands, then its
    /// plans with no barrier between them.
    pub(crate) fn enqueue(&self, core: &mut StreamCore) -> Result<()> {
        let work = self.work();
        let [a, b, c] = work.whole;
        let mut reads = vec![a.touch(), b.touch()];
        reads.extend(work.counts.map(|k| k.at.touch()));
        reads.extend(self.vectors.iter().flatten().map(Touch::from));
        core.access(&reads, &[c.touch()])?;
        let [v0, v1, v2] = self.vector_raws();
        let raws = [v0, v1, v2, work.counts.map(|k| k.at.raw)];
        for (plan, operands) in work.plans {
            self.ctx.record_fused(core, plan, *operands, work.output, raws)?;
        }
        Ok(())
    }

    /// The work with its operands' owners, for ordering against other streams.
    pub(crate) fn work(&self) -> Work<'_> {
        fn owned<'p>(p: Placed<'static>, owner: &'p Option<Arc<Buffer>>) -> Placed<'p> {
            Placed {
                owned: owner.as_ref(),
                ..p
            }
        }
        let [a, b, c] = self.planned.whole;
        let [oa, ob, oc, ok] = &self.owners;
        Work {
            plans: self.planned.plans.as_slice(),
            whole: [owned(a, oa), owned(b, ob), owned(c, oc)],
            counts: self.planned.counts.map(|k| Counts {
                at: owned(k.at, ok),
                ..k
            }),
            output: self.planned.output,
        }
    }

    /// The epilogue's vector buffers, in binding order.
    pub(crate) fn vector_raws(&self) -> [Option<ash::vk::Buffer>; 3] {
        self.vectors.each_ref().map(|v| v.as_ref().map(|b| b.raw()))
    }
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.plans().map(|p| p.kernel_name()).collect();
        write!(f, "Prepared({names:?})")
    }
}

/// What [`Prepared::record`] recorded: keep it until the command buffer has run (it holds the
/// buffers the commands bind: split-K scratch, the epilogue's vectors, vk-sgmat's operands).
#[must_use = "keep it until the recorded command buffer has finished executing"]
#[derive(Debug)]
pub struct RecordedGemm {
    _held: Vec<Arc<Buffer>>,
}
