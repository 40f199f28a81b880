//! A [`Matmul`] on device-resident operands, planned: every plan it runs with its operands, the
//! whole operands the stream orders it by, and the device counts of a grouped GEMM. Pure: it
//! checks and plans, and neither compiles a pipeline nor records a command.

use super::argument::{In, Out};
use super::context::Context;
use super::matmul::{Groups, Matmul};
use super::matrix::Element;
use super::operand::{placed, Placed};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::plan::{Batch, DeviceCounts, GemmPlan};

/// A device GEMM, planned (owning its plans; [`Planned::work`] lends them out).
pub(crate) struct Planned<'o> {
    /// The plans, recorded with no barrier between them, with their operands in binding order.
    pub plans: Plans<'o>,
    /// A, B and C whole, as the stream orders the work by them.
    pub whole: [Placed<'o>; 3],
    /// A grouped GEMM's counts on the device.
    pub counts: Option<Counts<'o>>,
    /// C's element type.
    pub output: ComponentType,
}

/// Planned device work as the recorder takes it: [`Planned`]'s parts, the plans borrowed.
#[derive(Copy, Clone)]
pub(crate) struct Work<'o> {
    pub plans: &'o [(GemmPlan, [Placed<'o>; 3])],
    pub whole: [Placed<'o>; 3],
    pub counts: Option<Counts<'o>>,
    pub output: ComponentType,
}

/// A plan with its operands in binding order.
pub(crate) type PlanOn<'o> = (GemmPlan, [Placed<'o>; 3]);

/// One plan (nearly every GEMM: no allocation for the list), or several (a grouped GEMM planned
/// group by group).
// Boxing the one plan would allocate on every GEMM, which this enum exists to avoid.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Plans<'o> {
    One([PlanOn<'o>; 1]),
    Many(Vec<PlanOn<'o>>),
}

impl<'o> Plans<'o> {
    pub(crate) fn as_slice(&self) -> &[PlanOn<'o>] {
        match self {
            Plans::One(one) => one,
            Plans::Many(many) => many,
        }
    }

    /// The same plans with their operands mapped.
    pub(crate) fn map<'p>(self, f: impl Fn(Placed<'o>) -> Placed<'p>) -> Plans<'p> {
        let each = |(plan, ops): PlanOn<'o>| (plan, ops.map(&f));
        match self {
            Plans::One([one]) => Plans::One([each(one)]),
            Plans::Many(many) => Plans::Many(many.into_iter().map(each).collect()),
        }
    }
}

impl Planned<'_> {
    /// The work, borrowed.
    pub(crate) fn work(&self) -> Work<'_> {
        Work {
            plans: self.plans.as_slice(),
            whole: self.whole,
            counts: self.counts,
            output: self.output,
        }
    }
}

/// Where a grouped GEMM's sizes lie on the device.
#[derive(Copy, Clone)]
pub(crate) struct Counts<'o> {
    /// The u32 counts.
    pub at: Placed<'o>,
    /// Their offset and stride.
    pub where_: DeviceCounts,
    /// How many (B's weights).
    pub groups: usize,
}

/// A device operand's entry 0, its count (`None`: one matrix for every entry) and stride.
type Entries<'o> = (Placed<'o>, Option<usize>, usize);

fn in_entries<'o, T: Element>(x: &'o In<'_, T>) -> Option<Entries<'o>> {
    match x {
        In::Device(m) => Some((placed(*m), None, 0)),
        In::Buffer(m) => Some((placed(*m), None, 0)),
        In::DeviceBatch(b) => Some(b.entries()),
        _ => None,
    }
}

fn out_entries<'o, T: Element>(x: &'o Out<'_, T>) -> Option<Entries<'o>> {
    match x {
        Out::Device(m) => Some((placed(&**m), None, 0)),
        Out::Buffer(m) => Some((placed(&**m), None, 0)),
        Out::DeviceBatch(b) => Some(b.entries()),
        _ => None,
    }
}

impl Context {
    /// Checks and plans `op` on device operands: one GEMM, a strided batch (C a
    /// [`DeviceBatch`](crate::DeviceBatch); A or B one matrix shared by every entry, or a batch),
    /// or a grouped GEMM (A and C [`DeviceMatrix`](crate::DeviceMatrix)es, B a batch).
    pub(crate) fn plan_work<'o, TA: Element, TB: Element, TC: Element>(
        &self,
        op: &Matmul<'o>,
        (a, b, c): (&'o In<'_, TA>, &'o In<'_, TB>, &'o Out<'_, TC>),
    ) -> Result<Planned<'o>> {
        if a.is_quantized() || b.is_quantized() {
            return self.plan_quantized(op, (a, b, c));
        }
        let (Some(ea), Some(eb), Some(ec)) = (in_entries(a), in_entries(b), out_entries(c)) else {
            return Err(Error::Unsupported(format!(
                "A is {}, B {} and C {}: this call takes device operands (DeviceMatrix, BufferMatrix, DeviceBatch) for all three",
                a.residency(),
                b.residency(),
                c.residency()
            )));
        };
        let fused = op.fused.as_ref();
        let options = &op.options;
        let types = [TA::TYPE, TB::TYPE, TC::TYPE];
        let whole = [ea.0, eb.0, ec.0];
        let grouped = |what: &str| {
            Error::InvalidOperand(format!(
                "a grouped GEMM {what} takes A and C as DeviceMatrix and B as a DeviceBatch of one weight per group; A is {}, B {} and C {}",
                a.residency(),
                b.residency(),
                c.residency()
            ))
        };
        let (plans, counts) = match op.groups {
            Groups::None => (Plans::One([self.plan_entries((ea, eb, ec), types, op)?]), None),
            Groups::Rows(rows) => match (a, b, c) {
                (In::Device(a), In::DeviceBatch(b), Out::Device(c)) => {
                    (Plans::Many(self.plan_groups(a, b, c, rows, options, fused)?), None)
                }
                _ => return Err(grouped("")),
            },
            Groups::Counted(counts) => match (a, b, c) {
                (In::Device(a), In::DeviceBatch(b), Out::Device(c)) => {
                    let (plan, operands, where_) = self.plan_counted(a, b, c, counts, options, fused)?;
                    let counts = Counts {
                        at: counts,
                        where_,
                        groups: b.count(),
                    };
                    (Plans::One([(plan, operands)]), Some(counts))
                }
                _ => return Err(grouped("with device counts")),
            },
        };
        Ok(Planned {
            plans,
            whole,
            counts,
            output: TC::TYPE,
        })
    }

    /// Checks device entries (counts agree, ownership) and plans one GEMM or strided batch, with
    /// `op`'s epilogue; the operands in the plan's binding order.
    fn plan_entries<'o>(
        &self,
        ((pa, na, sa), (pb, nb, sb), (pc, nc, sc)): (Entries<'o>, Entries<'o>, Entries<'o>),
        types: [ComponentType; 3],
        op: &Matmul<'_>,
    ) -> Result<(GemmPlan, [Placed<'o>; 3])> {
        let count = match nc {
            Some(n) => n,
            None if na.is_some() || nb.is_some() => {
                return Err(Error::InvalidOperand(
                    "a batch of A or B writes a batch C: pass C as a DeviceBatch".into(),
                ))
            }
            None => 1,
        };
        for (name, n) in [("A", na), ("B", nb)] {
            if let Some(n) = n.filter(|&n| n != count) {
                return Err(Error::ShapeMismatch(format!(
                    "batch {name} has {n} entries and C {count}: the counts must agree"
                )));
            }
        }
        self.check_placed(&[&pa, &pb, &pc])?;
        let batch = Batch {
            count,
            strides: [sa, sb, sc],
        };
        let terms = op
            .fused
            .as_ref()
            .map(|f| self.fused_terms(f, (pc.rows, pc.cols), types))
            .transpose()?;
        let plan = self.plan_fused(pa, pb, pc, types, batch, &op.options, terms)?;
        let operands = plan.bind_order([pa, pb, pc]);
        Ok((plan, operands))
    }
}
