//! A GEMM whose f32 operands are rounded first: one narrowing pass per f32 operand writes its
//! 16-bit copy into scratch ([`crate::kernel::narrow`]), then the GEMM is planned as one of
//! 16-bit operands on those copies. The copies keep the operand's storage order, with the
//! leading dimension padded to whole vectors; scratch holds them first (each at an
//! offset-aligned start), then whatever scratch the GEMM itself needs (split-K slices).

use super::device_ld;
use super::gemm::{Dispatch, GemmPlan, Kernel, Operand, PlanRequest};
use super::passes::{window, DispatchLimits, Window};
use crate::error::{Error, Result};
use crate::kernel::{narrow, Load, PushConstants};
use crate::tiling::VECTOR_BYTES;

/// Plans `req` (whose `convert_first` is set and which has an operand loaded with
/// [`Load::Round`]) as narrowing passes followed by a GEMM of 16-bit operands.
pub(super) fn plan_converted(req: &PlanRequest, limits: &DispatchLimits) -> Result<GemmPlan> {
    let p = &req.problem;
    if p.batch.count > 1 {
        return Err(Error::Unsupported(format!(
            "converting f32 operands first runs one GEMM at a time, and this is a batch of {}; a batch converts them as it loads them",
            p.batch.count
        )));
    }
    let to = req.config.component_type;
    let vec = u64::from(VECTOR_BYTES);
    let align = limits.offset_alignment.max(vec);
    let mut staged = *p;
    let mut loads = req.loads;
    let mut narrows = Vec::new();
    let mut end = 0u64;
    for j in 0..2 {
        if req.loads[j] != Load::Round {
            continue;
        }
        let (rows, cols, layout, ld, bytes) = if j == 0 {
            (p.m, p.k, p.a_layout, p.lda, p.a_bytes)
        } else {
            (p.k, p.n, p.b_layout, p.ldb, p.b_bytes)
        };
        if bytes != 4 {
            return Err(Error::InvalidOperand(format!(
                "operand {} has {bytes}-byte elements; only f32 operands are rounded",
                ["A", "B"][j]
            )));
        }
        let (outer, inner) = layout.outer_inner(rows, cols);
        let copy_ld = device_ld(inner, 2);
        let copy_bytes = outer as u64 * copy_ld as u64 * 2;
        let src_len = (outer as u64 - 1) * ld as u64 * 4 + (inner as u64 * 4).next_multiple_of(vec);
        let src = window(p.offsets[j], src_len, limits);
        let row_vecs = inner.div_ceil(8);
        if src.bind_range > limits.max_range || copy_bytes > limits.max_range {
            return Err(Error::TooLarge(format!(
                "converting an f32 operand of {rows}x{cols} first needs a window of {} bytes, over maxStorageBufferRange ({}); convert it as it loads",
                src.bind_range.max(copy_bytes),
                limits.max_range
            )));
        }
        let groups = (outer * row_vecs)
            .div_ceil(narrow::THREADS as usize)
            .min(narrow::MAX_GROUPS.min(limits.max_groups[0]) as usize) as u32;
        let which = [Operand::A, Operand::B][j];
        narrows.push(Dispatch {
            kernel: Kernel::Narrow { to },
            bindings: [
                (which, src),
                (which, src),
                (
                    Operand::Scratch,
                    Window {
                        bind_offset: end,
                        bind_range: copy_bytes,
                        start: 0,
                    },
                ),
            ],
            aux: None,
            vectors: [None; 3],
            push: PushConstants {
                m: outer as u32,
                n: row_vecs as u32,
                k: groups,
                ldc: inner as u32,
                lda_vec: (ld as u64 * 4 / vec) as u32,
                a_off_vec: (src.start / vec) as u32,
                ldb_vec: (copy_ld as u64 * 2 / vec) as u32,
                c_off: 0,
                ..Default::default()
            },
            groups: [groups, 1, 1],
            after_previous: false,
        });
        if j == 0 {
            (staged.a_bytes, staged.lda) = (2, copy_ld);
        } else {
            (staged.b_bytes, staged.ldb) = (2, copy_ld);
        }
        staged.offsets[j] = end;
        loads[j] = Load::Native;
        end = (end + copy_bytes).next_multiple_of(align);
    }
    let mut plan = GemmPlan::new(
        &PlanRequest {
            problem: staged,
            loads,
            convert_first: false,
            ..*req
        },
        limits,
    )?;
    let staged_ops: Vec<Operand> = (0..2)
        .filter(|&j| req.loads[j] == Load::Round)
        .map(|j| [Operand::A, Operand::B][j])
        .collect();
    for d in &mut plan.dispatches {
        for (op, w) in d.bindings.iter_mut().chain(d.aux.iter_mut()) {
            if *op == Operand::Scratch {
                // The GEMM's own scratch comes after the copies.
                w.bind_offset += end;
            } else if staged_ops.contains(op) {
                *op = Operand::Scratch;
            }
        }
    }
    plan.dispatches[0].after_previous = true;
    plan.scratch_bytes += end;
    if plan.scratch_bytes > limits.max_allocation {
        return Err(Error::TooLarge(format!(
            "converting f32 operands first needs {} bytes of scratch, over the device's largest allocation ({}); convert them as they load",
            plan.scratch_bytes, limits.max_allocation
        )));
    }
    narrows.append(&mut plan.dispatches);
    plan.dispatches = narrows;
    plan.problem = *p;
    Ok(plan)
}
