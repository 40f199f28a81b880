//! Recording into the caller's command buffer ([`Context::record_gemm`]); the contract is in
//! docs/runtime.md.

use super::context::{bindings, Context};
use super::matrix::Element;
use super::operand::{placed, DeviceOperand};
use super::options::GemmOptions;
use crate::error::Result;
use crate::memory::Buffer;
use crate::plan::GemmPlan;
use crate::record::{record_plan, Recording};
use std::sync::Arc;

impl Context {
    /// Records `c = alpha * a * b + beta * c` into the caller's command buffer `cmd`, on
    /// vk-sgmat's matrices or the caller's buffers. Checks and plans first (nothing is recorded
    /// on an error); pipelines are created now. See docs/runtime.md for the contract: the
    /// caller places barriers before (after whatever wrote A, B and C) and after (before
    /// whatever reads C); inside, the GEMM's own passes are ordered. The bindings are pushed, so
    /// nothing but the context (its pipelines) must outlive the command buffer's execution,
    /// plus the returned [`RecordedGemm`] where it holds split-K scratch memory.
    ///
    /// # Safety
    /// `cmd` must be a primary or secondary command buffer of the context's device, in the
    /// recording state, outside a render pass, for a queue family with compute; the context must
    /// outlive its execution. vk-sgmat's matrices used here must not be written by the context's
    /// streams or blocking calls while it runs (the caller orders them).
    pub unsafe fn record_gemm<TA: Element, TB: Element, TC: Element>(
        &self,
        cmd: ash::vk::CommandBuffer,
        a: &impl DeviceOperand<TA>,
        b: &impl DeviceOperand<TB>,
        c: &mut impl DeviceOperand<TC>,
        options: &GemmOptions,
    ) -> Result<RecordedGemm> {
        let plan = self.plan_device(a, b, c, options)?;
        let scratch = self.scratch(&plan)?.map(Arc::new);
        let mut rec = Recording::new(&self.device, cmd);
        let buffers = bindings(
            plan.bind_order([placed(a).raw, placed(b).raw, placed(c).raw]),
            scratch.as_deref(),
        );
        record_plan(&mut rec, &self.pipelines, &plan, &buffers)?;
        Ok(RecordedGemm {
            _scratch: scratch,
            plan,
        })
    }
}

/// What [`Context::record_gemm`] recorded: keep it until the command buffer has run (it holds
/// split-K scratch memory when the plan needs some).
#[must_use = "keep it until the recorded command buffer has finished executing"]
#[derive(Debug)]
pub struct RecordedGemm {
    _scratch: Option<Arc<Buffer>>,
    plan: GemmPlan,
}

impl RecordedGemm {
    /// The plan that was recorded.
    pub fn plan(&self) -> &GemmPlan {
        &self.plan
    }
}
