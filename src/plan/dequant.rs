//! GEMMs with an operand held in a ggml block format ([`QuantType`]): a pass dequantizes it into
//! a dense f16 or f32 copy in scratch ([`crate::kernel::dequant`]), and the GEMM planned on that
//! copy as on any dense operand reads it from there. The GEMM's own plan is made first, with the
//! operand seen as the dense copy at the start of its binding; [`dequantized_first`] then puts
//! the copy after the plan's own scratch (whose start may hold zeroed scale words or a tile
//! table) and points every binding of the operand at it.

use super::device_ld;
use super::gemm::{Dispatch, GemmPlan, Kernel, Operand};
use super::passes::{DispatchLimits, Window};
use crate::config::ComponentType;
use crate::error::{Error, Result};
use crate::kernel::{
    act8, dequant, GemvKey, PushConstants, BLOCK_LANE_VALUES, GEMV_MAX_COLS, GEMV_MAX_ROWS_PER_LANE, GEMV_THREADS,
};
use crate::quant::QuantType;
use crate::tiling::VECTOR_BYTES;

/// An operand in a block format as the planner sees it: `rows` rows of `cols` values, each row
/// `cols / block_values` blocks one after the other, bound at `window`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Quantized {
    /// The block format.
    pub quant: QuantType,
    /// Rows (blocks run along them).
    pub rows: usize,
    /// Values per row: a whole number of blocks.
    pub cols: usize,
    /// Where the blocks lie (`start`: the first block's byte in the binding).
    pub window: Window,
    /// Whether they are interleaved in groups ([`QuantType::interleave`]).
    pub interleaved: bool,
}

impl Quantized {
    /// Bytes of blocks per row as the device holds them (blocks of
    /// [`QuantType::device_block_bytes`]); a typed error where `cols` is not a whole number of
    /// blocks.
    pub fn row_bytes(&self) -> Result<usize> {
        self.quant.device_bytes_for(self.cols)
    }

    /// A typed error unless the first block starts on a word of its binding, as the kernels
    /// reading the blocks assume (a block format whose size is a multiple of 4 is then read a
    /// word at a time; [`crate::Context::upload_quantized`]'s matrices start at 0).
    pub fn check_start(&self) -> Result<()> {
        if self.window.start % 4 != 0 {
            return Err(Error::InvalidOperand(format!(
                "{} blocks from byte {} of their binding: they must start on a 4-byte word",
                self.quant, self.window.start
            )));
        }
        Ok(())
    }

    /// The dense copy's leading dimension, in elements of `to`: as the GEMM must see the
    /// operand while it is planned.
    pub fn copy_ld(&self, to: ComponentType) -> usize {
        device_ld(self.cols, to.size_bytes() as usize)
    }
}

/// `gemm` (planned with the operand bound as `which` read as a dense row-major `rows x cols`
/// matrix of `to`, leading dimension [`Quantized::copy_ld`], at the start of its binding), with
/// the pass that dequantizes `q` into that copy first: the copy in scratch after the plan's own,
/// every binding of `which` pointed at it, a barrier before the plan's first dispatch.
pub fn dequantized_first(
    gemm: GemmPlan,
    which: Operand,
    q: &Quantized,
    to: ComponentType,
    limits: &DispatchLimits,
) -> Result<GemmPlan> {
    dequantized_first_each(gemm, which, std::slice::from_ref(q), to, limits)
}

/// [`dequantized_first`] for a batch of weights of one shape and format (experts: `gemm` planned
/// on their dense copies one after the other, `rows * copy_ld` elements apart): a pass for
/// each, side by side, into consecutive copies.
pub fn dequantized_first_each(
    mut gemm: GemmPlan,
    which: Operand,
    each: &[Quantized],
    to: ComponentType,
    limits: &DispatchLimits,
) -> Result<GemmPlan> {
    let q = check_each(each, to)?;
    let bytes = to.size_bytes() as usize;
    let copy_ld = q.copy_ld(to);
    let one = q.rows * copy_ld * bytes;
    let copy_bytes = (each.len() * one) as u64;
    let copy = scratch_after(gemm.scratch_bytes, copy_bytes, limits, || {
        format!(
            "dequantizing {} x {}x{} {} takes {copy_bytes} bytes of {to} in scratch",
            each.len(),
            q.rows,
            q.cols,
            q.quant
        )
    })?;
    let units = q.cols / dequant::UNIT as usize;
    let groups = (q.rows * units)
        .div_ceil(dequant::tile_units(to) as usize)
        .min(dequant::MAX_GROUPS.min(limits.max_groups[0]) as usize) as u32;
    let passes: Vec<Dispatch> = each
        .iter()
        .enumerate()
        .map(|(i, e)| Dispatch {
            kernel: Kernel::Dequant {
                quant: q.quant,
                to,
                interleaved: q.interleaved,
            },
            bindings: [(which, e.window), (which, e.window), (Operand::Scratch, copy)],
            aux: None,
            vectors: [None; 3],
            push: PushConstants {
                m: q.rows as u32,
                n: units as u32,
                k: groups,
                a_off_vec: e.window.start as u32,
                ldb_vec: (copy_ld * bytes / VECTOR_BYTES as usize) as u32,
                c_off: (i * one / VECTOR_BYTES as usize) as u32,
                ..Default::default()
            },
            groups: [groups, 1, 1],
            after_previous: false,
        })
        .collect();
    for d in &mut gemm.dispatches {
        for (op, w) in d.bindings.iter_mut().chain(d.aux.iter_mut()) {
            if *op == which {
                *op = Operand::Scratch;
                w.bind_offset += copy.bind_offset;
            }
        }
    }
    gemm.dispatches[0].after_previous = true;
    gemm.dispatches.splice(0..0, passes);
    gemm.scratch_bytes = copy.bind_offset + copy.bind_range;
    Ok(gemm)
}

/// The first of `each` (weights dequantized to `to` for one GEMM), checked with the rest: one
/// format and shape, each starting where the pass can read it; a typed error otherwise.
fn check_each(each: &[Quantized], to: ComponentType) -> Result<&Quantized> {
    let Some(q) = each.first() else {
        return Err(Error::InvalidOperand("no weights to dequantize".into()));
    };
    if !matches!(to, ComponentType::F16 | ComponentType::F32) {
        return Err(Error::Unsupported(format!(
            "{} blocks dequantize to f16 or f32, not {to}",
            q.quant
        )));
    }
    if each
        .iter()
        .any(|e| (e.quant, e.rows, e.cols, e.interleaved) != (q.quant, q.rows, q.cols, q.interleaved))
    {
        return Err(Error::InvalidOperand(
            "weights dequantized for one GEMM share their format and shape".into(),
        ));
    }
    // Rows of blocks follow each other without gaps: the pass needs no row stride.
    q.row_bytes()?;
    for e in each {
        e.check_start()?;
    }
    Ok(q)
}

/// A window of `bytes` in scratch after the `used` bytes a plan already binds there (at the
/// next offset the device aligns bindings to), or [`Error::TooLarge`] saying `what` took them
/// where that is over the device's largest binding or allocation.
pub(super) fn scratch_after(
    used: u64,
    bytes: u64,
    limits: &DispatchLimits,
    what: impl FnOnce() -> String,
) -> Result<Window> {
    let offset = used.next_multiple_of(limits.offset_alignment.max(u64::from(VECTOR_BYTES)));
    if bytes > limits.max_range || offset + bytes > limits.max_allocation {
        return Err(Error::TooLarge(format!(
            "{}, over the device's limits (binding {}, allocation {})",
            what(),
            limits.max_range,
            limits.max_allocation
        )));
    }
    Ok(Window {
        bind_offset: offset,
        bind_range: bytes,
        start: 0,
    })
}

/// Whether `plan` (planned on the dense view) can read W straight from the blocks
/// ([`gemv_on_blocks`]): it is one matrix-vector dispatch whose W is `which` (not where the
/// quantized operand is the short side).
pub fn streams_blocks(plan: &GemmPlan, which: Operand) -> bool {
    plan.gemv_kernel().is_some() && plan.dispatches.len() == 1 && plan.dispatches[0].bindings[1].0 == which
}

/// How the matrix-vector kernel reads a quantized operand's blocks, as the caller chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockReads {
    /// The rows of W per workgroup and the invocations per row the caller set, where set
    /// (`block_layout`).
    pub layout: (Option<u32>, Option<u32>),
    /// Whether the activations are rounded to 8 bits first ([`GemvKey::int8_x`]).
    pub int8_x: bool,
    /// Whether blocks are read 16 bytes at a time where every one starts on 16 bytes
    /// ([`GemvKey::wide_loads`]; ignored where they do not).
    pub wide_loads: bool,
}

/// `plan` (planned on the dense view; [`streams_blocks`] holds) as a matrix-vector plan reading
/// W straight from the blocks of `q`, each unit dequantized in registers as it streams. Bytes of
/// blocks per row and the first block's byte go where the kernel's W leading dimension and
/// offset in vectors would, laid out and read as `reads` says. With `int8_x`, the activations
/// are rounded to 8 bits first (a pass of [`crate::kernel::act8`] into scratch, the kernel
/// reading its blocks: [`GemvKey::int8_x`]).
pub fn gemv_on_blocks(
    mut plan: GemmPlan,
    which: Operand,
    q: &Quantized,
    reads: BlockReads,
    limits: &DispatchLimits,
) -> Result<GemmPlan> {
    let BlockReads {
        layout,
        int8_x,
        wide_loads,
    } = reads;
    let Some(key) = plan.gemv_kernel().filter(|_| streams_blocks(&plan, which)) else {
        return Err(Error::InvalidOperand(format!(
            "plan {} does not stream a quantized operand's blocks",
            plan.kernel_name()
        )));
    };
    let row_bytes = q.row_bytes()?;
    q.check_start()?;
    let d = &mut plan.dispatches[0];
    let (cols, lanes) = block_layout(&key, d.push.k, layout, int8_x)?;
    let key = GemvKey {
        quant: Some(q.quant),
        unroll: 1,
        cols,
        lanes,
        wide_loads: wide_loads && GemvKey::wide_loads_fit(q.quant, q.interleaved, q.window.start, row_bytes as u64),
        interleaved: q.interleaved,
        int8_x,
        ..key
    };
    let key = super::fit_workgroup_memory(key, layout.0.is_some(), limits)?;
    d.groups[0] = d.push.n.div_ceil(key.cols);
    d.kernel = Kernel::Gemv(key);
    d.bindings[1] = (which, q.window);
    d.push.ldb_vec = row_bytes as u32;
    d.push.b_off_vec = q.window.start as u32;
    // Planned on the dense view with the binding limit lifted: now that the blocks are bound,
    // every binding must fit the device's.
    if let Some((op, w)) = d.bindings.iter().find(|(_, w)| w.bind_range > limits.max_range) {
        return Err(Error::TooLarge(format!(
            "the matrix-vector GEMM on {} blocks binds {} bytes of {op:?}, over the device's largest binding ({})",
            q.quant, w.bind_range, limits.max_range
        )));
    }
    if int8_x {
        return with_int8_activations(plan, limits);
    }
    Ok(plan)
}

/// Whether the matrix-vector kernel rounds X to 8 bits itself ([`GemvKey::round_x`]) rather
/// than after a pass: one row of 2-byte activations, beside every format but MXFP4 and IQ4's.
/// H200, one token of 22016x4096 / 14336x4096 f16 activations, us, rounded in the kernel
/// against the pass (docs/perf/h200-46-1.txt): q4_0 17.7 / 12.3 against 19.7 / 12.1, q4_K
/// 18.1 / 12.6 against 20.1 / 12.4, q6_K 23.2 / 16.0 against 24.8 / 17.8, q8_0 26.2 / 18.8
/// against 28.7 / 21.5: nothing waits for a pass. MXFP4 23.9 / 16.7 against 23.0 / 16.2 and
/// IQ4_NL 31.8 / 22.0 against 31.4 / 22.3, whose codes cost more to unpack: rounding X again in
/// every workgroup costs them what the pass saves. More rows ran slower in every format (q4_0,
/// two / four / eight tokens of 22016x4096: 26.1 / 44.6 / 125.2 us against 22.2 / 29.9 /
/// 43.2), as did f32 activations (q4_K, one token: 33.8 against 20.4): each workgroup reads
/// every row of X whole.
fn rounds_x(elem: ComponentType, rows: u32, quant: Option<QuantType>) -> bool {
    rows == 1
        && elem.size_bytes() == 2
        && !matches!(
            quant,
            Some(QuantType::Mxfp4 | QuantType::Nvfp4 | QuantType::Iq4Nl | QuantType::Iq4Xs)
        )
}

/// `plan` (from [`gemv_on_blocks`]) with its activations rounded to 8 bits, and the
/// matrix-vector kernel multiplying them with the weights' codes in packed dot products
/// ([`GemvKey::int8_x`]): by the kernel itself as it loads X where [`rounds_x`] says, else
/// first, by a pass ([`crate::kernel::act8`]) writing X's blocks of 32 codes and scales into
/// scratch after the plan's own, where the kernel reads them. A typed error where the blocks
/// do not fit the device's limits.
fn with_int8_activations(mut plan: GemmPlan, limits: &DispatchLimits) -> Result<GemmPlan> {
    let key = match plan.gemv_kernel() {
        Some(key) if plan.dispatches.len() == 1 && key.quant.is_some() => key,
        _ => {
            return Err(Error::InvalidOperand(format!(
                "plan {} is not one matrix-vector dispatch on quantized weights",
                plan.kernel_name()
            )))
        }
    };
    let gemv = plan.dispatches[0];
    if rounds_x(key.elem, key.rows, key.quant) {
        plan.dispatches[0].kernel = Kernel::Gemv(GemvKey {
            int8_x: true,
            round_x: true,
            ..key
        });
        return Ok(plan);
    }
    let units = gemv.push.k / act8::UNIT;
    let row_vectors = units * act8::BLOCK_VECTORS;
    let bytes = u64::from(key.rows) * u64::from(row_vectors) * u64::from(VECTOR_BYTES);
    let blocks = scratch_after(plan.scratch_bytes, bytes, limits, || {
        format!(
            "{} rows of K = {} as 8-bit blocks take {bytes} bytes of scratch",
            key.rows, gemv.push.k
        )
    })?;
    let groups = (key.rows * units)
        .div_ceil(act8::THREADS)
        .min(act8::MAX_GROUPS.min(limits.max_groups[0]));
    let x = gemv.bindings[0];
    let pass = Dispatch {
        kernel: Kernel::Act8 { elem: key.elem },
        bindings: [x, x, (Operand::Scratch, blocks)],
        aux: None,
        vectors: [None; 3],
        push: PushConstants {
            m: key.rows,
            n: units,
            k: groups,
            lda_vec: gemv.push.lda_vec,
            a_off_vec: gemv.push.a_off_vec,
            ldb_vec: row_vectors,
            c_off: 0,
            ..Default::default()
        },
        groups: [groups, 1, 1],
        after_previous: false,
    };
    let d = &mut plan.dispatches[0];
    d.kernel = Kernel::Gemv(GemvKey { int8_x: true, ..key });
    d.bindings[0] = (Operand::Scratch, blocks);
    d.push.lda_vec = row_vectors;
    d.push.a_off_vec = 0;
    d.after_previous = true;
    plan.dispatches.insert(0, pass);
    plan.scratch_bytes = blocks.bind_offset + blocks.bind_range;
    Ok(plan)
}

/// The rows of quantized W per workgroup and the invocations per row ([`GemvKey::lanes`]) of the
/// matrix-vector kernel on blocks, `key` being the dense view's kernel and `k` its K: the
/// caller's `(cols, lanes)` where set and valid (a typed error where not), else every
/// invocation along each row with [`blocks_cols`]' rows, the layout measured on the H200
/// (35th session). Invocations sharing a row (16, 32 or 64 of them, with 8-bit activations and
/// K a multiple of [`BLOCK_LANE_VALUES`]) ran slower in every case timed, so they are only
/// asked for: H200, one token of 22016x4096 / eight tokens, us, default against 16 lanes (two
/// or four rows each), 32 and 64 (docs/perf/h200-38-1.txt): q4_K 23.8 / 63.2 against
/// 45.0-40.6 / 163.7, 57.2 / 294.7, 59.8 / 299.3; q8_0 33.1 / 67.8 against 88.5-93.0 / 170.2,
/// 82.1 / 313.0, 84.6 / 330.0; q6_K 29.9 / 67.1 against 71.7-65.3 / 169.4, 64.9 / 299.4,
/// 73.3 / 312.8.
pub fn block_layout(
    key: &GemvKey,
    k: u32,
    (cols, lanes): (Option<u32>, Option<u32>),
    int8_x: bool,
) -> Result<(u32, u32)> {
    let whole_runs = int8_x && k % BLOCK_LANE_VALUES == 0;
    let lanes = match lanes {
        None => GEMV_THREADS,
        Some(l) if l == GEMV_THREADS => l,
        Some(l) if [16, 32, 64].contains(&l) && whole_runs => l,
        Some(l) => {
            return Err(Error::InvalidOption(format!(
                "gemv_lanes = {l}: use {GEMV_THREADS}, or 16, 32 or 64 with 8-bit activations and K a multiple of {BLOCK_LANE_VALUES} (here K = {k}, 8-bit activations {})",
                if int8_x { "on" } else { "off" }
            )))
        }
    };
    if lanes == GEMV_THREADS {
        return match cols {
            None => Ok((blocks_cols(key.elem, key.rows, key.cols, int8_x), lanes)),
            Some(c) if (1..=GEMV_MAX_COLS).contains(&c) => Ok((c, lanes)),
            Some(c) => Err(Error::InvalidOption(format!(
                "gemv_cols = {c}: use 1 to {GEMV_MAX_COLS} rows of the weights per workgroup, or None"
            ))),
        };
    }
    let groups = GEMV_THREADS / lanes;
    let fits = |c: u32| {
        GemvKey {
            lanes,
            cols: c,
            int8_x,
            ..*key
        }
        .shared_rows_fit()
    };
    match cols {
        None => Ok((groups, lanes)),
        Some(c) if fits(c) => Ok((c, lanes)),
        Some(c) => Err(Error::InvalidOption(format!(
            "gemv_cols = {c} with {lanes} lanes: use a multiple of {groups} rows of the weights per workgroup, at most {} ({GEMV_MAX_ROWS_PER_LANE} an invocation), with rows of activations times rows of weights at most {GEMV_THREADS} (here {} x {c})",
            groups * GEMV_MAX_ROWS_PER_LANE, key.rows
        ))),
    }
}

/// Rows of quantized W per workgroup of the matrix-vector kernel, where the dense kernel's
/// choice (`dense`) is not the best: with five or more rows of f32 activations four rows of W
/// share each load of X (H200, q4_K 8x22016x4096, f32 activations: 230 us with four, 397 with
/// the dense choice of two, 246 with eight, 745 with one; docs/perf/h200-32-3.txt). Elsewhere
/// the dense choice holds (docs/perf/h200-32-4.txt, one token of 22016x4096, us with 1/2/4/8
/// rows: f32 activations q4_K 119/69/47/56, q6_K 122/72/62/71, q8_0 119/68/45/45, mxfp4
/// 113/65/63/76; f16 activations q4_K 56/51/48/53, four tokens 120/75/76/89, eight
/// 216/134/138/239). With the activations rounded to 8 bits (`int8_x`) they are bytes
/// whatever their type and the dense choice holds (H200, q4_K 8x22016x4096: 67.3 us with two
/// rows, 85.4 with four, 173.4 with eight; q8_0 68.1 / 80.0 / 160.8; docs/perf/h200-35-1.txt),
/// and for one token with 16-byte block loads (H200, one token of 22016x4096 / 14336x4096, us
/// with 2/4/8 rows: q4_K 24.8-16.6 / 23.6-15.1 / 26.7-15.8, q5_K 27.8-18.9 / 28.6-17.9 /
/// 28.2-18.0, q6_K 30.0-22.0 / 29.8-22.0 / 32.0-26.8, q8_0 31.9-24.0 / 33.2-23.6 / 31.4-25.0,
/// q2_K 22.3-16.2 / 20.7-15.1 / 20.8-16.1, q4_0 24.0-17.1 / 21.7-15.2 / 23.0-16.7;
/// docs/perf/h200-40-4.txt): four is the best or within 6% of it in every case.
pub fn blocks_cols(elem: ComponentType, rows: u32, dense: u32, int8_x: bool) -> u32 {
    if elem == ComponentType::F32 && rows >= 5 && !int8_x {
        4
    } else {
        dense
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ComponentType::{Bf16, F16, F32};
    use crate::plan::gemm::tests::{request, unlimited};
    use crate::plan::SplitK;

    fn quantized(quant: QuantType, rows: usize, cols: usize) -> Quantized {
        let bytes = (rows * quant.device_bytes_for(cols).unwrap()) as u64;
        Quantized {
            quant,
            rows,
            cols,
            window: Window::from_start(bytes.next_multiple_of(16)),
            interleaved: quant.interleaves(cols),
        }
    }

    /// A 3 x 64 x 256 GEMM whose B (64 x 256 stored row-major: `nt`) is the copy, in `slices`
    /// split-K slices.
    fn gemm(slices: u32) -> GemmPlan {
        GemmPlan::new(&request(3, 64, 256, 1.0, 0.0, SplitK::Slices(slices)), &unlimited()).unwrap()
    }

    #[test]
    fn the_copy_follows_the_plans_own_scratch_and_every_binding_of_the_operand_reads_it() {
        let inner = gemm(4);
        assert!(inner.scratch_bytes > 0 && inner.dispatches.len() > 1);
        let q = quantized(QuantType::Q4K, 64, 256);
        let plan = dequantized_first(inner.clone(), Operand::B, &q, F16, &unlimited()).unwrap();
        assert_eq!(plan.dispatches.len(), inner.dispatches.len() + 1);
        let pass = &plan.dispatches[0];
        assert_eq!(
            pass.kernel,
            Kernel::Dequant {
                quant: QuantType::Q4K,
                to: F16,
                interleaved: false
            }
        );
        assert_eq!(pass.bindings[0], (Operand::B, q.window));
        let (op, copy) = pass.bindings[2];
        assert_eq!(op, Operand::Scratch);
        let align = unlimited().offset_alignment.max(16);
        assert_eq!(copy.bind_offset, inner.scratch_bytes.next_multiple_of(align));
        assert_eq!(copy.bind_range, 64 * 256 * 2);
        assert_eq!(plan.scratch_bytes, copy.bind_offset + copy.bind_range);
        assert_eq!((pass.push.m, pass.push.n, pass.push.ldb_vec), (64, 8, 32));
        for (d, was) in plan.dispatches[1..].iter().zip(&inner.dispatches) {
            for ((op, w), (was_op, was_w)) in d.bindings.iter().zip(&was.bindings) {
                match was_op {
                    Operand::B => assert_eq!(
                        (*op, w.bind_offset),
                        (Operand::Scratch, was_w.bind_offset + copy.bind_offset)
                    ),
                    _ => assert_eq!((op, w), (was_op, was_w), "the plan's other bindings stay"),
                }
            }
        }
        assert!(plan.dispatches[1].after_previous, "the GEMM waits for the copy");
    }

    /// `gemm(1)`'s problem as one matrix-vector dispatch on the blocks of a 64 x 256 q4_K B,
    /// with or without 8-bit activations.
    fn decode(int8_x: bool, limits: &DispatchLimits) -> Result<GemmPlan> {
        decode_on(&quantized(QuantType::Q4K, 64, 256), int8_x, limits)
    }

    /// [`decode`] on the blocks of `q`.
    fn decode_on(q: &Quantized, int8_x: bool, limits: &DispatchLimits) -> Result<GemmPlan> {
        let mut plan = gemm(1);
        let d = crate::plan::gemv_dispatch(
            &plan.problem,
            F16,
            ((1.0, 0.0), crate::kernel::Epilogue::default()),
            (None, None),
            &unlimited(),
        )?
        .expect("three rows take the matrix-vector kernel");
        (plan.dispatches, plan.scratch_bytes) = (vec![d], 0);
        let reads = BlockReads {
            layout: (None, None),
            int8_x,
            wide_loads: true,
        };
        gemv_on_blocks(plan, Operand::B, q, reads, limits)
    }

    #[test]
    fn counted_decode_takes_its_groups_from_a_table_the_device_builds() {
        use crate::plan::DeviceCounts;
        let one = quantized(QuantType::Q4K, 64, 256);
        let stride = one.window.bind_range as usize;
        let experts = Quantized {
            window: Window::from_start(4 * stride as u64),
            ..one
        };
        let counts = DeviceCounts { offset: 8, stride: 2 };
        let plan = decode_on(&experts, true, &unlimited()).unwrap();
        let scratch = plan.scratch_bytes;
        let counted = plan
            .clone()
            .gemv_grouped_counted(4, counts, stride, (3, (None, None)), &unlimited())
            .unwrap();
        // The table pass beside the 8-bit pass, then the kernel.
        assert_eq!(counted.dispatches.len(), 3);
        let (table, gemv) = (&counted.dispatches[0], &counted.dispatches[2]);
        assert_eq!(table.kernel, Kernel::GroupTable);
        assert!(!table.after_previous && !counted.dispatches[1].after_previous && gemv.after_previous);
        // Tiles of M = 3 rows: three table rows (no more can hold rows), after the 8-bit blocks.
        assert_eq!((table.push.m, table.push.n, table.push.k, table.push.ldc), (3, 4, 3, 3));
        assert_eq!(table.bindings[0].0, Operand::Counts);
        let (op, w) = gemv.aux.unwrap();
        assert_eq!(
            (op, w.bind_offset, w.bind_range),
            (Operand::Scratch, scratch.next_multiple_of(16), 36)
        );
        assert_eq!(table.bindings[2].1, w);
        assert_eq!(counted.scratch_bytes, w.bind_offset + 36);
        let Kernel::Gemv(key) = gemv.kernel else {
            panic!("{:?}", gemv.kernel)
        };
        assert!(
            key.grouped && key.int8_x && key.name().ends_with("_x8_g"),
            "{}",
            key.name()
        );
        assert_eq!((gemv.groups[1], gemv.push.b_batch_vec), (3, stride as u32));
        // Tiles of one row: the kernel made for one row, its rows of W the measured ones.
        let ones = plan
            .clone()
            .gemv_grouped_counted(4, counts, stride, (1, (None, None)), &unlimited());
        let Kernel::Gemv(row) = ones.unwrap().dispatches[2].kernel else {
            panic!("not the matrix-vector kernel")
        };
        assert_eq!((row.rows, row.cols, row.int8_x, row.grouped), (1, 4, true, true));
        // Five experts do not fit the binding; nor do weights apart by a part of a word.
        let over = plan
            .clone()
            .gemv_grouped_counted(5, counts, stride, (3, (None, None)), &unlimited());
        assert!(matches!(over, Err(Error::TooLarge(_))), "{over:?}");
        let odd = plan
            .clone()
            .gemv_grouped_counted(2, counts, stride - 2, (3, (None, None)), &unlimited());
        assert!(matches!(odd, Err(Error::TooLarge(_))), "{odd:?}");
        // Counts at a byte that is not a word's, and a plan that is not decode: typed errors.
        let bytes = DeviceCounts { offset: 6, stride: 1 };
        let bad = plan.gemv_grouped_counted(4, bytes, stride, (3, (None, None)), &unlimited());
        assert!(matches!(bad, Err(Error::InvalidOperand(_))), "{bad:?}");
        let copy = dequantized_first(gemm(1), Operand::B, &one, F16, &unlimited()).unwrap();
        let not = copy.gemv_grouped_counted(4, counts, stride, (3, (None, None)), &unlimited());
        assert!(matches!(not, Err(Error::Unsupported(_))), "{not:?}");
    }

    #[test]
    fn eight_bit_activations_are_a_pass_into_scratch_that_the_kernel_reads() {
        let dense = decode(false, &unlimited()).unwrap();
        let plan = decode(true, &unlimited()).unwrap();
        assert_eq!((dense.dispatches.len(), plan.dispatches.len()), (1, 2));
        let (pass, gemv) = (&plan.dispatches[0], &plan.dispatches[1]);
        assert_eq!(pass.kernel, Kernel::Act8 { elem: F16 });
        assert_eq!(
            pass.bindings[0], dense.dispatches[0].bindings[0],
            "the pass reads X where the f32 kernel would"
        );
        let (op, blocks) = pass.bindings[2];
        assert_eq!(op, Operand::Scratch);
        assert_eq!(blocks.bind_range, 3 * 8 * 48, "three rows of eight 48-byte blocks");
        assert_eq!(plan.scratch_bytes, blocks.bind_offset + blocks.bind_range);
        assert_eq!((pass.push.m, pass.push.n, pass.push.ldb_vec), (3, 8, 24));
        assert_eq!(gemv.bindings[0], (Operand::Scratch, blocks));
        assert_eq!(gemv.bindings[1], dense.dispatches[0].bindings[1], "W: the blocks");
        assert_eq!((gemv.push.lda_vec, gemv.push.a_off_vec), (24, 0));
        assert!(
            gemv.after_previous && !pass.after_previous,
            "the kernel waits for the pass"
        );
        let Kernel::Gemv(key) = gemv.kernel else {
            panic!("{:?}", gemv.kernel)
        };
        assert!(key.int8_x && key.quant == Some(QuantType::Q4K));
        // A binding over the device's limit is a typed error.
        let small = DispatchLimits {
            max_range: 1024,
            ..unlimited()
        };
        assert!(matches!(decode(true, &small), Err(Error::TooLarge(_))));
    }

    #[test]
    fn one_row_of_2_byte_activations_is_rounded_by_the_kernel_but_beside_mxfp4_and_iq4() {
        for q in QuantType::ALL {
            let fast = !matches!(
                q,
                QuantType::Mxfp4 | QuantType::Nvfp4 | QuantType::Iq4Nl | QuantType::Iq4Xs
            );
            assert_eq!(rounds_x(F16, 1, Some(q)), fast, "{q}");
            assert_eq!(rounds_x(Bf16, 1, Some(q)), fast, "{q}");
            assert!(!rounds_x(F32, 1, Some(q)) && !rounds_x(F16, 2, Some(q)) && !rounds_x(F16, 8, Some(q)));
        }
    }

    #[test]
    fn experts_each_take_a_pass_into_consecutive_copies() {
        let inner = gemm(1);
        let q = quantized(QuantType::Q4K, 64, 256);
        let second = Quantized {
            window: Window {
                start: 9232,
                ..q.window
            },
            ..q
        };
        let plan = dequantized_first_each(inner.clone(), Operand::B, &[q, second], F16, &unlimited()).unwrap();
        let (a, b) = (&plan.dispatches[0], &plan.dispatches[1]);
        assert!(!a.after_previous && !b.after_previous && plan.dispatches[2].after_previous);
        assert_eq!((a.push.a_off_vec, b.push.a_off_vec), (0, 9232));
        // Expert 1's copy right after expert 0's: 64 rows of 256 f16 values.
        assert_eq!((a.push.c_off, b.push.c_off), (0, 64 * 256 * 2 / 16));
        assert_eq!(a.bindings[2].1.bind_range, 2 * 64 * 256 * 2);
        let other = Quantized { rows: 3, ..second };
        let mixed = dequantized_first_each(inner, Operand::B, &[q, other], F16, &unlimited());
        assert!(matches!(mixed, Err(Error::InvalidOperand(_))), "{mixed:?}");
    }

    #[test]
    fn f32_copies_and_limits_are_checked() {
        let q = quantized(QuantType::Q8_0, 64, 256);
        let plan = dequantized_first(gemm(1), Operand::B, &q, F32, &unlimited()).unwrap();
        assert_eq!(plan.dispatches[0].push.ldb_vec, 64);
        assert_eq!(plan.dispatches[0].bindings[2].1.bind_offset, 0);
        assert!(matches!(
            dequantized_first(gemm(1), Operand::B, &q, Bf16, &unlimited()),
            Err(Error::Unsupported(_))
        ));
        let small = DispatchLimits {
            max_range: 1024,
            ..unlimited()
        };
        assert!(matches!(
            dequantized_first(gemm(1), Operand::B, &q, F32, &small),
            Err(Error::TooLarge(_))
        ));
        let ragged = Quantized { cols: 48, ..q };
        assert!(matches!(
            dequantized_first(gemm(1), Operand::B, &ragged, F32, &unlimited()),
            Err(Error::InvalidOperand(_))
        ));
    }
}
