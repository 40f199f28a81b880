//! The kernel's declarations: types, interface, shared arrays and their layout, pointer types and constants, made before its function.

use super::*;

/// What every stage of the kernel refers to, declared before its function: the key's sizes, the
/// types, the interface (built-ins, push constants, buffers), the shared arrays, their layout and
/// pointer types, and the constants.
#[derive(Clone, Copy)]
pub(super) struct Decl {
    pub(super) cfg: GPUSubgroupMatrixConfig,
    pub(super) s: TileScheme,
    pub(super) g: TileGeometry,
    /// Bytes per element of the inputs; elements per 16-byte vector.
    pub(super) es: u32,
    pub(super) vw: u32,
    pub(super) split: bool,
    pub(super) ty: Types,
    pub(super) io: Interface,
    pub(super) lay: SharedLayout,
    pub(super) sh: SharedArrays,
    pub(super) ptr: Pointers,
    pub(super) k: Consts,
}

/// The types every stage uses.
#[derive(Clone, Copy)]
pub(super) struct Types {
    pub(super) t_void: Word,
    pub(super) t_bool: Word,
    pub(super) t_u32: Word,
    pub(super) t_uvec3: Word,
    pub(super) t_uvec4: Word,
    pub(super) t_mat_a: Word,
    pub(super) t_mat_b: Word,
    pub(super) t_mat_acc: Word,
    pub(super) t_res: Word,
}

impl Types {
    pub(super) fn declare(mb: &mut ModuleBuilder, cfg: &GPUSubgroupMatrixConfig) -> Self {
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
pub(super) struct Interface {
    pub(super) v_local_index: Word,
    pub(super) v_workgroup: Word,
    pub(super) v_subgroup: Word,
    pub(super) v_lane: Word,
    pub(super) v_pc: Word,
    pub(super) v_a: Word,
    pub(super) v_b: Word,
    pub(super) v_c: Word,
    pub(super) v_scale: Option<Word>,
    pub(super) v_groups: Option<Word>,
}

impl Interface {
    /// The interface, the type C is stored in, and a fused epilogue's declarations.
    pub(super) fn declare(
        mb: &mut ModuleBuilder,
        key: &KernelKey,
        ty: &Types,
        split: bool,
    ) -> (Self, Word, Option<Fused>) {
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
pub(super) struct SharedArrays {
    pub(super) sh_a: Word,
    pub(super) sh_b: Word,
    pub(super) unit_a_t: Word,
    pub(super) unit_b_t: Word,
    /// The array the epilogue's staging tiles live in (its unit: [`SharedLayout::host_unit`]).
    pub(super) sh_host: Word,
    pub(super) host_unit_t: Word,
}

impl SharedArrays {
    pub(super) fn declare(mb: &mut ModuleBuilder, lay: &SharedLayout) -> Self {
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
pub(super) struct Pointers {
    pub(super) p_sb_uvec4: Word,
    pub(super) p_sb_res: Word,
    pub(super) p_sb_out: Word,
    pub(super) p_wg_unit_a: Word,
    pub(super) p_wg_unit_b: Word,
    pub(super) p_wg_u32: Word,
    pub(super) p_wg_host: Word,
    pub(super) t_res2: Word,
    pub(super) p_fn_acc: Word,
    pub(super) p_fn_uvec4: Word,
}

impl Pointers {
    pub(super) fn declare(mb: &mut ModuleBuilder, ty: &Types, t_out: Word, sh: &SharedArrays) -> Self {
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
pub(super) struct Consts {
    pub(super) c0: Word,
    pub(super) zero_uvec4: Word,
    pub(super) zero_res: Word,
    pub(super) c_row_major: Word,
    pub(super) c_col_major: Word,
    pub(super) c_bk: Word,
    pub(super) c_scope_wg: Word,
    pub(super) c_scope_sg: Word,
    pub(super) c_sem: Word,
}

impl Consts {
    pub(super) fn declare(mb: &mut ModuleBuilder, ty: &Types, bk: u32) -> Self {
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
pub(super) struct SharedLayout {
    /// Each operand's inner extent in elements.
    pub(super) a_inner: u32,
    pub(super) b_inner: u32,
    /// Bytes per unit of each array (the run a fragment start advances by).
    pub(super) unit_a: u32,
    pub(super) unit_b: u32,
    /// Units per row and per stage.
    pub(super) pitch_a: u32,
    pub(super) pitch_b: u32,
    pub(super) stage_units_a: u32,
    pub(super) stage_units_b: u32,
    /// Where a split operand's low parts start (units).
    pub(super) lo_units_a: u32,
    pub(super) lo_units_b: u32,
    /// Units of each array.
    pub(super) len_a: u32,
    pub(super) len_b: u32,
    /// Whether the staging tiles live in A's array, and that array's unit.
    pub(super) staging_in_a: bool,
    pub(super) host_unit: u32,
}

impl SharedLayout {
    pub(super) fn of(key: &KernelKey) -> Self {
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
pub(super) fn declare(mb: &mut ModuleBuilder, key: &KernelKey) -> BuildResult<(Decl, Option<Fused>)> {
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
