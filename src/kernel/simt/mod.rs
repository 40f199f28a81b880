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
use rspirv::spirv::{BuiltIn, Capability, FunctionControl, MemoryAccess, MemorySemantics, Scope, StorageClass, Word};

mod copy;
mod k_step;
mod store;

use copy::*;
use k_step::*;
use store::*;

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
    mb.b.begin_block(None)?;
    let st = setup(&mut mb, key, &d)?;
    mb.counted_loop((d.c0, st.pk, d.g.bk), |b, kb| k_step(b, &d, &st, kb))?;
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
