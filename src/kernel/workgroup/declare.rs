//! The kernel's declarations: types, cooperative-matrix and tensor types, interface and pointer types, made before its function.

use super::*;

/// What every stage of the kernel refers to, declared before its function: the key's sizes, the
/// types, the accumulators' and the tensors' types and constants, the interface, the pointer
/// types and zeros, and a fused epilogue's per-element function.
#[derive(Clone, Copy)]
pub(super) struct Decl {
    pub(super) cfg: GPUSubgroupMatrixConfig,
    pub(super) s: TileScheme,
    pub(super) g: TileGeometry,
    pub(super) vw: u32,
    pub(super) planes: bool,
    pub(super) fused: bool,
    /// Whether the per-element function takes the tile's group (it reads columns).
    pub(super) group_cols: bool,
    pub(super) ty: Types,
    pub(super) mt: Tensors,
    pub(super) io: Interface,
    pub(super) refs: Refs,
    pub(super) f_element: Option<Word>,
}

/// The scalar types, and the type C is stored in (the accumulator's, or a fused epilogue's
/// output) with its bytes.
#[derive(Clone, Copy)]
pub(super) struct Types {
    pub(super) t_void: Word,
    pub(super) t_bool: Word,
    pub(super) t_u32: Word,
    pub(super) t_uvec3: Word,
    pub(super) t_comp: Word,
    pub(super) t_res: Word,
    pub(super) t_c: Word,
    pub(super) c_bytes: u32,
}

impl Types {
    pub(super) fn declare(mb: &mut ModuleBuilder, key: &KernelKey) -> Self {
        let cfg = key.config;
        let t_void = mb.t_void();
        let t_bool = mb.t_bool();
        let t_u32 = mb.t_u32();
        let t_uvec3 = mb.t_uvec(3);
        let t_comp = mb.t_scalar(cfg.component_type);
        let t_res = mb.t_scalar(cfg.result_type);
        let fused = key.epilogue.is_fused();
        if fused {
            mb.need(Capability::CooperativeMatrixPerElementOperationsNV);
        }
        let (t_c, c_bytes) = if fused {
            store_type(mb, key.epilogue.output_type(cfg.result_type))
        } else {
            (t_res, cfg.result_type.size_bytes())
        };
        // A and B are read, and C written, as arrays of their own element types.
        for bytes in [cfg.component_type.size_bytes(), c_bytes] {
            match bytes {
                1 => mb.need(Capability::StorageBuffer8BitAccess),
                2 => mb.need(Capability::StorageBuffer16BitAccess),
                _ => {}
            }
        }
        Types {
            t_void,
            t_bool,
            t_u32,
            t_uvec3,
            t_comp,
            t_res,
            t_c,
            c_bytes,
        }
    }
}

/// The cooperative matrices' types and sizes, and the tensor layouts and view they are loaded
/// and stored through.
#[derive(Clone, Copy)]
pub(super) struct Tensors {
    /// Accumulators along the tile's N side, and each one's shape.
    pub(super) parts: u32,
    pub(super) acc_rows: u32,
    pub(super) acc_cols: u32,
    pub(super) t_mat_a: Word,
    pub(super) t_mat_b: Word,
    pub(super) t_mat_acc: Word,
    pub(super) c_rows: Word,
    pub(super) c_cols: Word,
    pub(super) c_bk: Word,
    pub(super) t_layout_clamped: Word,
    pub(super) t_layout_unclamped: Word,
    pub(super) c0: Word,
    pub(super) c1: Word,
    pub(super) t_view_transpose: Word,
}

impl Tensors {
    pub(super) fn declare(mb: &mut ModuleBuilder, key: &KernelKey, ty: &Types) -> Self {
        let (cfg, s) = (key.config, key.scheme);
        let g = s.geometry(&cfg);
        // The tile's N side is held as `parts` accumulators (one by default), each `acc_rows x
        // acc_cols`: BM x BN / parts, or BN x BM when the tile is computed transposed.
        let parts = s.n_parts();
        let (acc_rows, acc_cols) = s.accumulator_shape(&cfg);
        let (t_mat_a, t_mat_b, t_mat_acc) = mb.matrix_types(&cfg, Scope::Workgroup, (acc_rows, acc_cols, g.bk));
        let (c_rows, c_cols, c_bk) = (mb.c_u32(acc_rows), mb.c_u32(acc_cols), mb.c_u32(g.bk));
        let c_two = mb.c_u32(2);
        let c_clamped = mb.c_u32(CLAMP_CONSTANT);
        let c_unclamped = mb.c_u32(CLAMP_UNDEFINED);
        let t_layout_clamped = mb.b.type_tensor_layout_nv(c_two, c_clamped);
        let t_layout_unclamped = mb.b.type_tensor_layout_nv(c_two, c_unclamped);
        let c_false = mb.b.constant_false(ty.t_bool);
        let (c0, c1) = (mb.c_u32(0), mb.c_u32(1));
        // Dimension 1 of the view walks the matrix's rows: a transpose.
        let t_view_transpose = mb.b.type_tensor_view_nv(c_two, c_false, [c1, c0]);
        Tensors {
            parts,
            acc_rows,
            acc_cols,
            t_mat_a,
            t_mat_b,
            t_mat_acc,
            c_rows,
            c_cols,
            c_bk,
            t_layout_clamped,
            t_layout_unclamped,
            c0,
            c1,
            t_view_transpose,
        }
    }
}

/// The kernel's interface: built-ins, push constants and buffers.
#[derive(Clone, Copy)]
pub(super) struct Interface {
    pub(super) v_workgroup: Word,
    pub(super) v_pc: Word,
    pub(super) v_a: Word,
    pub(super) v_b: Word,
    pub(super) v_c: Word,
    pub(super) v_scale: Option<Word>,
    pub(super) v_groups: Option<Word>,
}

impl Interface {
    pub(super) fn declare(mb: &mut ModuleBuilder, key: &KernelKey, ty: &Types, planes: bool) -> Self {
        let es = key.config.component_type.size_bytes();
        let v_workgroup = mb.builtin_input(ty.t_uvec3, BuiltIn::WorkgroupId);
        let v_pc = mb.push_constant_block(PC_MEMBERS);
        let v_a = mb.storage_buffer(ty.t_comp, es, 0, true);
        let v_b = mb.storage_buffer(ty.t_comp, es, 1, true);
        let v_c = mb.storage_buffer(ty.t_c, ty.c_bytes, 2, false);
        let v_scale = planes.then(|| mb.storage_buffer(ty.t_u32, 4, 3, true));
        let v_groups = group_table(mb, key.grouped);
        Interface {
            v_workgroup,
            v_pc,
            v_a,
            v_b,
            v_c,
            v_scale,
            v_groups,
        }
    }
}

/// Pointer types into the buffers and to the accumulators, and zeros of the element types.
#[derive(Clone, Copy)]
pub(super) struct Refs {
    pub(super) p_sb_comp: Word,
    pub(super) p_sb_res: Word,
    pub(super) p_fn_acc: Word,
    pub(super) zero_res: Word,
    pub(super) zero_comp: Word,
}

impl Refs {
    pub(super) fn declare(mb: &mut ModuleBuilder, ty: &Types, mt: &Tensors) -> Self {
        Refs {
            p_sb_comp: mb.ptr(StorageClass::StorageBuffer, ty.t_comp),
            p_sb_res: mb.ptr(StorageClass::StorageBuffer, ty.t_c),
            p_fn_acc: mb.ptr(StorageClass::Function, mt.t_mat_acc),
            zero_res: mb.c_bits(ty.t_res, 0),
            zero_comp: mb.c_bits(ty.t_comp, 0),
        }
    }
}

/// Declares the module's types, interface and constants, and a fused epilogue's per-element
/// function ([`Decl`]).
pub(super) fn declare(mb: &mut ModuleBuilder, key: &KernelKey) -> BuildResult<Decl> {
    let cfg = key.config;
    let s = key.scheme;
    let g = s.geometry(&cfg);
    let vw = VECTOR_BYTES / cfg.component_type.size_bytes();
    mb.need(Capability::CooperativeMatrixKHR);
    mb.need(Capability::CooperativeMatrixTensorAddressingNV);
    mb.need(Capability::TensorAddressingNV);
    mb.extension("SPV_KHR_cooperative_matrix");
    mb.extension("SPV_NV_cooperative_matrix2");
    mb.extension("SPV_NV_tensor_addressing");
    let ty = Types::declare(mb, key);
    let mt = Tensors::declare(mb, key, &ty);
    let planes = key.loads == [Load::Planes; 2];
    let io = Interface::declare(mb, key, &ty, planes);
    let refs = Refs::declare(mb, &ty, &mt);
    let fused = key.epilogue.is_fused();
    // A grouped kernel passes its group to the per-element function where it reads columns.
    let group_cols = key.grouped && key.epilogue.reads_columns();
    let f_element = if fused {
        let mut ep = Fused::declare(mb, key.epilogue, cfg.result_type);
        Some(element_function(
            mb,
            &mut ep,
            io.v_pc,
            (io.v_c, ty.t_c),
            (s.c_transposed(), group_cols),
        )?)
    } else {
        None
    };
    Ok(Decl {
        cfg,
        s,
        g,
        vw,
        planes,
        fused,
        group_cols,
        ty,
        mt,
        io,
        refs,
        f_element,
    })
}
