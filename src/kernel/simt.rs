//! The GEMM without matrix units ([`super::Load::Simt`], [`super::Load::Widen`]): plain 32-bit
//! multiply-adds by the invocations, on any Vulkan 1.3 device. f32, f16 and bf16 operands
//! multiply in f32 (exact to f32 arithmetic), i8 and u8 ones in 32-bit integers (exact, wrapping
//! modulo 2^32 like the matrix units' kernels).
//!
//! The scheme's `BM x BN` tile is split into `8 x 8` blocks, one per invocation (the scheme is
//! chosen so there are exactly as many blocks as invocations). Per K step of `BK`: barrier; the
//! workgroup copies the A and B slices to shared memory, widened to 32 bits as they are copied
//! (`super::widen`) and both stored K-major (`[k][m]` and `[k][n]`, rows skewed by one
//! four-vector), so each invocation reads its 8 rows of A and 8 columns of B at one `k` as two
//! four-vectors each; barrier; 16 four-vector multiply-adds per `k`. Global reads follow the
//! subgroup-scope kernel's rules (16-byte vectors, a vector read only if its row and first
//! element are inside the matrix, zero padding beyond). The epilogue writes each element inside
//! C, with alpha and beta, one by one.

use super::builder::{BuildResult, ModuleBuilder};
use super::epilogue::{store_type, Fused};
use super::push::{Pc, PC_MEMBERS};
use super::raster::{group_table, tile, Tile};
use super::widen::{widen, widen_in_order, widens_to_int};
use super::{KernelKey, Load};
use crate::config::ComponentType;
use crate::tiling::{Layout, TileGeometry, VECTOR_BYTES};
use rspirv::spirv::{
    BuiltIn, Capability, FunctionControl, MemoryAccess, MemorySemantics, Scope, SelectionControl, StorageClass, Word,
};

/// Rows and columns of C per invocation.
pub const BLOCK: u32 = 8;
/// 32-bit elements per four-vector of shared memory.
const VW: u32 = VECTOR_BYTES / 4;
/// 8-bit elements per packed word ([`super::Load::Packed`]).
const PACK: u32 = 4;
pub use super::widen::per_vector;

pub(super) fn emit(key: &KernelKey) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let (d, mut fuse) = declare(&mut mb, key)?;
    let t_fn = mb.b.type_function(d.t_void, []);
    let f_main = mb.b.begin_function(d.t_void, None, FunctionControl::NONE, t_fn)?;
    let l_entry = mb.b.begin_block(None)?;
    let st = setup(&mut mb, key, &d)?;
    mb.counted_loop(l_entry, (d.c0, st.pk, d.g.bk), |b, kb| k_step(b, &d, &st, kb))?;
    epilogue(&mut mb, key, &d, &st, fuse.as_mut())?;
    mb.end_compute(f_main, d.g.threads)?;
    Ok(mb.finish())
}

/// What the stages refer to, declared before the function: the tile's sizes, the types, the
/// interface, the K-major shared slices and the constants.
#[derive(Clone, Copy)]
struct Decl {
    g: TileGeometry,
    /// Blocks of the tile along N (invocations per row of blocks).
    gn: u32,
    fused: bool,
    /// Whether products are integers (i8 and u8 operands: u32 bits) rather than f32.
    int: bool,
    /// Whether 8-bit operands stay packed four along K in shared memory ([`super::Load::Packed`]):
    /// a slice has `BK / 4` rows of words, multiplied by packed dot products.
    packed: bool,
    t_void: Word,
    t_bool: Word,
    t_u32: Word,
    t_f32: Word,
    t_uvec3: Word,
    /// The arithmetic's scalar (f32, or u32 for integers) and four-vector.
    t_s: Word,
    t_v4: Word,
    t_out: Word,
    v_local_index: Word,
    v_workgroup: Word,
    v_pc: Word,
    v_a: Word,
    v_b: Word,
    v_c: Word,
    v_groups: Option<Word>,
    pitch_a: u32,
    pitch_b: u32,
    sh_a: Word,
    sh_b: Word,
    p_wg_v4: Word,
    p_wg_s: Word,
    p_fn_v4: Word,
    c0: Word,
    zero_uvec4: Word,
    zero_v4: Word,
    c_scope_wg: Word,
    c_sem: Word,
}

/// Declares the module's types, interface, shared slices and constants ([`Decl`]), and the
/// fused epilogue's declarations where the key has one.
fn declare(mb: &mut ModuleBuilder, key: &KernelKey) -> BuildResult<(Decl, Option<Fused>)> {
    let g = key.scheme.geometry(&key.config);
    let (gm, gn) = (g.bm / BLOCK, g.bn / BLOCK);
    debug_assert_eq!(gm * gn, g.threads, "checked by KernelKey::check_loads");
    let int = widens_to_int(key.config.component_type);
    let packed = key.loads == [Load::Packed; 2];
    let t_void = mb.t_void();
    let t_bool = mb.t_bool();
    let t_u32 = mb.t_u32();
    let t_f32 = mb.t_f32();
    let t_uvec3 = mb.t_uvec(3);
    let t_uvec4 = mb.t_uvec(4);
    let t_vec4 = mb.b.type_vector(t_f32, 4);
    let (t_s, t_v4) = if int { (t_u32, t_uvec4) } else { (t_f32, t_vec4) };

    let v_local_index = mb.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_workgroup = mb.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = mb.push_constant_block(PC_MEMBERS);
    let v_a = mb.storage_buffer(t_uvec4, VECTOR_BYTES, 0, true);
    let v_b = mb.storage_buffer(t_uvec4, VECTOR_BYTES, 1, true);
    let fused = key.epilogue.is_fused();
    let (t_out, os) = if fused {
        store_type(mb, key.epilogue.output_type(key.config.result_type))
    } else {
        (t_s, 4)
    };
    if os == 2 {
        mb.need(Capability::StorageBuffer16BitAccess);
    }
    let v_c = mb.storage_buffer(t_out, os, 2, false);
    let v_groups = group_table(mb, key.grouped);
    let fuse = fused.then(|| Fused::declare(mb, key.epilogue, key.config.result_type));

    // K-major shared slices, in four-vectors: row pitch of a `[k][x]` slice is x / 4 + 1.
    let (pitch_a, pitch_b) = (g.bm / VW + 1, g.bn / VW + 1);
    let shared = |mb: &mut ModuleBuilder, len: u32| mb.workgroup_array(t_v4, len);
    let rows = if packed { g.bk / PACK } else { g.bk };
    let sh_a = shared(mb, rows * pitch_a);
    let sh_b = shared(mb, rows * pitch_b);
    if packed {
        mb.need(Capability::DotProduct);
        mb.need(Capability::DotProductInput4x8BitPacked);
    }

    let p_wg_v4 = mb.ptr(StorageClass::Workgroup, t_v4);
    let p_wg_s = mb.ptr(StorageClass::Workgroup, t_s);
    let p_fn_v4 = mb.ptr(StorageClass::Function, t_v4);
    let c0 = mb.c_u32(0);
    let zero_uvec4 = mb.b.constant_null(t_uvec4);
    let zero_v4 = if int { zero_uvec4 } else { mb.b.constant_null(t_vec4) };
    let c_scope_wg = mb.c_u32(Scope::Workgroup as u32);
    let c_sem = mb.c_u32((MemorySemantics::ACQUIRE_RELEASE | MemorySemantics::WORKGROUP_MEMORY).bits());
    let d = Decl {
        g,
        gn,
        fused,
        int,
        packed,
        t_void,
        t_bool,
        t_u32,
        t_f32,
        t_uvec3,
        t_s,
        t_v4,
        t_out,
        v_local_index,
        v_workgroup,
        v_pc,
        v_a,
        v_b,
        v_c,
        v_groups,
        pitch_a,
        pitch_b,
        sh_a,
        sh_b,
        p_wg_v4,
        p_wg_s,
        p_fn_v4,
        c0,
        zero_uvec4,
        zero_v4,
        c_scope_wg,
        c_sem,
    };
    Ok((d, fuse))
}

/// One operand's slice of one K step, global -> shared. `k_outer`: stored `[k][x]` in global
/// memory (vectors along x: stored as whole four-vectors); else `[x][k]` (vectors along k:
/// transposed into scalars). `x0`/`x_limit`: the slice's first row of C (or column) and M (or
/// N). `stored`: the type in global memory.
struct Slice {
    stored: ComponentType,
    buf: Word,
    off: Word,
    ld: Word,
    sh: Word,
    pitch: u32,
    extent: u32,
    k_outer: bool,
    x0: Word,
    x_limit: Word,
}

/// What the loop and the epilogue refer to: the accumulators, the ids and sizes, the tile, the
/// invocation's block in it, and the two operands' slices.
struct Setup {
    /// acc[i][h]: row i of the block, columns 4h..4h+4.
    acc: Vec<Word>,
    tid: Word,
    pm: Word,
    pn: Word,
    pk: Word,
    ldc: Word,
    c_off: Word,
    m0: Word,
    n0: Word,
    group: Option<Word>,
    /// The invocation's block row and column, and its vectors' offsets in the shared slices.
    tr: Word,
    tc: Word,
    a_at: Word,
    b_at: Word,
    slice_a: Slice,
    slice_b: Slice,
}

/// The function's first block: the accumulators, the ids, push constants and tile, the
/// invocation's block and the operands' slices.
fn setup(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl) -> BuildResult<Setup> {
    let Decl {
        g,
        gn,
        t_u32,
        t_uvec3,
        v_local_index,
        v_workgroup,
        v_pc,
        v_a,
        v_b,
        v_groups,
        pitch_a,
        pitch_b,
        sh_a,
        sh_b,
        p_fn_v4,
        zero_v4,
        ..
    } = *d;
    // acc[i][h]: row i of the block, columns 4h..4h+4.
    let acc: Vec<Word> = (0..2 * BLOCK)
        .map(|_| mb.b.variable(p_fn_v4, None, StorageClass::Function, Some(zero_v4)))
        .collect();
    let b = mb;

    let tid = b.b.load(t_u32, None, v_local_index, None, [])?;
    let wg = b.b.load(t_uvec3, None, v_workgroup, None, [])?;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(v_pc, which as u32);
    let (pm, pn, pk) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::K)?);
    let (lda, ldb, ldc) = (pc(b, Pc::LdaVec)?, pc(b, Pc::LdbVec)?, pc(b, Pc::Ldc)?);
    let at = (g.bm, g.bn);
    let Tile {
        offsets: [a_off, b_off, c_off],
        pm,
        m0,
        n0,
        group,
    } = tile(b, (v_pc, wg), (pm, pn), at, key.scheme.raster_group(), v_groups)?;
    let tr = b.div_u(tid, gn)?;
    let tc = b.mod_u(tid, gn)?;

    let ct = key.config.component_type;
    let slice_a = Slice {
        stored: key.loads[0].storage_type(ct),
        buf: v_a,
        off: a_off,
        ld: lda,
        sh: sh_a,
        pitch: pitch_a,
        extent: g.bm,
        k_outer: key.a_layout == Layout::ColMajor,
        x0: m0,
        x_limit: pm,
    };
    let slice_b = Slice {
        stored: key.loads[1].storage_type(ct),
        buf: v_b,
        off: b_off,
        ld: ldb,
        sh: sh_b,
        pitch: pitch_b,
        extent: g.bn,
        k_outer: key.b_layout == Layout::RowMajor,
        x0: n0,
        x_limit: pn,
    };
    // This invocation's two vectors of A (rows tr*8..) and of B (columns tc*8..) at one k.
    let a_at = b.mul_u(tr, BLOCK / VW)?;
    let b_at = b.mul_u(tc, BLOCK / VW)?;

    Ok(Setup {
        acc,
        tid,
        pm,
        pn,
        pk,
        ldc,
        c_off,
        m0,
        n0,
        group,
        tr,
        tc,
        a_at,
        b_at,
        slice_a,
        slice_b,
    })
}

/// Non-private pointers: the shared slices are written and read across invocations.
const NP: Option<MemoryAccess> = Some(MemoryAccess::NON_PRIVATE_POINTER);

/// Copies `op`'s slice of the K step from `kb` into shared memory, widened to 32 bits. Where
/// the slice has fewer vectors than a whole number of rounds of the workgroup (8-bit operands'
/// K-contiguous slices), the invocations past its end copy nothing.
fn copy(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    if d.packed {
        return copy_packed(b, d, st, op, kb);
    }
    let Decl {
        g,
        t_bool,
        t_u32,
        t_s,
        p_wg_v4,
        p_wg_s,
        zero_uvec4,
        ..
    } = *d;
    let (tid, pk) = (st.tid, st.pk);
    let per = per_vector(op.stored);
    let (outer, inner) = if op.k_outer {
        (g.bk, op.extent)
    } else {
        (op.extent, g.bk)
    };
    let inner_vecs = inner / per;
    let total = outer * inner_vecs;
    let (outer_base, outer_limit, inner_base, inner_limit) = if op.k_outer {
        (kb, pk, op.x0, op.x_limit)
    } else {
        (op.x0, op.x_limit, kb, pk)
    };
    let inner_base_vec = b.div_u(inner_base, per)?;
    let row_base = b.b.i_add(t_u32, None, op.off, inner_base_vec)?;
    for_each_item(b, (tid, g.threads, total), |b, v| {
        let o = b.div_u(v, inner_vecs)?;
        let iv = b.mod_u(v, inner_vecs)?;
        let go = b.b.i_add(t_u32, None, outer_base, o)?;
        let iv_el = b.mul_u(iv, per)?;
        let gi = b.b.i_add(t_u32, None, inner_base, iv_el)?;
        let ok_o = b.b.u_less_than(t_bool, None, go, outer_limit)?;
        let ok_i = b.b.u_less_than(t_bool, None, gi, inner_limit)?;
        let ok = b.b.logical_and(t_bool, None, ok_o, ok_i)?;
        let row = b.b.i_mul(t_u32, None, go, op.ld)?;
        let idx = b.b.i_add(t_u32, None, row_base, row)?;
        let idx = b.b.i_add(t_u32, None, idx, iv)?;
        let raw = b.load_vector_or_zero((op.buf, op.off), idx, ok, zero_uvec4)?;
        let glsl = if op.stored == ComponentType::F16 { b.glsl() } else { 0 };
        if op.k_outer {
            // The vector's elements are x = iv*per.. of row o: shared [o][x], whole four-vectors.
            let vals = widen_in_order(b, glsl, op.stored, raw)?;
            let at = b.mul_u(o, op.pitch)?;
            let first = b.mul_u(iv, per / VW)?;
            let at = b.b.i_add(t_u32, None, at, first)?;
            for (j, val) in (0u32..).zip(vals) {
                let at = b.add_u(at, j)?;
                let p = b.b.access_chain(p_wg_v4, None, op.sh, [at])?;
                b.b.store(p, val, NP, [])?;
            }
        } else {
            // Element e of the vector is k = iv*per + e of row o: shared [k][o].
            let comp = b.mod_u(o, VW)?;
            let col_vec = b.div_u(o, VW)?;
            for (val, index) in widen(b, glsl, op.stored, raw)? {
                for (lane, e) in (0u32..).zip(index) {
                    let k = b.add_u(iv_el, e)?;
                    let at = b.mul_u(k, op.pitch)?;
                    let at = b.b.i_add(t_u32, None, at, col_vec)?;
                    let x = b.b.composite_extract(t_s, None, val, [lane])?;
                    let p = b.b.access_chain(p_wg_s, None, op.sh, [at, comp])?;
                    b.b.store(p, x, NP, [])?;
                }
            }
        }
        Ok(())
    })
}

/// Runs `body` for items `tid, tid + threads, ...` below `total` (ids): whole rounds of the
/// workgroup unguarded, a last partial one behind a branch.
fn for_each_item(
    b: &mut ModuleBuilder,
    (tid, threads, total): (Word, u32, u32),
    mut body: impl FnMut(&mut ModuleBuilder, Word) -> BuildResult<()>,
) -> BuildResult<()> {
    let t_bool = b.t_bool();
    for t in 0..total.div_ceil(threads) {
        let v = b.add_u(tid, t * threads)?;
        if (t + 1) * threads <= total {
            body(b, v)?;
            continue;
        }
        let c_total = b.c_u32(total);
        let inside = b.b.u_less_than(t_bool, None, v, c_total)?;
        let (l_copy, l_skip) = (b.b.id(), b.b.id());
        b.b.selection_merge(l_skip, SelectionControl::NONE)?;
        b.b.branch_conditional(inside, l_copy, l_skip, [])?;
        b.b.begin_block(Some(l_copy))?;
        body(b, v)?;
        b.b.branch(l_skip)?;
        b.b.begin_block(Some(l_skip))?;
    }
    Ok(())
}

/// [`copy`] for packed 8-bit operands: shared `[k / 4][x]` words, four K-consecutive bytes
/// each. Stored `[x][k]`, a word of a 16-byte vector is such a word already; stored `[k][x]`,
/// an invocation reads four rows' vectors of 16 x and interleaves their bytes.
fn copy_packed(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    if op.k_outer {
        copy_interleaved(b, d, st, op, kb)
    } else {
        copy_words(b, d, st, op, kb)
    }
}

/// Bytes per 16-byte vector of an 8-bit operand.
const BYTES: u32 = 16;

/// Whether element (`k`, `x`) of `op` lies inside the matrix (ids).
fn inside(b: &mut ModuleBuilder, (st, op): (&Setup, &Slice), (k, x): (Word, Word)) -> BuildResult<Word> {
    let t_bool = b.t_bool();
    let ok_k = b.b.u_less_than(t_bool, None, k, st.pk)?;
    let ok_x = b.b.u_less_than(t_bool, None, x, op.x_limit)?;
    b.b.logical_and(t_bool, None, ok_k, ok_x)
}

/// [`copy_packed`] of an operand stored `[x][k]`: each 32-bit word of a vector is four
/// K-consecutive bytes of one x, stored to its word row as it is.
fn copy_words(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    let Decl {
        g,
        t_u32,
        p_wg_s,
        zero_uvec4,
        ..
    } = *d;
    let per = BYTES;
    let k_vecs = g.bk / per;
    let kb_vec = b.div_u(kb, per)?;
    let row_base = b.b.i_add(t_u32, None, op.off, kb_vec)?;
    for_each_item(b, (st.tid, g.threads, op.extent * k_vecs), |b, v| {
        let o = b.div_u(v, k_vecs)?;
        let iv = b.mod_u(v, k_vecs)?;
        let x = b.b.i_add(t_u32, None, op.x0, o)?;
        let iv_el = b.mul_u(iv, per)?;
        let k = b.b.i_add(t_u32, None, kb, iv_el)?;
        let ok = inside(b, (st, op), (k, x))?;
        let row = b.b.i_mul(t_u32, None, x, op.ld)?;
        let idx = b.b.i_add(t_u32, None, row_base, row)?;
        let idx = b.b.i_add(t_u32, None, idx, iv)?;
        let raw = b.load_vector_or_zero((op.buf, op.off), idx, ok, zero_uvec4)?;
        let comp = b.mod_u(o, VW)?;
        let col_vec = b.div_u(o, VW)?;
        let first_row = b.mul_u(iv, per / PACK)?;
        for w in 0..per / PACK {
            let word = b.b.composite_extract(t_u32, None, raw, [w])?;
            let krow = b.add_u(first_row, w)?;
            let at = b.mul_u(krow, op.pitch)?;
            let at = b.b.i_add(t_u32, None, at, col_vec)?;
            let p = b.b.access_chain(p_wg_s, None, op.sh, [at, comp])?;
            b.b.store(p, word, NP, [])?;
        }
        Ok(())
    })
}

/// [`copy_packed`] of an operand stored `[k][x]`: an invocation reads four K rows' vectors of
/// the same 16 x and moves byte `e` of row `r` to byte `r` of x's word.
fn copy_interleaved(b: &mut ModuleBuilder, d: &Decl, st: &Setup, op: &Slice, kb: Word) -> BuildResult<()> {
    let Decl {
        g,
        t_u32,
        t_v4,
        p_wg_v4,
        zero_uvec4,
        ..
    } = *d;
    let per = BYTES;
    let x_vecs = op.extent / per;
    let x0_vec = b.div_u(op.x0, per)?;
    let row_base = b.b.i_add(t_u32, None, op.off, x0_vec)?;
    let splat = |b: &mut ModuleBuilder, v: [u32; 4]| {
        let c = v.map(|x| b.c_u32(x));
        b.b.constant_composite(t_v4, c)
    };
    let (bytes, low) = (splat(b, [0, 8, 16, 24]), splat(b, [0xff; 4]));
    for_each_item(b, (st.tid, g.threads, (g.bk / PACK) * x_vecs), |b, v| {
        let k4 = b.div_u(v, x_vecs)?;
        let xv = b.mod_u(v, x_vecs)?;
        let xv_el = b.mul_u(xv, per)?;
        let x = b.b.i_add(t_u32, None, op.x0, xv_el)?;
        let k_first = b.mul_u(k4, PACK)?;
        let k_first = b.b.i_add(t_u32, None, kb, k_first)?;
        let mut rows = Vec::with_capacity(PACK as usize);
        for r in 0..PACK {
            let k = b.add_u(k_first, r)?;
            let ok = inside(b, (st, op), (k, x))?;
            let row = b.b.i_mul(t_u32, None, k, op.ld)?;
            let idx = b.b.i_add(t_u32, None, row_base, row)?;
            let idx = b.b.i_add(t_u32, None, idx, xv)?;
            rows.push(b.load_vector_or_zero((op.buf, op.off), idx, ok, zero_uvec4)?);
        }
        // Word j of each row holds x = 4j..4j+4: byte e of row r goes to byte r of x's word.
        let at = b.mul_u(k4, op.pitch)?;
        let first = b.mul_u(xv, per / VW)?;
        let at = b.b.i_add(t_u32, None, at, first)?;
        for j in 0..per / VW {
            // Lane e of row r's bytes, moved to byte r: OR over the rows.
            let mut packed = b.b.constant_null(t_v4);
            for (r, &raw) in (0u32..).zip(&rows) {
                let word = b.b.composite_extract(t_u32, None, raw, [j])?;
                let words = b.b.composite_construct(t_v4, None, [word; 4])?;
                let each = b.b.shift_right_logical(t_v4, None, words, bytes)?;
                let each = b.b.bitwise_and(t_v4, None, each, low)?;
                let to = splat(b, [8 * r; 4]);
                let placed = b.b.shift_left_logical(t_v4, None, each, to)?;
                packed = b.b.bitwise_or(t_v4, None, packed, placed)?;
            }
            let at = b.add_u(at, j)?;
            let p = b.b.access_chain(p_wg_v4, None, op.sh, [at])?;
            b.b.store(p, packed, NP, [])?;
        }
        Ok(())
    })
}

/// One K step: both slices to shared memory between barriers, then 16 four-vector
/// multiply-adds per `k` into the accumulators (f32, or wrapping 32-bit integers).
fn k_step(b: &mut ModuleBuilder, d: &Decl, st: &Setup, kb: Word) -> BuildResult<()> {
    let Decl {
        g,
        int,
        t_s,
        t_v4,
        pitch_a,
        pitch_b,
        sh_a,
        sh_b,
        p_wg_v4,
        c_scope_wg,
        c_sem,
        ..
    } = *d;
    let Setup {
        ref acc,
        a_at,
        b_at,
        ref slice_a,
        ref slice_b,
        ..
    } = *st;
    b.b.control_barrier(c_scope_wg, c_scope_wg, c_sem)?;
    copy(b, d, st, slice_a, kb)?;
    copy(b, d, st, slice_b, kb)?;
    b.b.control_barrier(c_scope_wg, c_scope_wg, c_sem)?;
    let mut sums: Vec<Word> = Vec::with_capacity(acc.len());
    for &v in acc {
        sums.push(b.b.load(t_v4, None, v, None, [])?);
    }
    if d.packed {
        packed_products(b, d, st, &mut sums)?;
        for (&v, &s) in acc.iter().zip(&sums) {
            b.b.store(v, s, None, [])?;
        }
        return Ok(());
    }
    let read = |b: &mut ModuleBuilder, sh, base, at| shared_vector(b, (p_wg_v4, t_v4), (sh, base, at));
    for kk in 0..g.bk {
        let a_row = b.add_u(a_at, kk * pitch_a)?;
        let b_row = b.add_u(b_at, kk * pitch_b)?;
        let av = [read(b, sh_a, a_row, 0)?, read(b, sh_a, a_row, 1)?];
        let bv = [read(b, sh_b, b_row, 0)?, read(b, sh_b, b_row, 1)?];
        for i in 0..BLOCK {
            let a = b.b.composite_extract(t_s, None, av[(i / VW) as usize], [i % VW])?;
            let a4 = if int {
                Some(b.b.composite_construct(t_v4, None, [a; 4])?)
            } else {
                None
            };
            for h in 0..2 {
                let slot = (2 * i + h) as usize;
                sums[slot] = match a4 {
                    Some(a4) => {
                        let prod = b.b.i_mul(t_v4, None, bv[h as usize], a4)?;
                        b.b.i_add(t_v4, None, sums[slot], prod)?
                    }
                    None => {
                        let prod = b.b.vector_times_scalar(t_v4, None, bv[h as usize], a)?;
                        b.b.f_add(t_v4, None, sums[slot], prod)?
                    }
                };
            }
        }
    }
    for (&v, &s) in acc.iter().zip(&sums) {
        b.b.store(v, s, None, [])?;
    }
    Ok(())
}

/// A K step's products of packed 8-bit slices into `sums`: per word row (four K), 64 packed
/// dot products (each exact in 32 bits), added wrapping like the widened kernel's.
fn packed_products(b: &mut ModuleBuilder, d: &Decl, st: &Setup, sums: &mut [Word]) -> BuildResult<()> {
    let Decl {
        g,
        t_u32,
        t_v4,
        pitch_a,
        pitch_b,
        sh_a,
        sh_b,
        p_wg_v4,
        ..
    } = *d;
    let signed = st.slice_a.stored == ComponentType::I8;
    let t_i32 = b.b.type_int(32, 1);
    let read = |b: &mut ModuleBuilder, sh, base, at| shared_vector(b, (p_wg_v4, t_v4), (sh, base, at));
    let packed = Some(rspirv::spirv::PackedVectorFormat::PackedVectorFormat4x8Bit);
    for kk in 0..g.bk / PACK {
        let a_row = b.add_u(st.a_at, kk * pitch_a)?;
        let b_row = b.add_u(st.b_at, kk * pitch_b)?;
        let av = [read(b, sh_a, a_row, 0)?, read(b, sh_a, a_row, 1)?];
        let bv = [read(b, sh_b, b_row, 0)?, read(b, sh_b, b_row, 1)?];
        let b_words: Vec<Word> = (0..BLOCK)
            .map(|j| b.b.composite_extract(t_u32, None, bv[(j / VW) as usize], [j % VW]))
            .collect::<BuildResult<_>>()?;
        for i in 0..BLOCK {
            let a = b.b.composite_extract(t_u32, None, av[(i / VW) as usize], [i % VW])?;
            for h in 0..2 {
                let mut lanes = [0; VW as usize];
                for (e, lane) in lanes.iter_mut().enumerate() {
                    let bw = b_words[h * VW as usize + e];
                    *lane = if signed {
                        let dot = b.b.s_dot(t_i32, None, a, bw, packed)?;
                        b.b.bitcast(t_u32, None, dot)?
                    } else {
                        b.b.u_dot(t_u32, None, a, bw, packed)?
                    };
                }
                let dots = b.b.composite_construct(t_v4, None, lanes)?;
                let slot = 2 * i as usize + h;
                sums[slot] = b.b.i_add(t_v4, None, sums[slot], dots)?;
            }
        }
    }
    Ok(())
}

/// `alpha * x + beta * C` of one element (C at `p`), each term where present, in the
/// arithmetic's type (wrapping for integers).
fn scaled(
    b: &mut ModuleBuilder,
    d: &Decl,
    (x, p): (Word, Word),
    (alpha, beta): (Option<Word>, Option<Word>),
) -> BuildResult<Word> {
    let t = d.t_s;
    let mul = |b: &mut ModuleBuilder, x, y| {
        if d.int {
            b.b.i_mul(t, None, x, y)
        } else {
            b.b.f_mul(t, None, x, y)
        }
    };
    let mut x = x;
    if let Some(a) = alpha {
        x = mul(b, x, a)?;
    }
    if let Some(bt) = beta {
        let old = b.b.load(t, None, p, None, [])?;
        let term = mul(b, old, bt)?;
        x = if d.int {
            b.b.i_add(t, None, x, term)?
        } else {
            b.b.f_add(t, None, x, term)?
        };
    }
    Ok(x)
}

/// The epilogue: each element inside C, alpha * acc (+ beta * C), or the fused terms.
fn epilogue(
    mb: &mut ModuleBuilder,
    key: &KernelKey,
    d: &Decl,
    st: &Setup,
    fuse: Option<&mut Fused>,
) -> BuildResult<()> {
    let Decl {
        fused,
        int,
        t_bool,
        t_u32,
        t_f32,
        t_s,
        t_v4,
        t_out,
        v_pc,
        v_c,
        c0,
        ..
    } = *d;
    let Setup {
        ref acc,
        pm,
        pn,
        ldc,
        c_off,
        m0,
        n0,
        group,
        tr,
        tc,
        ..
    } = *st;
    let b = mb;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(v_pc, which as u32);
    // alpha and beta in the arithmetic's type: f32, or the integer result's bits.
    let scalar_of = |b: &mut ModuleBuilder, which: Pc| -> BuildResult<Word> {
        let bits = pc(b, which)?;
        if int {
            Ok(bits)
        } else {
            b.b.bitcast(t_f32, None, bits)
        }
    };
    let fuse = match fuse {
        Some(f) => {
            f.prepare(b, v_pc, group)?;
            Some(&*f)
        }
        None => None,
    };
    let p_sb_out = b.ptr(StorageClass::StorageBuffer, t_out);
    let alpha = if key.epilogue.alpha && !fused {
        Some(scalar_of(b, Pc::Alpha)?)
    } else {
        None
    };
    let beta = if key.epilogue.beta && !fused {
        Some(scalar_of(b, Pc::Beta)?)
    } else {
        None
    };
    let row0 = b.mul_u(tr, BLOCK)?;
    let row0 = b.b.i_add(t_u32, None, m0, row0)?;
    let col0 = b.mul_u(tc, BLOCK)?;
    let col0 = b.b.i_add(t_u32, None, n0, col0)?;
    for i in 0..BLOCK {
        let row = b.add_u(row0, i)?;
        let ok_r = b.b.u_less_than(t_bool, None, row, pm)?;
        let base = b.b.i_mul(t_u32, None, row, ldc)?;
        let base = b.b.i_add(t_u32, None, base, c_off)?;
        for h in 0..2 {
            let sum = b.b.load(t_v4, None, acc[(2 * i + h) as usize], None, [])?;
            for e in 0..VW {
                let col = b.add_u(col0, h * VW + e)?;
                let ok_c = b.b.u_less_than(t_bool, None, col, pn)?;
                let ok = b.b.logical_and(t_bool, None, ok_r, ok_c)?;
                let (l_store, l_skip) = (b.b.id(), b.b.id());
                b.b.selection_merge(l_skip, SelectionControl::NONE)?;
                b.b.branch_conditional(ok, l_store, l_skip, [])?;
                b.b.begin_block(Some(l_store))?;
                let gi = b.b.i_add(t_u32, None, base, col)?;
                let p = b.b.access_chain(p_sb_out, None, v_c, [c0, gi])?;
                let mut x = b.b.composite_extract(t_s, None, sum, [e])?;
                if let Some(f) = fuse {
                    x = f.element(b, x, (row, col), p)?;
                }
                let x = scaled(b, d, (x, p), (alpha, beta))?;
                b.b.store(p, x, None, [])?;
                b.b.branch(l_skip)?;
                b.b.begin_block(Some(l_skip))?;
            }
        }
    }
    Ok(())
}

/// Vector `base + at` of the shared-memory slice `sh` (`p_wg_v4` points at its `t_v4`s).
fn shared_vector(
    b: &mut ModuleBuilder,
    (p_wg_v4, t_v4): (Word, Word),
    (sh, base, at): (Word, Word, u32),
) -> BuildResult<Word> {
    let i = b.add_u(base, at)?;
    let p = b.b.access_chain(p_wg_v4, None, sh, [i])?;
    b.b.load(t_v4, None, p, NP, [])
}
