//! Stream-K's side of the workgroup-scope kernel ([`super::KernelKey::stream_k`]).
//!
//! The grid is one-dimensional. Workgroups before `SkFirstTile` take one tile each, as usual;
//! the rest (one per multiprocessor, `crate::plan::StreamK`) share the remaining tiles' K steps
//! evenly, each a contiguous run over the tiles in walk order. A run that starts inside a tile
//! hands that tile's later steps over through scratch: it stores its partial accumulator in its
//! slot and raises its flag. The workgroup whose run ends inside the tile (the one before, so
//! the partial is the first thing the next one computes) waits for the flag, adds the partial
//! and stores the tile. So the last wave of a grid that does not fill it whole is spread over
//! every multiprocessor instead of leaving some idle.
//!
//! Scratch at binding 3: one flag word per sharing workgroup (zeroed before the dispatch), padded
//! to [`FLAG_ALIGN`] bytes, then one accumulator-sized slot per sharing workgroup.
//!
//! The wait spins on a flag that a workgroup which has already started raises first thing, so it
//! needs only two workgroups resident at once. It still gives up after [`SPIN_LIMIT`] reads
//! rather than hang the GPU, and then stores NaN in the tile, so a failure shows.

use super::builder::{BuildResult, ModuleBuilder};
use super::push::Pc;
use rspirv::spirv::{MemoryAccess, MemorySemantics, Scope, SelectionControl, TensorAddressingOperands, Word};

/// Bytes the flags take before the first slot are a multiple of this.
pub const FLAG_ALIGN: u32 = 256;

/// Flag reads before a wait gives up.
const SPIN_LIMIT: u32 = 1 << 22;

/// The scratch buffer's two views (flag words, accumulator elements) and where slots start.
pub(super) struct Shared {
    flags: Word,
    parts: Word,
    /// The accumulator element type and its size in bytes.
    elem: (Word, u32),
    /// Elements of one slot.
    slot_elems: u32,
}

impl Shared {
    /// Declares scratch at binding 3 for accumulators of `slot_elems` elements of `t_res`
    /// (`res_bytes` each).
    pub(super) fn declare(b: &mut ModuleBuilder, (t_res, res_bytes): (Word, u32), slot_elems: u32) -> Self {
        let t_u32 = b.t_u32();
        Self {
            flags: b.storage_buffer(t_u32, 4, 3, false),
            parts: b.storage_buffer(t_res, res_bytes, 3, false),
            elem: (t_res, res_bytes),
            slot_elems,
        }
    }
}

/// The K steps workgroup `wg` of `workgroups` covers, `[start, end)` over the tiles' steps in
/// walk order (`tile_steps` per tile), and its slot (meaningful for sharing workgroups only).
pub(super) fn range(b: &mut ModuleBuilder, v_pc: Word, wg: Word, tile_steps: Word) -> BuildResult<(Word, Word, Word)> {
    let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
    let first = b.push_constant(v_pc, Pc::SkFirstTile as u32)?;
    let steps = b.push_constant(v_pc, Pc::SkSteps as u32)?;
    let longer = b.push_constant(v_pc, Pc::SkLonger as u32)?;
    let one_each = b.b.u_less_than(t_bool, None, wg, first)?;
    let slot = b.b.i_sub(t_u32, None, wg, first)?;
    // Sharing workgroup `slot` starts after the one-each tiles and `slot` runs before it, the
    // first `longer` of them a step longer.
    let base = b.b.i_mul(t_u32, None, first, tile_steps)?;
    let before = b.b.i_mul(t_u32, None, slot, steps)?;
    let is_longer = b.b.u_less_than(t_bool, None, slot, longer)?;
    let extra = b.b.select(t_u32, None, is_longer, slot, longer)?;
    let start = b.b.i_add(t_u32, None, base, before)?;
    let start = b.b.i_add(t_u32, None, start, extra)?;
    let (c0, c1) = (b.c_u32(0), b.c_u32(1));
    let more = b.b.select(t_u32, None, is_longer, c1, c0)?;
    let len = b.b.i_add(t_u32, None, steps, more)?;
    let own_start = b.b.i_mul(t_u32, None, wg, tile_steps)?;
    let start = b.b.select(t_u32, None, one_each, own_start, start)?;
    let len = b.b.select(t_u32, None, one_each, tile_steps, len)?;
    let end = b.b.i_add(t_u32, None, start, len)?;
    Ok((start, end, slot))
}

/// EXPERIMENT (call 5): VK_SGMAT_SK_SYNC.
fn experiment() -> String {
    std::env::var("VK_SGMAT_SK_SYNC").unwrap_or_default()
}

fn access() -> MemoryAccess {
    if experiment() == "relaxed" {
        MemoryAccess::NONE
    } else {
        MemoryAccess::NON_PRIVATE_POINTER
    }
}

/// Constants of the synchronisation: (queue-family scope, workgroup scope, release, acquire,
/// barrier semantics).
fn sync_ids(b: &mut ModuleBuilder) -> [Word; 5] {
    let uniform = MemorySemantics::UNIFORM_MEMORY;
    [
        b.c_u32(Scope::QueueFamily as u32),
        b.c_u32(Scope::Workgroup as u32),
        b.c_u32((MemorySemantics::RELEASE | uniform).bits()),
        b.c_u32((MemorySemantics::ACQUIRE | uniform).bits()),
        b.c_u32(if experiment() == "relaxed" {
            (MemorySemantics::ACQUIRE_RELEASE | uniform).bits()
        } else {
            (MemorySemantics::ACQUIRE_RELEASE
                | uniform
                | MemorySemantics::MAKE_AVAILABLE
                | MemorySemantics::MAKE_VISIBLE)
                .bits()
        }),
    ]
}

/// A tensor layout over slot `slot` (`rows x cols`, row-major) and a pointer to its first
/// element.
fn slot_at(
    b: &mut ModuleBuilder,
    sh: &Shared,
    (t_layout, rows, cols): (Word, u32, u32),
    slot: Word,
    workgroups: Word,
) -> BuildResult<(Word, Word)> {
    let t_u32 = b.t_u32();
    // Slots start after the flags (one per sharing workgroup, at most `workgroups`), padded.
    let flag_bytes = b.mul_u(workgroups, 4)?;
    let flag_bytes = b.add_u(flag_bytes, FLAG_ALIGN - 1)?;
    let flag_bytes = b.div_u(flag_bytes, FLAG_ALIGN)?;
    let first = b.mul_u(flag_bytes, FLAG_ALIGN / sh.elem.1)?;
    let at = b.mul_u(slot, sh.slot_elems)?;
    let at = b.b.i_add(t_u32, None, first, at)?;
    let p_elem = b.ptr(rspirv::spirv::StorageClass::StorageBuffer, sh.elem.0);
    let c0 = b.c_u32(0);
    let p = b.b.access_chain(p_elem, None, sh.parts, [c0, at])?;
    let (c_rows, c_cols, c1) = (b.c_u32(rows), b.c_u32(cols), b.c_u32(1));
    let l = b.b.create_tensor_layout_nv(t_layout, None)?;
    let l =
        b.b.tensor_layout_set_dimension_nv(t_layout, None, l, [c_rows, c_cols])?;
    let l = b.b.tensor_layout_set_stride_nv(t_layout, None, l, [c_cols, c1])?;
    Ok((l, p))
}

/// A pointer to flag `slot`.
fn flag(b: &mut ModuleBuilder, sh: &Shared, slot: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let p = b.ptr(rspirv::spirv::StorageClass::StorageBuffer, t_u32);
    let c0 = b.c_u32(0);
    b.b.access_chain(p, None, sh.flags, [c0, slot])
}

/// Runs `body` in invocation 0 of the workgroup only (`local`: its LocalInvocationIndex), with
/// the label of the block it starts in.
fn first_invocation(
    b: &mut ModuleBuilder,
    local: Word,
    body: impl FnOnce(&mut ModuleBuilder, Word) -> BuildResult<()>,
) -> BuildResult<()> {
    let t_bool = b.t_bool();
    let c0 = b.c_u32(0);
    let is_first = b.b.i_equal(t_bool, None, local, c0)?;
    let (l_then, l_merge) = (b.b.id(), b.b.id());
    b.b.selection_merge(l_merge, SelectionControl::NONE)?;
    b.b.branch_conditional(is_first, l_then, l_merge, [])?;
    b.b.begin_block(Some(l_then))?;
    body(b, l_then)?;
    b.b.branch(l_merge)?;
    b.b.begin_block(Some(l_merge))?;
    Ok(())
}

/// Stores accumulator `acc` (`shape`: its layout type, rows and columns) in slot `slot` and
/// raises the slot's flag once the whole workgroup's stores are available.
pub(super) fn hand_over(
    b: &mut ModuleBuilder,
    sh: &Shared,
    shape: (Word, u32, u32),
    (acc, slot): (Word, Word),
    (local, workgroups): (Word, Word),
) -> BuildResult<()> {
    if experiment() == "none" {
        return Ok(());
    }
    let [qf, wg_scope, release, _, barrier] = sync_ids(b);
    let (l, p) = slot_at(b, sh, shape, slot, workgroups)?;
    b.b.cooperative_matrix_store_tensor_nv(p, acc, l, access(), TensorAddressingOperands::NONE, [])?;
    b.b.control_barrier(wg_scope, qf, barrier)?;
    let p_flag = flag(b, sh, slot)?;
    let c1 = b.c_u32(1);
    first_invocation(b, local, |b, _| {
        b.b.atomic_store(p_flag, qf, release, c1)?;
        Ok(())
    })
}

/// Waits for slot `slot`'s flag and returns accumulator `acc` plus the slot's partial (type
/// `t_acc`; NaN everywhere where the wait gave up).
pub(super) fn take_over(
    b: &mut ModuleBuilder,
    sh: &Shared,
    (shape, t_acc): ((Word, u32, u32), Word),
    (acc, slot): (Word, Word),
    (local, workgroups): (Word, Word),
) -> BuildResult<Word> {
    if experiment() == "none" {
        return Ok(acc);
    }
    let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
    let [qf, wg_scope, _, acquire, barrier] = sync_ids(b);
    let p_flag = flag(b, sh, slot)?;
    let (c0, c1) = (b.c_u32(0), b.c_u32(1));
    let c_limit = b.c_u32(SPIN_LIMIT);
    first_invocation(b, local, |b, l_entry| {
        let (l_header, l_body, l_continue, l_merge) = (b.b.id(), b.b.id(), b.b.id(), b.b.id());
        let next = b.b.id();
        b.b.branch(l_header)?;
        b.b.begin_block(Some(l_header))?;
        let i = b.b.phi(t_u32, None, [(c0, l_entry), (next, l_continue)])?;
        b.b.loop_merge(l_merge, l_continue, rspirv::spirv::LoopControl::NONE, [])?;
        b.b.branch(l_body)?;
        b.b.begin_block(Some(l_body))?;
        let v = b.b.atomic_load(t_u32, None, p_flag, qf, acquire)?;
        let waiting = b.b.i_equal(t_bool, None, v, c0)?;
        let in_time = b.b.u_less_than(t_bool, None, i, c_limit)?;
        let again = b.b.logical_and(t_bool, None, waiting, in_time)?;
        b.b.branch_conditional(again, l_continue, l_merge, [])?;
        b.b.begin_block(Some(l_continue))?;
        b.b.i_add(t_u32, Some(next), i, c1)?;
        b.b.branch(l_header)?;
        b.b.begin_block(Some(l_merge))?;
        Ok(())
    })?;
    b.b.control_barrier(wg_scope, qf, barrier)?;
    // Every invocation reads the flag again: raised, the partial is visible (acquire); not,
    // the wait gave up and the tile becomes NaN rather than a wrong number.
    let v = b.b.atomic_load(t_u32, None, p_flag, qf, acquire)?;
    let raised = b.b.i_equal(t_bool, None, v, c1)?;
    let (l, p) = slot_at(b, sh, shape, slot, workgroups)?;
    let zero = b.c_bits(sh.elem.0, 0);
    let zero = b.b.composite_construct(t_acc, None, [zero])?;
    let part =
        b.b.cooperative_matrix_load_tensor_nv(t_acc, None, p, zero, l, access(), TensorAddressingOperands::NONE, [])?;
    let sum = b.b.f_add(t_acc, None, acc, part)?;
    let t_f32 = b.t_f32();
    let (one, nan) = (
        b.b.constant_bit32(t_f32, 1f32.to_bits()),
        b.b.constant_bit32(t_f32, f32::NAN.to_bits()),
    );
    let factor = b.b.select(t_f32, None, raised, one, nan)?;
    let factor = if sh.elem.0 == t_f32 {
        factor
    } else {
        b.b.f_convert(sh.elem.0, None, factor)?
    };
    let factor = b.b.composite_construct(t_acc, None, [factor])?;
    b.b.f_mul(t_acc, None, sum, factor)
}
