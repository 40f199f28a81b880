//! The driver self-test on a context (`crate::selftest`): each kernel family of a plan that
//! runs on a driver's cooperative-matrix configuration is checked once, by its known-answer
//! GEMM on the same pipeline, before the plan is used; a wrong answer drops the configuration
//! and the caller plans again.

use super::context::Context;
use super::operand::Placed;
use crate::error::{Error, Result};
use crate::kernel::Load;
use crate::memory::{Buffer, BufferKind};
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
            let mut plan = GemmPlan::new(&answer.request, &self.limits)?;
            if !rows.is_empty() {
                // None leaves the plan ungrouped, so the check below names the mismatch.
                plan = plan.clone().grouped(rows, *b_stride, &self.limits).unwrap_or(plan);
            }
            let runs_family = plan
                .kernels()
                .iter()
                .any(|k| matches!(k, Kernel::Gemm(key) if family_of(key) == family));
            if !runs_family {
                return Err(Error::Unsupported(format!(
                    "the driver self-test could not build a known-answer GEMM on kernel {} (it planned {}); \
                     this is a vk-sgmat bug: please report it (ContextOptions::self_test off avoids it)",
                    family.name(),
                    plan.kernel_name()
                )));
            }
            // Compiled first and not counted: the GEMM that met the family compiles it anyway.
            self.pipelines.prepare(&plan)?;
            let start = std::time::Instant::now();
            let c = self.run_known_answer(&answer, &plan)?;
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
        // A, B, C, then the epilogue's vectors that are on, each in a buffer of its own.
        let uploads: Vec<(Arc<Buffer>, &[u8])> = answer
            .bytes
            .iter()
            .chain(answer.vectors.iter().flatten())
            .map(|bytes| {
                let size = (bytes.len() as u64).next_multiple_of(16);
                Ok((Arc::new(self.pool.take(size, BufferKind::Storage)?), bytes.as_slice()))
            })
            .collect::<Result<_>>()?;
        let raw = |i: usize| uploads[i].0.raw();
        let mut vectors = [None; 4];
        let mut next = 3;
        for (slot, on) in vectors.iter_mut().zip(&answer.vectors) {
            if on.is_some() {
                *slot = Some(raw(next));
                next += 1;
            }
        }
        let c_size = answer.bytes[2].len() as u64;
        let down = Arc::new(self.pool.take(c_size, BufferKind::Readback)?);
        let placed = |i: usize, (rows, cols), layout, ld| Placed {
            rows,
            cols,
            layout,
            ld,
            offset: 0,
            raw: raw(i),
            owned: None,
        };
        let operands = [
            placed(0, (p.m, p.k), p.a_layout, p.lda),
            placed(1, (p.k, p.n), p.b_layout, p.ldb),
            placed(2, (p.m, p.n), Layout::RowMajor, p.ldc),
        ];
        let touches: Vec<Touch<'_>> = uploads.iter().map(|(b, _)| Touch::unowned(b.raw())).collect();
        let mut stream = self.stream()?;
        let core = &mut *stream.core;
        core.access(&[], &touches)?;
        for (buffer, bytes) in &uploads {
            core.upload(buffer.raw(), 0, bytes.len() as u64, |out| out.copy_from_slice(bytes))?;
        }
        self.pipelines.prepare(plan)?;
        let reads: Vec<Touch<'_>> = touches
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 2)
            .map(|(_, t)| *t)
            .collect();
        core.access(&reads, &[touches[2]])?;
        self.record_fused(core, plan, plan.bind_order(operands), answer.c_type, vectors)?;
        core.access(&[touches[2]], &[])?;
        let mut rec = core.recording()?;
        rec.copy(raw(2), down.raw(), c_size);
        rec.barrier(Access::TRANSFER_WRITE, Access::HOST_READ);
        for (buffer, _) in uploads {
            core.hold(buffer, true);
        }
        core.hold(down.clone(), true);
        stream.synchronize()?;
        let c = down.mapped()?.to_vec();
        Ok(c)
    }
}
