//! The driver self-test on a context (`crate::selftest`): each kernel family of a plan that
//! runs on a driver's cooperative-matrix configuration is checked once, by its known-answer
//! GEMM on the same pipeline, before the plan is used; a wrong answer drops the configuration
//! and the caller plans again.

use super::context::Context;
use super::fused::{EpilogueVector, Fused};
use super::operand::Placed;
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::Load;
use crate::memory::BufferKind;
use crate::plan::{GemmPlan, Kernel};
use crate::record::Access;
use crate::selftest::known_answer::{family as family_of, first_wrong, known_answer, KnownAnswer};
use crate::selftest::SelfTestReport;
use crate::submit::Touch;
use crate::tiling::Layout;
use std::sync::Arc;

impl Context {
    /// What the driver self-test has found on this device: how many kernel families passed (in
    /// this process or, through its file, an earlier one) and which configurations it dropped
    /// and why. See [`ContextOptions::self_test`](crate::ContextOptions::self_test).
    pub fn self_test(&self) -> SelfTestReport {
        self.verdicts.report()
    }

    /// Whether every kernel of `plan` may run: each GEMM kernel on a driver's configuration
    /// whose family has no verdict yet runs its known-answer GEMM first. `false`: a
    /// configuration of the plan failed (now or on another thread) and is dropped, so the
    /// caller plans again.
    pub(crate) fn self_tested(&self, plan: &GemmPlan) -> Result<bool> {
        if !self.verdicts.on() {
            return Ok(true);
        }
        // The dispatches, not `plan.kernels()`: no list built per GEMM, and a kernel met twice
        // finds its verdict the second time.
        for dispatch in &plan.dispatches {
            let Kernel::Gemm(key) = dispatch.kernel else { continue };
            let family = family_of(&key);
            // Two threads meeting one untested family both test it (the same verdict twice):
            // a lock here would make them compile one after another.
            match self.verdicts.lookup(&family) {
                Some(true) => continue,
                Some(false) => return Ok(false),
                None => {}
            }
            let offered = self.device.info().all_configs();
            if Load::without_matrix_units(family.loads) || !offered.contains(&family.config) {
                // The kernels without matrix units carry a configuration of their own, which
                // may match a driver's by its fields.
                self.verdicts.exempt(&family);
                continue;
            }
            let answer = known_answer(&family, self.limits.max_allocation)?;
            let (rows, b_stride) = &answer.groups;
            let mut known = GemmPlan::new(&answer.request, &self.limits)?;
            if !rows.is_empty() {
                // None leaves the plan ungrouped, so the check below names the mismatch.
                known = known.clone().grouped(rows, *b_stride, &self.limits).unwrap_or(known);
            }
            let runs_family = known
                .kernels()
                .iter()
                .any(|k| matches!(k, Kernel::Gemm(key) if family_of(key) == family));
            if !runs_family {
                return Err(Error::Unsupported(format!(
                    "the driver self-test could not build a known-answer GEMM on kernel {} (it planned {}); \
                     this is a vk-sgmat bug: please report it (ContextOptions::self_test off avoids it)",
                    family.name(),
                    known.kernel_name()
                )));
            }
            // Compiled first and not counted: the GEMM that met the family compiles it anyway.
            // With the GEMM's own plan, all at once (its copies and split-K's reduction beside
            // the family's kernel, each on a thread, as its preparation compiles them, or in one
            // helper process). After the first family, the GEMM's kernels exist and only the
            // known answer's new ones compile.
            self.pipelines.prepare_all(&[plan, &known])?;
            let start = std::time::Instant::now();
            let c = self.run_known_answer(&answer, &known)?;
            let wrong = first_wrong(&answer, &c);
            let failed = wrong.is_some();
            self.verdicts.record(&family, &offered, (wrong, start.elapsed()));
            if failed {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Runs a known-answer GEMM on a stream of its own (the caller may hold the blocking one)
    /// and returns C's bytes.
    fn run_known_answer(&self, answer: &KnownAnswer, plan: &GemmPlan) -> Result<Vec<u8>> {
        let p = &plan.problem;
        let sizes = answer.bytes.each_ref().map(|b| b.len() as u64);
        let take = |size| self.pool.take(size, BufferKind::Storage).map(Arc::new);
        let buffers = [take(sizes[0])?, take(sizes[1])?, take(sizes[2])?];
        let down = Arc::new(self.pool.take(sizes[2], BufferKind::Readback)?);
        let placed = |i: usize, (rows, cols), layout, ld| Placed {
            rows,
            cols,
            layout,
            ld,
            offset: 0,
            raw: buffers[i].raw(),
            owned: None,
        };
        let operands = [
            placed(0, (p.m, p.k), p.a_layout, p.lda),
            placed(1, (p.k, p.n), p.b_layout, p.ldb),
            placed(2, (p.m, p.n), Layout::RowMajor, p.ldc),
        ];
        // The epilogue's vectors go up and are bound as any fused GEMM's host vectors are.
        let [bias, rows, cols] = answer.vectors.each_ref().map(|v| v.as_deref());
        let mut fused = Fused::new();
        if let (Some((axis, t)), Some(bias)) = (answer.request.epilogue.bias, bias) {
            fused = fused.bias(axis, EpilogueVector::host(t, bias));
        }
        if let (Some(rows), Some(cols)) = (rows, cols) {
            let f32s = |v| EpilogueVector::host(ComponentType::F32, v);
            fused = fused.scales(f32s(rows), f32s(cols));
        }
        let mut stream = self.stream()?;
        let core = &mut *stream.core;
        core.access(&[], &buffers.each_ref().map(|b| Touch::unowned(b.raw())))?;
        for (buffer, bytes) in buffers.iter().zip(&answer.bytes) {
            core.upload(buffer.raw(), 0, bytes.len() as u64, |out| out.copy_from_slice(bytes))?;
        }
        self.enqueue_fused(core, plan, plan.bind_order(operands), &fused, answer.c_type)?;
        core.access(&[Touch::unowned(buffers[2].raw())], &[])?;
        let mut rec = core.recording()?;
        rec.copy(buffers[2].raw(), down.raw(), sizes[2]);
        rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
        for buffer in buffers {
            core.hold(buffer, true);
        }
        core.hold(down.clone(), true);
        stream.synchronize()?;
        let c = down.mapped()?.to_vec();
        Ok(c)
    }
}
