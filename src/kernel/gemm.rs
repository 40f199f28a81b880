//! The tiled GEMM kernel.
//!
//! One workgroup computes a `BM x BN` block of C with `sg_m x sg_n` subgroups, each owning
//! `fr_m x fr_n` accumulator fragments. Per K step of `BK`:
//!
//! 1. barrier; the 16-byte vectors prefetched into registers are stored to shared memory (A and B
//!    in their global layouts, rows skewed by `pad_bytes`); barrier;
//! 2. the next step's vectors are loaded from global memory into registers, so the loads overlap
//!    the multiplies below (issued after the barrier so it does not wait on them);
//! 3. for each `k` slice: every A fragment of the subgroup is loaded once, then each B fragment is
//!    loaded and multiplied into the `fr_m` accumulators of its column.
//!
//! Bounds: a vector is loaded only if its row is inside the matrix and its first element is;
//! device matrices keep their padding (up to the 16-byte-aligned leading dimension) zero, so the
//! K tail reads zeros, and everything else is replaced by zero. The loop never relies on robust
//! buffer access. The epilogue of a workgroup whose tile lies inside C stores fragments straight
//! to C; a workgroup on the M/N edge sends every fragment through a per-subgroup staging tile in
//! shared memory and masked scalar stores (decided per workgroup, so barriers stay uniform). The
//! `gemm_store` module emits it.

use super::builder::{mul_add_operands, BuildResult, ModuleBuilder};
use super::epilogue::{store_type, Fused};
use super::gemm_store::{self as store, Store};
use super::push::{Pc, PC_MEMBERS};
use super::raster::{group_table, skip_empty, tile, Tile};
use super::{KernelKey, Load, Probe};
use crate::config::GPUSubgroupMatrixConfig;
use crate::tiling::{shared_unit, Layout, TileGeometry, TileScheme, VECTOR_BYTES};
use rspirv::spirv::{
    BuiltIn, Capability, FunctionControl, MemoryAccess, MemorySemantics, Scope, SelectionControl, StorageClass, Word,
};

const ROW_MAJOR: u32 = 0;
const COL_MAJOR: u32 = 1;

/// One operand's staging: how its tile lies in global and shared memory.
struct Operand2d {
    /// Shared array (Workgroup variable) and its unit type/bytes.
    shared: Word,
    unit_t: Word,
    unit_bytes: u32,
    /// Register variables (Function) for the prefetched vectors: per slot, the storage vectors
    /// that hold its one shared vector (two for f32 storage narrowed to 16 bits).
    regs: Vec<Vec<Word>>,
    /// How the operand is stored and converted.
    load: Load,
    /// For [`Load::Split`]: the f32 scale applied before splitting, and where the low parts
    /// start (units after the high parts).
    split: Option<(Word, u32)>,
    /// Per copy slot: (outer row in tile, inner vector in tile, shared index in units).
    slots: Vec<(Word, Word, Word)>,
}

pub(super) fn emit(key: &KernelKey) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    mb.drop_products = key.probe == super::Probe::NoProducts;
    let (d, mut fuse) = declare(&mut mb, key)?;
    let t_fn = mb.b.type_function(d.ty.t_void, []);
    let f_main = mb.b.begin_function(d.ty.t_void, None, FunctionControl::NONE, t_fn)?;
    mb.b.begin_block(None)?;
    let st = setup(&mut mb, key, &d, fuse.as_mut())?;
    main_loop(&mut mb, key, &d, &st)?;
    store::emit(
        &mut mb,
        Store {
            key,
            fuse: fuse.as_ref(),
            scales: st.scales,
            v_pc: d.io.v_pc,
            types: (d.ty.t_u32, d.ty.t_bool, d.ty.t_res, d.ptr.t_res2, d.ty.t_mat_acc),
            c: (
                d.io.v_c,
                d.ptr.p_sb_res,
                d.ptr.p_sb_out,
                st.ldc,
                st.c_off,
                (st.pm, st.pn),
            ),
            tile: (st.m0, st.n0, st.a_sg_rows, st.b_sg_cols, st.sg, st.lane),
            acc_vars: &st.acc_vars,
            staging: (d.sh.sh_host, d.lay.host_unit, d.ptr.p_wg_u32, d.ptr.p_wg_host),
            consts: (d.k.c0, d.k.c_row_major, d.k.zero_res),
            barriers: (d.k.c_scope_wg, d.k.c_scope_sg, d.k.c_sem),
        },
    )?;
    mb.end_compute(f_main, d.g.threads)?;
    Ok(mb.finish())
}

/// What every stage of the kernel refers to, declared before its function: the key's sizes, the
/// types, the interface (built-ins, push constants, buffers), the shared arrays, their layout and
/// pointer types, and the constants.
#[derive(Clone, Copy)]
struct Decl {
    cfg: GPUSubgroupMatrixConfig,
    s: TileScheme,
    g: TileGeometry,
    /// Bytes per element of the inputs; elements per 16-byte vector.
    es: u32,
    vw: u32,
    split: bool,
    ty: Types,
    io: Interface,
    lay: SharedLayout,
    sh: SharedArrays,
    ptr: Pointers,
    k: Consts,
}

/// The types every stage uses.
#[derive(Clone, Copy)]
struct Types {
    t_void: Word,
    t_bool: Word,
    t_u32: Word,
    t_uvec3: Word,
    t_uvec4: Word,
    t_mat_a: Word,
    t_mat_b: Word,
    t_mat_acc: Word,
    t_res: Word,
}

impl Types {
    fn declare(mb: &mut ModuleBuilder, cfg: &GPUSubgroupMatrixConfig) -> Self {
        let t_void = mb.t_void();
        let t_bool = mb.t_bool();
        let t_u32 = mb.t_u32();
        let t_uvec3 = mb.t_uvec(3);
        let t_uvec4 = mb.t_uvec(4);
        let (t_mat_a, t_mat_b, t_mat_acc) = mb.matrix_types(cfg, Scope::Subgroup, (cfg.m, cfg.n, cfg.k));
        let t_res = mb.t_scalar(cfg.result_type);
        Types {
            t_void,
            t_bool,
            t_u32,
            t_uvec3,
            t_uvec4,
            t_mat_a,
            t_mat_b,
            t_mat_acc,
            t_res,
        }
    }
}

/// The kernel's interface: built-ins, push constants and buffers.
#[derive(Clone, Copy)]
struct Interface {
    v_local_index: Word,
    v_workgroup: Word,
    v_subgroup: Word,
    v_lane: Word,
    v_pc: Word,
    v_a: Word,
    v_b: Word,
    v_c: Word,
    v_scale: Option<Word>,
    v_groups: Option<Word>,
}

impl Interface {
    /// The interface, the type C is stored in, and a fused epilogue's declarations.
    fn declare(mb: &mut ModuleBuilder, key: &KernelKey, ty: &Types, split: bool) -> (Self, Word, Option<Fused>) {
        let cfg = key.config;
        let t_u32 = ty.t_u32;
        let v_local_index = mb.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
        let v_workgroup = mb.builtin_input(ty.t_uvec3, BuiltIn::WorkgroupId);
        let v_subgroup = mb.builtin_input(t_u32, BuiltIn::SubgroupId);
        let v_lane = mb.builtin_input(t_u32, BuiltIn::SubgroupLocalInvocationId);
        let v_pc = mb.push_constant_block(PC_MEMBERS);
        let v_a = mb.storage_buffer(ty.t_uvec4, VECTOR_BYTES, 0, true);
        let v_b = mb.storage_buffer(ty.t_uvec4, VECTOR_BYTES, 1, true);
        // A fused epilogue stores C in its own type, element by element.
        let fused = key.epilogue.is_fused();
        let rs = cfg.result_type.size_bytes();
        let (t_out, os) = if fused {
            store_type(mb, key.epilogue.output_type(cfg.result_type))
        } else {
            (ty.t_res, rs)
        };
        if os == 2 || rs == 2 {
            mb.need(Capability::StorageBuffer16BitAccess);
        }
        let v_c = mb.storage_buffer(t_out, os, 2, false);
        let v_scale = split.then(|| mb.storage_buffer(t_u32, 4, 3, true));
        let v_groups = group_table(mb, key.grouped);
        let fuse = fused.then(|| Fused::declare(mb, key.epilogue, cfg.result_type));
        let io = Interface {
            v_local_index,
            v_workgroup,
            v_subgroup,
            v_lane,
            v_pc,
            v_a,
            v_b,
            v_c,
            v_scale,
            v_groups,
        };
        (io, t_out, fuse)
    }
}

/// The shared arrays (each operand's tile, the epilogue's staging inside the larger one) and
/// their unit types.
#[derive(Clone, Copy)]
struct SharedArrays {
    sh_a: Word,
    sh_b: Word,
    unit_a_t: Word,
    unit_b_t: Word,
    /// The array the epilogue's staging tiles live in (its unit: [`SharedLayout::host_unit`]).
    sh_host: Word,
    host_unit_t: Word,
}

impl SharedArrays {
    fn declare(mb: &mut ModuleBuilder, lay: &SharedLayout) -> Self {
        let shared_array = |mb: &mut ModuleBuilder, unit_bytes: u32, len: u32| {
            let unit_t = mb.t_uvec(unit_bytes / 4);
            (mb.workgroup_array(unit_t, len), unit_t)
        };
        let (sh_a, unit_a_t) = shared_array(mb, lay.unit_a, lay.len_a);
        let (sh_b, unit_b_t) = shared_array(mb, lay.unit_b, lay.len_b);
        let (sh_host, host_unit_t) = if lay.staging_in_a {
            (sh_a, unit_a_t)
        } else {
            (sh_b, unit_b_t)
        };
        SharedArrays {
            sh_a,
            sh_b,
            unit_a_t,
            unit_b_t,
            sh_host,
            host_unit_t,
        }
    }
}

/// Pointer types into the buffers, the shared arrays and function variables, and the vector
/// of two results the store writes.
#[derive(Clone, Copy)]
struct Pointers {
    p_sb_uvec4: Word,
    p_sb_res: Word,
    p_sb_out: Word,
    p_wg_unit_a: Word,
    p_wg_unit_b: Word,
    p_wg_u32: Word,
    p_wg_host: Word,
    t_res2: Word,
    p_fn_acc: Word,
    p_fn_uvec4: Word,
}

impl Pointers {
    fn declare(mb: &mut ModuleBuilder, ty: &Types, t_out: Word, sh: &SharedArrays) -> Self {
        let p_sb_uvec4 = mb.ptr(StorageClass::StorageBuffer, ty.t_uvec4);
        let p_sb_res = mb.ptr(StorageClass::StorageBuffer, ty.t_res);
        let p_sb_out = mb.ptr(StorageClass::StorageBuffer, t_out);
        let p_wg_unit_a = mb.ptr(StorageClass::Workgroup, sh.unit_a_t);
        let p_wg_unit_b = mb.ptr(StorageClass::Workgroup, sh.unit_b_t);
        let p_wg_u32 = mb.ptr(StorageClass::Workgroup, ty.t_u32);
        let p_wg_host = mb.ptr(StorageClass::Workgroup, sh.host_unit_t);
        let t_res2 = mb.b.type_vector(ty.t_res, 2);
        let p_fn_acc = mb.ptr(StorageClass::Function, ty.t_mat_acc);
        let p_fn_uvec4 = mb.ptr(StorageClass::Function, ty.t_uvec4);
        Pointers {
            p_sb_uvec4,
            p_sb_res,
            p_sb_out,
            p_wg_unit_a,
            p_wg_unit_b,
            p_wg_u32,
            p_wg_host,
            t_res2,
            p_fn_acc,
            p_fn_uvec4,
        }
    }
}

/// The constants the stages share.
#[derive(Clone, Copy)]
struct Consts {
    c0: Word,
    zero_uvec4: Word,
    zero_res: Word,
    c_row_major: Word,
    c_col_major: Word,
    c_bk: Word,
    c_scope_wg: Word,
    c_scope_sg: Word,
    c_sem: Word,
}

impl Consts {
    fn declare(mb: &mut ModuleBuilder, ty: &Types, bk: u32) -> Self {
        Consts {
            c0: mb.c_u32(0),
            zero_uvec4: mb.b.constant_null(ty.t_uvec4),
            zero_res: mb.c_bits(ty.t_res, 0),
            c_row_major: mb.c_u32(ROW_MAJOR),
            c_col_major: mb.c_u32(COL_MAJOR),
            c_bk: mb.c_u32(bk),
            c_scope_wg: mb.c_u32(Scope::Workgroup as u32),
            c_scope_sg: mb.c_u32(Scope::Subgroup as u32),
            c_sem: mb.c_u32((MemorySemantics::ACQUIRE_RELEASE | MemorySemantics::WORKGROUP_MEMORY).bits()),
        }
    }
}

/// How the operands' tiles lie in shared memory: each stored in its global layout, rows of the
/// contiguous (inner) dimension skewed by the scheme's padding; a split operand's low parts
/// after all stages of its high parts; the epilogue's staging tiles inside the larger array.
#[derive(Clone, Copy)]
struct SharedLayout {
    /// Each operand's inner extent in elements.
    a_inner: u32,
    b_inner: u32,
    /// Bytes per unit of each array (the run a fragment start advances by).
    unit_a: u32,
    unit_b: u32,
    /// Units per row and per stage.
    pitch_a: u32,
    pitch_b: u32,
    stage_units_a: u32,
    stage_units_b: u32,
    /// Where a split operand's low parts start (units).
    lo_units_a: u32,
    lo_units_b: u32,
    /// Units of each array.
    len_a: u32,
    len_b: u32,
    /// Whether the staging tiles live in A's array, and that array's unit.
    staging_in_a: bool,
    host_unit: u32,
}

impl SharedLayout {
    fn of(key: &KernelKey) -> Self {
        let (cfg, s) = (key.config, key.scheme);
        let g = s.geometry(&cfg);
        let es = cfg.component_type.size_bytes();
        let rs = cfg.result_type.size_bytes();
        let split = key.loads == [Load::Split; 2];
        let (a_outer, a_inner) = match key.a_layout {
            Layout::RowMajor => (g.bm, g.bk),
            Layout::ColMajor => (g.bk, g.bm),
        };
        let (b_outer, b_inner) = match key.b_layout {
            Layout::RowMajor => (g.bk, g.bn),
            Layout::ColMajor => (g.bn, g.bk),
        };
        // Fragment starts advance by whole fragments along the inner dimension: that run fixes the unit.
        let a_run = match key.a_layout {
            Layout::RowMajor => cfg.k * es,
            Layout::ColMajor => cfg.m * es,
        };
        let b_run = match key.b_layout {
            Layout::RowMajor => cfg.n * es,
            Layout::ColMajor => cfg.k * es,
        };
        // (unit bytes, pitch in units, units per stage) of each operand's array.
        let shape = |outer: u32, inner: u32, run: u32| {
            let unit_bytes = shared_unit(run).expect("scheme checked");
            let pitch_bytes = inner * es + s.pad_bytes();
            (unit_bytes, pitch_bytes / unit_bytes, outer * pitch_bytes / unit_bytes)
        };
        let (unit_a, pitch_a, stage_units_a) = shape(a_outer, a_inner, a_run);
        let (unit_b, pitch_b, stage_units_b) = shape(b_outer, b_inner, b_run);
        // A split operand keeps its low parts after all stages of its high parts.
        let split_parts = if split { 2 } else { 1 };
        let (lo_units_a, lo_units_b) = (s.stages() * stage_units_a, s.stages() * stage_units_b);
        let mut len_a = split_parts * lo_units_a;
        let mut len_b = split_parts * lo_units_b;
        // The epilogue's staging tiles (one fragment per subgroup, used only after the main loop by
        // workgroups on the M/N edge) live in the larger operand array: they cost no shared memory,
        // which on NVIDIA decides how many workgroups share an SM.
        let stage_bytes = s.sg_m() * s.sg_n() * cfg.m * cfg.n * rs;
        let staging_in_a = len_a * unit_a >= len_b * unit_b;
        let (host_len, host_unit, other_bytes) = if staging_in_a {
            (&mut len_a, unit_a, len_b * unit_b)
        } else {
            (&mut len_b, unit_b, len_a * unit_a)
        };
        *host_len = (*host_len).max(stage_bytes / host_unit);
        if let Probe::SharedAtLeast(bytes) = key.probe {
            // Grow the (dynamically indexed, so never shrunk) host array to reach the total.
            *host_len = (*host_len).max(bytes.saturating_sub(other_bytes).div_ceil(host_unit));
        }
        Self {
            a_inner,
            b_inner,
            unit_a,
            unit_b,
            pitch_a,
            pitch_b,
            stage_units_a,
            stage_units_b,
            lo_units_a,
            lo_units_b,
            len_a,
            len_b,
            staging_in_a,
            host_unit,
        }
    }
}

/// Declares the module's types, interface, shared arrays and constants ([`Decl`]), and the fused
/// epilogue's declarations where the key has one.
fn declare(mb: &mut ModuleBuilder, key: &KernelKey) -> BuildResult<(Decl, Option<Fused>)> {
    let cfg = key.config;
    let s = key.scheme;
    let g = s.geometry(&cfg);
    let es = cfg.component_type.size_bytes();
    let vw = VECTOR_BYTES / es; // elements per vector
    let split = key.loads == [Load::Split; 2];
    mb.need(Capability::CooperativeMatrixKHR);
    mb.need(Capability::GroupNonUniform);
    mb.extension("SPV_KHR_cooperative_matrix");
    let ty = Types::declare(mb, &cfg);
    let (io, t_out, fuse) = Interface::declare(mb, key, &ty, split);
    let lay = SharedLayout::of(key);
    let sh = SharedArrays::declare(mb, &lay);
    let ptr = Pointers::declare(mb, &ty, t_out, &sh);
    let k = Consts::declare(mb, &ty, g.bk);
    let d = Decl {
        cfg,
        s,
        g,
        es,
        vw,
        split,
        ty,
        io,
        lay,
        sh,
        ptr,
        k,
    };
    Ok((d, fuse))
}

/// What the stages after the set-up refer to: the accumulators, each operand's copy slots and
/// registers, the push constants and the tile's coordinates, and the fragments' bases in shared
/// memory.
struct Setup {
    acc_vars: Vec<Word>,
    op_a: Operand2d,
    op_b: Operand2d,
    l_entry: Word,
    a_off: Word,
    b_off: Word,
    c_off: Word,
    pm: Word,
    pn: Word,
    pk: Word,
    lda: Word,
    ldb: Word,
    ldc: Word,
    m0: Word,
    n0: Word,
    sg: Word,
    lane: Word,
    scales: Option<[(Word, Word); 2]>,
    zero_acc: Word,
    c_vw: Word,
    a_sg_rows: Word,
    b_sg_cols: Word,
    a_base: Word,
    a_layout_id: Word,
    b_base: Word,
    b_layout_id: Word,
}

/// The function's first block: its variables (accumulators, prefetch registers), then the
/// invocation's ids, the push constants, the tile (an empty one returns), the epilogue's and the
/// split's values, the copy slots, zeroed accumulators and the fragments' bases.
fn setup(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl, fuse: Option<&mut Fused>) -> BuildResult<Setup> {
    let Decl {
        s,
        g,
        es,
        vw,
        ty,
        io,
        ptr,
        k,
        ..
    } = *d;
    // Function-scope variables must open the first block.
    let n_frag = (s.fr_m() * s.fr_n()) as usize;
    let acc_vars: Vec<Word> = (0..n_frag)
        .map(|_| mb.b.variable(ptr.p_fn_acc, None, StorageClass::Function, None))
        .collect();
    let a_per_thread = g.bm * g.bk * es / VECTOR_BYTES / g.threads;
    let b_per_thread = g.bn * g.bk * es / VECTOR_BYTES / g.threads;
    let [load_a, load_b] = key.loads;
    let mut regs = |per_thread: u32, load: Load| -> Vec<Vec<Word>> {
        (0..per_thread)
            .map(|_| {
                (0..load.storage_vectors())
                    .map(|_| mb.b.variable(ptr.p_fn_uvec4, None, StorageClass::Function, None))
                    .collect()
            })
            .collect()
    };
    let regs_a = regs(a_per_thread, load_a);
    let regs_b = regs(b_per_thread, load_b);

    let b = mb;
    macro_rules! u {
        ($v:expr) => {
            b.c_u32($v)
        };
    }
    let tid = b.b.load(ty.t_u32, None, io.v_local_index, None, [])?;
    let wg = b.b.load(ty.t_uvec3, None, io.v_workgroup, None, [])?;
    let sg = b.b.load(ty.t_u32, None, io.v_subgroup, None, [])?;
    let lane = b.b.load(ty.t_u32, None, io.v_lane, None, [])?;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(io.v_pc, which as u32);
    let pn = pc(b, Pc::N)?;
    let pk = pc(b, Pc::K)?;
    let lda = pc(b, Pc::LdaVec)?;
    let ldb = pc(b, Pc::LdbVec)?;
    let ldc = pc(b, Pc::Ldc)?;
    let pm = pc(b, Pc::M)?;
    let at = (g.bm, g.bn);
    let here = tile(b, (io.v_pc, wg), (pm, pn), at, s.raster_group(), io.v_groups)?;
    skip_empty(b, &here)?;
    let l_entry = b.current_label();
    let Tile {
        offsets: [a_off, b_off, c_off],
        pm,
        m0,
        n0,
        group,
    } = here;
    if let Some(f) = fuse {
        f.prepare(b, io.v_pc, group)?;
    }
    // The split's scales: (s_a, 1/s_a), (s_b, 1/s_b).
    let scales = match io.v_scale {
        Some(v) => Some(super::convert::operand_scales(b, v)?),
        None => None,
    };

    let c_sgn = u!(s.sg_n());
    let sg_m = b.b.u_div(ty.t_u32, None, sg, c_sgn)?;
    let sg_n = b.b.u_mod(ty.t_u32, None, sg, c_sgn)?;

    let per_thread = (a_per_thread, b_per_thread);
    let (op_a, op_b) = operands(b, d, (tid, per_thread), (regs_a, regs_b), (load_a, load_b), scales)?;

    // Zero accumulators: a one-constituent composite (splat), not OpConstantNull (Intel Mesa < 25.2).
    let zero_acc = b.b.composite_construct(ty.t_mat_acc, None, [k.zero_res])?;
    for &v in &acc_vars {
        b.b.store(v, zero_acc, None, [])?;
    }

    let c_vw = u!(vw);
    let Bases {
        a_sg_rows,
        b_sg_cols,
        a_base,
        a_layout_id,
        b_base,
        b_layout_id,
    } = fragment_bases(b, key, d, (sg_m, sg_n), c_sgn)?;
    Ok(Setup {
        acc_vars,
        op_a,
        op_b,
        l_entry,
        a_off,
        b_off,
        c_off,
        pm,
        pn,
        pk,
        lda,
        ldb,
        ldc,
        m0,
        n0,
        sg,
        lane,
        scales,
        zero_acc,
        c_vw,
        a_sg_rows,
        b_sg_cols,
        a_base,
        a_layout_id,
        b_base,
        b_layout_id,
    })
}

/// Each operand's copy slots (invocation `tid` copies vectors tid, tid + threads, ... of each
/// tile) with its prefetch registers and loads.
fn operands(
    b: &mut ModuleBuilder,
    d: &Decl,
    (tid, (a_per_thread, b_per_thread)): (Word, (u32, u32)),
    (regs_a, regs_b): (Vec<Vec<Word>>, Vec<Vec<Word>>),
    (load_a, load_b): (Load, Load),
    scales: Option<[(Word, Word); 2]>,
) -> BuildResult<(Operand2d, Operand2d)> {
    let Decl {
        g,
        es,
        ty: Types { t_u32, .. },
        lay:
            SharedLayout {
                a_inner,
                b_inner,
                unit_a,
                unit_b,
                pitch_a,
                pitch_b,
                lo_units_a,
                lo_units_b,
                ..
            },
        sh:
            SharedArrays {
                sh_a,
                sh_b,
                unit_a_t,
                unit_b_t,
                ..
            },
        ..
    } = *d;
    let slots = |b: &mut ModuleBuilder,
                 per_thread: u32,
                 inner: u32,
                 unit: u32,
                 pitch: u32|
     -> BuildResult<Vec<(Word, Word, Word)>> {
        let inner_vecs = inner * es / VECTOR_BYTES;
        let c_iv = b.c_u32(inner_vecs);
        let c_pitch = b.c_u32(pitch);
        let c_vec_units = b.c_u32(VECTOR_BYTES / unit);
        (0..per_thread)
            .map(|t| {
                let c_t = b.c_u32(t * g.threads);
                let v = b.b.i_add(t_u32, None, tid, c_t)?;
                let o = b.b.u_div(t_u32, None, v, c_iv)?;
                let iv = b.b.u_mod(t_u32, None, v, c_iv)?;
                let so = b.b.i_mul(t_u32, None, o, c_pitch)?;
                let si = b.b.i_mul(t_u32, None, iv, c_vec_units)?;
                let sidx = b.b.i_add(t_u32, None, so, si)?;
                Ok((o, iv, sidx))
            })
            .collect()
    };
    let op_a = Operand2d {
        shared: sh_a,
        unit_t: unit_a_t,
        unit_bytes: unit_a,
        slots: slots(b, a_per_thread, a_inner, unit_a, pitch_a)?,
        regs: regs_a,
        load: load_a,
        split: scales.map(|s| (s[0].0, lo_units_a)),
    };
    let op_b = Operand2d {
        shared: sh_b,
        unit_t: unit_b_t,
        unit_bytes: unit_b,
        slots: slots(b, b_per_thread, b_inner, unit_b, pitch_b)?,
        regs: regs_b,
        load: load_b,
        split: scales.map(|s| (s[1].0, lo_units_b)),
    };
    Ok((op_a, op_b))
}

/// Where a subgroup's fragments start: its rows of A and columns of B in the tile, and each
/// operand's base in shared units with the layout id its fragment loads take.
struct Bases {
    a_sg_rows: Word,
    b_sg_cols: Word,
    a_base: Word,
    a_layout_id: Word,
    b_base: Word,
    b_layout_id: Word,
}

/// The subgroup's [`Bases`] from its position (`sg_m`, `sg_n`) in the workgroup's grid of
/// subgroups; fragment offsets are then compile-time constants above them.
fn fragment_bases(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    d: &Decl,
    (sg_m, sg_n): (Word, Word),
    c_sgn: Word,
) -> BuildResult<Bases> {
    let Decl {
        s,
        g,
        es,
        ty: Types { t_u32, .. },
        lay:
            SharedLayout {
                unit_a,
                unit_b,
                pitch_a,
                pitch_b,
                ..
            },
        k: Consts {
            c_row_major,
            c_col_major,
            ..
        },
        ..
    } = *d;
    macro_rules! u {
        ($v:expr) => {
            b.c_u32($v)
        };
    }
    let c_bm = u!(g.bm);
    let c_bn = u!(g.bn);
    let a_sg_rows = b.b.i_mul(t_u32, None, sg_m, c_bm)?;
    let c_sgm = u!(s.sg_m());
    let a_sg_rows = b.b.u_div(t_u32, None, a_sg_rows, c_sgm)?; // sg_m * fr_m * cm
    let b_sg_cols = b.b.i_mul(t_u32, None, sg_n, c_bn)?;
    let b_sg_cols = b.b.u_div(t_u32, None, b_sg_cols, c_sgn)?; // sg_n * fr_n * cn
    let (a_base, a_layout_id) = match key.a_layout {
        Layout::RowMajor => (b.mul_u(a_sg_rows, pitch_a)?, c_row_major),
        Layout::ColMajor => (b.mul_u(a_sg_rows, es)?, c_col_major),
    };
    let a_base = if key.a_layout == Layout::ColMajor {
        b.div_u(a_base, unit_a)?
    } else {
        a_base
    };
    let (b_base, b_layout_id) = match key.b_layout {
        Layout::RowMajor => (b.mul_u(b_sg_cols, es)?, c_row_major),
        Layout::ColMajor => (b.mul_u(b_sg_cols, pitch_b)?, c_col_major),
    };
    let b_base = if key.b_layout == Layout::RowMajor {
        b.div_u(b_base, unit_b)?
    } else {
        b_base
    };

    Ok(Bases {
        a_sg_rows,
        b_sg_cols,
        a_base,
        a_layout_id,
        b_base,
        b_layout_id,
    })
}

/// Non-private pointers: the shared tiles are written and read across invocations.
const NP: Option<MemoryAccess> = Some(MemoryAccess::NON_PRIVATE_POINTER);

/// Global -> register prefetch of one K step of `op`, from `buf` at `off` with leading dimension
/// `ld` (in 16-byte vectors of the stored type; a shared vector of f32 storage is two of them),
/// its rows and columns bounded by `outer` and `inner` (first, limit).
#[allow(clippy::too_many_arguments)]
fn prefetch(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    d: &Decl,
    c_vw: Word,
    op: &Operand2d,
    (buf, off, ld): (Word, Word, Word),
    outer: (Word, Word),
    inner: (Word, Word),
) -> BuildResult<()> {
    let Decl {
        vw,
        ty: Types {
            t_u32, t_bool, t_uvec4, ..
        },
        ptr: Pointers { p_sb_uvec4, .. },
        k: Consts { c0, zero_uvec4, .. },
        ..
    } = *d;
    let (outer_base, outer_limit) = outer;
    let (inner_base, inner_limit) = inner;
    let parts = op.load.storage_vectors();
    let inner_base_vec = b.div_u(inner_base, vw / parts)?;
    let row_base = b.b.i_add(t_u32, None, off, inner_base_vec)?;
    for (t, &(o, iv, _)) in op.slots.iter().enumerate() {
        let go = b.b.i_add(t_u32, None, outer_base, o)?;
        let iv_el = b.b.i_mul(t_u32, None, iv, c_vw)?;
        let gi = b.b.i_add(t_u32, None, inner_base, iv_el)?;
        let ok_o = b.b.u_less_than(t_bool, None, go, outer_limit)?;
        let row = b.b.i_mul(t_u32, None, go, ld)?;
        let idx = b.b.i_add(t_u32, None, row_base, row)?;
        let iv_st = if parts == 1 { iv } else { b.mul_u(iv, parts)? };
        let idx = b.b.i_add(t_u32, None, idx, iv_st)?;
        for h in 0..parts {
            // The second storage vector of a slot: its first element and index, one on.
            let (gi_h, idx_h) = if h == 0 {
                (gi, idx)
            } else {
                (b.add_u(gi, h * vw / parts)?, b.add_u(idx, h)?)
            };
            let ok_i = b.b.u_less_than(t_bool, None, gi_h, inner_limit)?;
            let ok = b.b.logical_and(t_bool, None, ok_o, ok_i)?;
            let val = if key.probe == Probe::Unchecked {
                let p = b.b.access_chain(p_sb_uvec4, None, buf, [c0, idx_h])?;
                b.b.load(t_uvec4, None, p, None, [])?
            } else {
                b.load_vector_or_zero((buf, off), idx_h, ok, zero_uvec4)?
            };
            b.b.store(op.regs[t][h as usize], val, None, [])?;
        }
    }
    Ok(())
}

/// An operand's (outer, inner) bounds for a K step from `kb`: A's rows are M, B's columns N.
fn bounds(
    layout: Layout,
    (mn0, mn_limit): (Word, Word),
    (kb, pk): (Word, Word),
    is_a: bool,
) -> ((Word, Word), (Word, Word)) {
    match (layout, is_a) {
        (Layout::RowMajor, true) | (Layout::ColMajor, false) => ((mn0, mn_limit), (kb, pk)),
        (Layout::ColMajor, true) | (Layout::RowMajor, false) => ((kb, pk), (mn0, mn_limit)),
    }
}

/// Both operands' prefetch of the K step from `kb`.
fn prefetch_all(b: &mut ModuleBuilder, key: &KernelKey, d: &Decl, st: &Setup, kb: Word) -> BuildResult<()> {
    let (o, i) = bounds(key.a_layout, (st.m0, st.pm), (kb, st.pk), true);
    prefetch(b, key, d, st.c_vw, &st.op_a, (d.io.v_a, st.a_off, st.lda), o, i)?;
    let (o, i) = bounds(key.b_layout, (st.n0, st.pn), (kb, st.pk), false);
    prefetch(b, key, d, st.c_vw, &st.op_b, (d.io.v_b, st.b_off, st.ldb), o, i)
}

/// Stores `op`'s prefetched vectors into its shared tile at `stage_off` units, converted here
/// rather than as loaded, so the loads stay in flight over the multiplies.
fn store_shared(b: &mut ModuleBuilder, d: &Decl, op: &Operand2d, p_unit: Word, stage_off: u32) -> BuildResult<()> {
    let Decl {
        cfg,
        ty: Types { t_uvec4, .. },
        ..
    } = *d;
    let parts = VECTOR_BYTES / op.unit_bytes;
    for (t, &(_, _, sidx)) in op.slots.iter().enumerate() {
        // Converted here rather than as loaded, so the loads stay in flight over the multiplies.
        // (vector, shared offset): one, or a split's high and low parts.
        let vals: Vec<(Word, u32)> = match (op.regs[t].as_slice(), op.split) {
            ([one], _) => vec![(b.b.load(t_uvec4, None, *one, None, [])?, 0)],
            ([lo, hi], split) => {
                let lo = b.b.load(t_uvec4, None, *lo, None, [])?;
                let hi = b.b.load(t_uvec4, None, *hi, None, [])?;
                match split {
                    None => vec![(super::convert::narrow_f32x8(b, lo, hi, cfg.component_type)?, 0)],
                    Some((scale, lo_units)) => {
                        let (h, l) = super::convert::split_f32x8(b, lo, hi, scale)?;
                        vec![(h, 0), (l, lo_units)]
                    }
                }
            }
            _ => unreachable!("one or two storage vectors per slot"),
        };
        for (val, part_off) in vals {
            for h in 0..parts {
                let part = match parts {
                    1 => val,
                    2 => b.b.vector_shuffle(op.unit_t, None, val, val, [2 * h, 2 * h + 1])?,
                    _ => b.b.composite_extract(op.unit_t, None, val, [h])?,
                };
                let at = b.add_u(sidx, h + stage_off + part_off)?;
                let p = b.b.access_chain(p_unit, None, op.shared, [at])?;
                b.b.store(p, part, NP, [])?;
            }
        }
    }
    Ok(())
}

/// The main loop's constants (emitted before it, in this order).
struct LoopConsts {
    c_pitch_a: Word,
    c_pitch_b: Word,
    c_bk_bit: Word,
    operands: Option<rspirv::spirv::CooperativeMatrixOperands>,
}

/// The workgroup barrier between K steps (none under [`Probe::NoBarrier`]).
fn barrier(b: &mut ModuleBuilder, key: &KernelKey, d: &Decl) -> BuildResult<()> {
    if key.probe != Probe::NoBarrier {
        b.b.control_barrier(d.k.c_scope_wg, d.k.c_scope_wg, d.k.c_sem)?;
    }
    Ok(())
}

/// One K step from shared buffer `stage`. With two stages, the step writes buffer `stage` while
/// slower subgroups may still read the other one; a subgroup can only come back to this buffer
/// after all passed the barrier below, so one barrier per step suffices. The buffer is a
/// compile-time constant (the loop is unrolled by two) so fragment addresses stay immediate.
fn step(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    (d, st, lc): (&Decl, &Setup, &LoopConsts),
    kb: Word,
    stage: u32,
) -> BuildResult<()> {
    let Decl {
        s,
        ty: Types { t_u32, .. },
        lay: SharedLayout {
            stage_units_a,
            stage_units_b,
            ..
        },
        ptr: Pointers {
            p_wg_unit_a,
            p_wg_unit_b,
            ..
        },
        k: Consts { c_bk, .. },
        ..
    } = *d;
    let probe = key.probe;
    if s.stages() == 1 {
        barrier(b, key, d)?;
    }
    if probe != Probe::MmaOnly {
        store_shared(b, d, &st.op_a, p_wg_unit_a, stage * stage_units_a)?;
        store_shared(b, d, &st.op_b, p_wg_unit_b, stage * stage_units_b)?;
    }
    barrier(b, key, d)?;
    let kb_next = b.b.i_add(t_u32, None, kb, c_bk)?;
    match probe {
        Probe::MmaOnly => {}
        // Alternate between the first two steps' addresses: L1 hits, no L2 traffic.
        Probe::NoGlobal => {
            let k_alt = b.b.bitwise_and(t_u32, None, kb_next, lc.c_bk_bit)?;
            prefetch_all(b, key, d, st, k_alt)?;
        }
        _ => prefetch_all(b, key, d, st, kb_next)?,
    }
    if probe == Probe::NoMma {
        return Ok(());
    }
    multiply(b, key, (d, st, lc), stage)
}

/// The step's multiplies over the tile in shared buffer `stage`, one K slice of the config at a
/// time, into the accumulators.
fn multiply(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    (d, st, lc): (&Decl, &Setup, &LoopConsts),
    stage: u32,
) -> BuildResult<()> {
    let Decl {
        cfg,
        s,
        g,
        split,
        ty: Types { t_mat_acc, .. },
        lay: SharedLayout {
            lo_units_a, lo_units_b, ..
        },
        ..
    } = *d;
    let n_frag = (s.fr_m() * s.fr_n()) as usize;
    let mut acc: Vec<Word> = Vec::with_capacity(n_frag);
    for &v in &st.acc_vars {
        acc.push(b.b.load(t_mat_acc, None, v, None, [])?);
    }
    // The split sums each K step's products from zero and adds them to the accumulators with
    // f32 adds: matrix units may round their f32 accumulation less carefully (on the H100,
    // f16 products summed over K=4096 in the accumulator came out 4x further from f64 than
    // cuBLAS's SGEMM), and the split must match SGEMM.
    let mut step_sums: Vec<Word> = if split {
        vec![st.zero_acc; acc.len()]
    } else {
        Vec::new()
    };
    // Fragments of each part: the high parts, then (split) the low parts.
    let part_offs: &[(u32, u32)] = if split {
        &[(0, 0), (lo_units_a, lo_units_b)]
    } else {
        &[(0, 0)]
    };
    for kk in 0..g.bk / cfg.k {
        let sums = if split { &mut step_sums } else { &mut acc };
        slice(b, key, (d, st, lc), (kk, stage), part_offs, sums)?;
    }
    for (slot, sum) in step_sums.into_iter().enumerate() {
        acc[slot] = b.b.f_add(t_mat_acc, None, acc[slot], sum)?;
    }
    for (&v, &val) in st.acc_vars.iter().zip(&acc) {
        b.b.store(v, val, None, [])?;
    }
    Ok(())
}

/// K slice `kk` of the step: each A fragment of the subgroup loaded once (each part: the high,
/// then a split's low), then each B fragment loaded and multiplied into the `fr_m` sums of its
/// column.
fn slice(
    b: &mut ModuleBuilder,
    key: &KernelKey,
    (d, st, lc): (&Decl, &Setup, &LoopConsts),
    (kk, stage): (u32, u32),
    part_offs: &[(u32, u32)],
    sums: &mut [Word],
) -> BuildResult<()> {
    let Decl {
        cfg,
        s,
        es,
        split,
        ty: Types {
            t_mat_a,
            t_mat_b,
            t_mat_acc,
            ..
        },
        lay:
            SharedLayout {
                unit_a,
                unit_b,
                pitch_a,
                pitch_b,
                stage_units_a,
                stage_units_b,
                ..
            },
        sh: SharedArrays { sh_a, sh_b, .. },
        ptr: Pointers {
            p_wg_unit_a,
            p_wg_unit_b,
            ..
        },
        ..
    } = *d;
    let a_frag_off = |i: u32| match key.a_layout {
        Layout::RowMajor => i * cfg.m * pitch_a + kk * cfg.k * es / unit_a,
        Layout::ColMajor => kk * cfg.k * pitch_a + i * cfg.m * es / unit_a,
    };
    let b_frag_off = |j: u32| match key.b_layout {
        Layout::RowMajor => kk * cfg.k * pitch_b + j * cfg.n * es / unit_b,
        Layout::ColMajor => j * cfg.n * pitch_b + kk * cfg.k * es / unit_b,
    };
    let mut a_frags: Vec<Vec<Word>> = vec![Vec::new(); part_offs.len()];
    for (part, &(off_a, _)) in part_offs.iter().enumerate() {
        for i in 0..s.fr_m() {
            let at = b.add_u(st.a_base, a_frag_off(i) + stage * stage_units_a + off_a)?;
            let p = b.b.access_chain(p_wg_unit_a, None, sh_a, [at])?;
            a_frags[part].push(b.b.cooperative_matrix_load_khr(
                t_mat_a,
                None,
                p,
                st.a_layout_id,
                Some(lc.c_pitch_a),
                NP,
                [],
            )?);
        }
    }
    for j in 0..s.fr_n() {
        let mut b_frags = Vec::new();
        for &(_, off_b) in part_offs {
            let at = b.add_u(st.b_base, b_frag_off(j) + stage * stage_units_b + off_b)?;
            let p = b.b.access_chain(p_wg_unit_b, None, sh_b, [at])?;
            b_frags.push(b.b.cooperative_matrix_load_khr(
                t_mat_b,
                None,
                p,
                st.b_layout_id,
                Some(lc.c_pitch_b),
                NP,
                [],
            )?);
        }
        // (A part, B part) products: hi*hi alone, or the small lo*hi and hi*lo first.
        let terms: &[(usize, usize)] = if split { &[(1, 0), (0, 1), (0, 0)] } else { &[(0, 0)] };
        for i in 0..s.fr_m() {
            let sum = &mut sums[(i * s.fr_n() + j) as usize];
            for &(pa, pb) in terms {
                *sum = b.mul_add(t_mat_acc, (a_frags[pa][i as usize], b_frags[pb], *sum), lc.operands)?;
            }
        }
    }
    Ok(())
}

/// The loop over K: the first step's prefetch, then the steps (two per iteration with two
/// shared buffers, the second where K has one more).
fn main_loop(b: &mut ModuleBuilder, key: &KernelKey, d: &Decl, st: &Setup) -> BuildResult<()> {
    let Decl {
        cfg,
        s,
        g,
        ty: Types { t_u32, t_bool, .. },
        lay: SharedLayout { pitch_a, pitch_b, .. },
        k: Consts { c0, c_bk, .. },
        ..
    } = *d;
    let Setup { l_entry, pk, .. } = *st;
    let lc = LoopConsts {
        c_pitch_a: b.c_u32(pitch_a),
        c_pitch_b: b.c_u32(pitch_b),
        operands: mul_add_operands(&cfg),
        c_bk_bit: b.c_u32(g.bk),
    };
    let step = |b: &mut ModuleBuilder, kb: Word, stage: u32| step(b, key, (d, st, &lc), kb, stage);
    prefetch_all(b, key, d, st, c0)?;
    b.counted_loop(l_entry, (c0, pk, s.stages() * g.bk), |b, kb| {
        step(b, kb, 0)?;
        if s.stages() == 2 {
            // The second buffer's step, if K has one more (workgroup-uniform, so its barrier is too).
            let kb1 = b.b.i_add(t_u32, None, kb, c_bk)?;
            let more1 = b.b.u_less_than(t_bool, None, kb1, pk)?;
            let (l_second, l_joined) = (b.b.id(), b.b.id());
            b.b.selection_merge(l_joined, SelectionControl::NONE)?;
            b.b.branch_conditional(more1, l_second, l_joined, [])?;
            b.b.begin_block(Some(l_second))?;
            step(b, kb1, 1)?;
            b.b.branch(l_joined)?;
            b.b.begin_block(Some(l_joined))?;
        }
        Ok(())
    })?;
    Ok(())
}
