//! The workgroup-scope GEMM kernel (`VK_NV_cooperative_matrix2` with `SPV_NV_tensor_addressing`).
//!
//! One `BM x BN` accumulator covers the workgroup's tile. Each K step loads a `BM x BK` slice of A
//! and a `BK x BN` slice of B through tensor layouts and multiplies them: the driver chooses how
//! to stage the slices through shared memory and how to split the work among subgroups, which a
//! subgroup-scope kernel has to spell out (see the `gemm` submodule). Column-major operands are
//! read through a transposing tensor view. A scheme with `c_transposed` computes the tile of
//! C^T instead, `B^T A^T` (each operand read through its flipped layout), and stores it
//! through that view, which NVIDIA's driver does faster than a direct store.
//!
//! Bounds: a workgroup whose tile lies inside C runs a loop with unclamped layouts, `stages` K
//! steps per iteration, over the largest multiple of `stages * BK` in K, then K's whole steps
//! left one at a time unclamped, then a partial last step with clamped layouts. A workgroup on
//! C's edge runs the clamped loop throughout. The clamped layouts' tensor dimensions are the
//! problem's, so reads outside A, B or C return zero and stores outside C are dropped by the
//! hardware's addressing rather than by kernel code.
//! Same bindings and push constants as the subgroup-scope kernel. A kernel with sizes built in
//! (`KernelKey::fixed`) takes N, K and the leading dimensions as constants instead, and NVIDIA's
//! driver compiles it a faster loop.
//!
//! A fused epilogue runs on the accumulator through `OpCooperativeMatrixPerElementOpNV`: the
//! driver calls a function of (row, column, value) for every element, wherever it holds it, so
//! no staging tile is needed; an f16 C is then one conversion of the whole matrix.

use super::builder::{mul_add_operands, BuildResult, ModuleBuilder};
use super::epilogue::{store_type, Fused};
use super::push::{Pc, PC_MEMBERS};
use super::raster::{group_table, skip_empty, tile, Tile};
use super::{KernelKey, Load};
use crate::config::GPUSubgroupMatrixConfig;
use crate::tiling::{Layout, TileGeometry, TileScheme, VECTOR_BYTES};
use rspirv::dr::{InsertPoint, Instruction, Operand};
use rspirv::spirv::{
    BuiltIn, Capability, CooperativeMatrixOperands, FunctionControl, LoopControl, MemoryAccess, Op, Scope,
    SelectionControl, StorageClass, TensorAddressingOperands, Word,
};

/// `TensorClampMode` values (SPV_NV_tensor_addressing).
const CLAMP_UNDEFINED: u32 = 0;
const CLAMP_CONSTANT: u32 = 1;

/// How one operand lies in memory: the tensor's dimensions in storage order, and whether the
/// matrix is its transpose.
#[derive(Clone, Copy)]
struct Tensor {
    dims: (Word, Word),
    stride: Word,
    transposed: bool,
}

impl Tensor {
    /// A `rows x cols` matrix stored `layout` with leading dimension `ld`.
    fn new(layout: Layout, (rows, cols): (Word, Word), ld: Word) -> Self {
        match layout {
            Layout::RowMajor => Self {
                dims: (rows, cols),
                stride: ld,
                transposed: false,
            },
            Layout::ColMajor => Self {
                dims: (cols, rows),
                stride: ld,
                transposed: true,
            },
        }
    }
}

pub(super) fn emit(key: &KernelKey) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    mb.drop_products = key.probe == super::Probe::NoProducts;
    let d = declare(&mut mb, key)?;
    let t_fn = mb.b.type_function(d.ty.t_void, []);
    let f_main = mb.b.begin_function(d.ty.t_void, None, FunctionControl::NONE, t_fn)?;
    mb.b.begin_block(None)?;
    let st = setup(&mut mb, key, &d)?;
    loops(&mut mb, &d, &st)?;
    epilogue(&mut mb, key, &d, &st)?;
    mb.end_compute(f_main, d.g.threads)?;
    Ok(mb.finish())
}

/// What every stage of the kernel refers to, declared before its function: the key's sizes, the
/// types, the accumulators' and the tensors' types and constants, the interface, the pointer
/// types and zeros, and a fused epilogue's per-element function.
#[derive(Clone, Copy)]
struct Decl {
    cfg: GPUSubgroupMatrixConfig,
    s: TileScheme,
    g: TileGeometry,
    vw: u32,
    planes: bool,
    fused: bool,
    /// Whether the per-element function takes the tile's group (it reads columns).
    group_cols: bool,
    ty: Types,
    mt: Tensors,
    io: Interface,
    refs: Refs,
    f_element: Option<Word>,
}

/// The scalar types, and the type C is stored in (the accumulator's, or a fused epilogue's
/// output) with its bytes.
#[derive(Clone, Copy)]
struct Types {
    t_void: Word,
    t_bool: Word,
    t_u32: Word,
    t_uvec3: Word,
    t_comp: Word,
    t_res: Word,
    t_c: Word,
    c_bytes: u32,
}

impl Types {
    fn declare(mb: &mut ModuleBuilder, key: &KernelKey) -> Self {
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
struct Tensors {
    /// Accumulators along the tile's N side, and each one's shape.
    parts: u32,
    acc_rows: u32,
    acc_cols: u32,
    t_mat_a: Word,
    t_mat_b: Word,
    t_mat_acc: Word,
    c_rows: Word,
    c_cols: Word,
    c_bk: Word,
    t_layout_clamped: Word,
    t_layout_unclamped: Word,
    c0: Word,
    c1: Word,
    t_view_transpose: Word,
}

impl Tensors {
    fn declare(mb: &mut ModuleBuilder, key: &KernelKey, ty: &Types) -> Self {
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
struct Interface {
    v_workgroup: Word,
    v_pc: Word,
    v_a: Word,
    v_b: Word,
    v_c: Word,
    v_scale: Option<Word>,
    v_groups: Option<Word>,
}

impl Interface {
    fn declare(mb: &mut ModuleBuilder, key: &KernelKey, ty: &Types, planes: bool) -> Self {
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
struct Refs {
    p_sb_comp: Word,
    p_sb_res: Word,
    p_fn_acc: Word,
    zero_res: Word,
    zero_comp: Word,
}

impl Refs {
    fn declare(mb: &mut ModuleBuilder, ty: &Types, mt: &Tensors) -> Self {
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
fn declare(mb: &mut ModuleBuilder, key: &KernelKey) -> BuildResult<Decl> {
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

/// What the loops and the epilogue refer to: the accumulators (and a split's partial sums), the
/// sizes, the tile, the multiply's left and right operands and C as tensors over their
/// buffers, the transposing view, and the zero matrices.
struct Setup {
    v_acc: Vec<Word>,
    v_sum: Vec<Word>,
    pm: Word,
    pn: Word,
    /// Half of K (split planes: the lo plane follows the hi one) and the scales' reciprocals.
    k_half: Option<Word>,
    unscale: Option<[Word; 2]>,
    k_loop_end: Word,
    m0: Word,
    n0: Word,
    c_off: Word,
    group: Option<Word>,
    p_c: Word,
    left: Tensor,
    p_left: Word,
    row0: Word,
    right: Tensor,
    p_right: Word,
    col0s: Vec<Word>,
    c: Tensor,
    view: Word,
    operands: Option<CooperativeMatrixOperands>,
    zero_a: Word,
    zero_b: Word,
    zero_acc: Word,
}

/// The function's first block: the accumulators' variables, the sizes (pushed or built in),
/// the tile (an empty one returns), the operands' tensors, and zeroed accumulators.
fn setup(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl) -> BuildResult<Setup> {
    let Decl {
        cfg,
        s,
        g,
        vw,
        planes,
        ty,
        mt,
        io,
        refs,
        ..
    } = *d;
    let v_acc: Vec<Word> = (0..mt.parts)
        .map(|_| mb.b.variable(refs.p_fn_acc, None, StorageClass::Function, None))
        .collect();
    // Split planes: each loop iteration's partial sums.
    let v_sum: Vec<Word> = (0..if planes { mt.parts } else { 0 })
        .map(|_| mb.b.variable(refs.p_fn_acc, None, StorageClass::Function, None))
        .collect();
    let b = mb;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(io.v_pc, which as u32);
    // N, K and the leading dimensions: pushed (`per` elements to the pushed unit), or built in
    // (`KernelKey::fixed`), which the driver compiles into a faster loop (perf/h100-27-10.txt:
    // `nn` 4096^3 +9%, 2048^3 +7% on the H100), one pipeline per shape.
    let size = |b: &mut ModuleBuilder, built_in: Option<u32>, which: Pc, per: u32| -> BuildResult<Word> {
        if let Some(v) = built_in {
            return Ok(b.c_u32(v));
        }
        let v = pc(b, which)?;
        if per == 1 {
            Ok(v)
        } else {
            b.mul_u(v, per)
        }
    };
    let f = key.fixed;
    let pm = pc(b, Pc::M)?;
    let pn = size(b, f.map(|f| f.n), Pc::N, 1)?;
    let pk = size(b, f.map(|f| f.k), Pc::K, 1)?;
    // Leading dimensions and offsets of A and B come in 16-byte vectors; tensors count elements.
    let lda = size(b, f.map(|f| f.lda), Pc::LdaVec, vw)?;
    let ldb = size(b, f.map(|f| f.ldb), Pc::LdbVec, vw)?;
    let ldc = size(b, f.map(|f| f.ldc), Pc::Ldc, 1)?;
    // Split planes: the operands' K holds the hi plane, then the lo plane; the loop runs over
    // the first half. Their scales' reciprocals (A's, B's) unscale the result.
    let (k_half, unscale) = match io.v_scale {
        Some(v) => {
            let half = b.div_u(pk, 2)?;
            let [(_, ua), (_, ub)] = super::convert::operand_scales(b, v)?;
            (Some(half), Some([ua, ub]))
        }
        None => (None, None),
    };
    let k_loop_end = k_half.unwrap_or(pk);
    let wg = b.b.load(ty.t_uvec3, None, io.v_workgroup, None, [])?;
    let at = (g.bm, g.bn);
    let here = tile(b, (io.v_pc, wg), (pm, pn), at, s.raster_group(), io.v_groups)?;
    skip_empty(b, &here)?;
    let Tile {
        offsets: [a_off_vec, b_off_vec, c_off],
        pm,
        m0,
        n0,
        group,
    } = here;
    let a_off = b.mul_u(a_off_vec, vw)?;
    let b_off = b.mul_u(b_off_vec, vw)?;
    // Tensor loads and stores start at a 16-byte aligned element: the planner keeps every
    // operand's first element, and every batch stride, so.
    let p_a = b.b.access_chain(refs.p_sb_comp, None, io.v_a, [mt.c0, a_off])?;
    let p_b = b.b.access_chain(refs.p_sb_comp, None, io.v_b, [mt.c0, b_off])?;
    let p_c = b.b.access_chain(refs.p_sb_res, None, io.v_c, [mt.c0, c_off])?;

    // The multiply's left and right operands and its result: A, B and C, or B^T, A^T and C^T
    // (the same memory, the layouts flipped) when the tile is computed transposed. `row0` is
    // the accumulators' first row, `col0s` each accumulator's first column.
    let ((left, p_left, row0), (right, p_right, col0)) = if s.c_transposed() {
        (
            (Tensor::new(key.b_layout.transposed(), (pn, pk), ldb), p_b, n0),
            (Tensor::new(key.a_layout.transposed(), (pk, pm), lda), p_a, m0),
        )
    } else {
        (
            (Tensor::new(key.a_layout, (pm, pk), lda), p_a, m0),
            (Tensor::new(key.b_layout, (pk, pn), ldb), p_b, n0),
        )
    };
    let c = if s.c_transposed() {
        Tensor::new(Layout::ColMajor, (pn, pm), ldc)
    } else {
        Tensor::new(Layout::RowMajor, (pm, pn), ldc)
    };
    let col0s = (0..mt.parts)
        .map(|j| {
            if j == 0 {
                Ok(col0)
            } else {
                b.add_u(col0, j * mt.acc_cols)
            }
        })
        .collect::<BuildResult<Vec<Word>>>()?;
    let view = b.b.create_tensor_view_nv(mt.t_view_transpose, None)?;
    let operands = mul_add_operands(&cfg);
    // Values for elements a load skips (none here: no clipping); zero for clarity.
    let zero_a = b.b.composite_construct(mt.t_mat_a, None, [refs.zero_comp])?;
    let zero_b = b.b.composite_construct(mt.t_mat_b, None, [refs.zero_comp])?;
    let zero_acc = b.b.composite_construct(mt.t_mat_acc, None, [refs.zero_res])?;
    for &v in &v_acc {
        b.b.store(v, zero_acc, None, [])?;
    }
    Ok(Setup {
        v_acc,
        v_sum,
        pm,
        pn,
        k_half,
        unscale,
        k_loop_end,
        m0,
        n0,
        c_off,
        group,
        p_c,
        left,
        p_left,
        row0,
        right,
        p_right,
        col0s,
        c,
        view,
        operands,
        zero_a,
        zero_b,
        zero_acc,
    })
}

/// A tensor layout of `t` over the operand.
fn layout(b: &mut ModuleBuilder, d: &Decl, t_layout: Word, t: &Tensor) -> BuildResult<Word> {
    let l = b.b.create_tensor_layout_nv(t_layout, None)?;
    let l =
        b.b.tensor_layout_set_dimension_nv(t_layout, None, l, [t.dims.0, t.dims.1])?;
    b.b.tensor_layout_set_stride_nv(t_layout, None, l, [t.stride, d.mt.c1])
}

/// Layout `l` of `t` sliced to the matrix at (row0, col0) of the matrix's (not the storage's)
/// coordinates.
fn slice(
    b: &mut ModuleBuilder,
    (t_layout, l, t): (Word, Word, &Tensor),
    (row0, rows): (Word, Word),
    (col0, cols): (Word, Word),
) -> BuildResult<Word> {
    if t.transposed {
        b.b.tensor_layout_slice_nv(t_layout, None, l, [col0, cols, row0, rows])
    } else {
        b.b.tensor_layout_slice_nv(t_layout, None, l, [row0, rows, col0, cols])
    }
}

/// How a load or store addresses `t`: through the transposing `view` where it is transposed.
fn addressing(t: &Tensor, view: Word) -> (TensorAddressingOperands, Vec<rspirv::dr::Operand>) {
    if t.transposed {
        (
            TensorAddressingOperands::TENSOR_VIEW,
            vec![rspirv::dr::Operand::IdRef(view)],
        )
    } else {
        (TensorAddressingOperands::NONE, vec![])
    }
}

/// A K loop's view of the kernel: the type of its layouts and the operands' layouts of it.
struct LoopCtx<'a> {
    d: &'a Decl,
    st: &'a Setup,
    t_layout: Word,
    la: Word,
    lb: Word,
}

/// One K step's loads at `k`: the left operand's slice, and the right's for each accumulator.
fn load_operands(b: &mut ModuleBuilder, x: &LoopCtx<'_>, k: Word) -> BuildResult<(Word, Vec<Word>)> {
    let Decl {
        s,
        mt:
            Tensors {
                parts,
                t_mat_a,
                t_mat_b,
                c_rows,
                c_cols,
                c_bk,
                ..
            },
        ..
    } = *x.d;
    let Setup {
        ref left,
        ref right,
        p_left,
        p_right,
        row0,
        ref col0s,
        view,
        zero_a,
        zero_b,
        ..
    } = *x.st;
    let (t_layout, la, lb) = (x.t_layout, x.la, x.lb);
    // The order of a step's loads is the scheme's (`right_first`): the driver schedules
    // them differently (docs/perf/JOURNAL.md, "Deeper iterations").
    let load_left = |b: &mut ModuleBuilder| -> BuildResult<Word> {
        let sa = slice(b, (t_layout, la, left), (row0, c_rows), (k, c_bk))?;
        let (ta, xa) = addressing(left, view);
        b.b.cooperative_matrix_load_tensor_nv(t_mat_a, None, p_left, zero_a, sa, MemoryAccess::NONE, ta, xa)
    };
    let ma = if s.right_first() { None } else { Some(load_left(b)?) };
    let mut mbs = Vec::with_capacity(parts as usize);
    for &cj in col0s {
        let sb = slice(b, (t_layout, lb, right), (k, c_bk), (cj, c_cols))?;
        let (tb, xb) = addressing(right, view);
        mbs.push(b.b.cooperative_matrix_load_tensor_nv(
            t_mat_b,
            None,
            p_right,
            zero_b,
            sb,
            MemoryAccess::NONE,
            tb,
            xb,
        )?);
    }
    let ma = match ma {
        Some(ma) => ma,
        None => load_left(b)?,
    };
    Ok((ma, mbs))
}

/// A K step's operands at `k`: (left, rights), and with split planes the lo plane's too.
fn load_step(b: &mut ModuleBuilder, x: &LoopCtx<'_>, k: Word) -> BuildResult<Step> {
    let hi = load_operands(b, x, k)?;
    let lo = match x.st.k_half {
        Some(half) => {
            let k_lo = b.b.i_add(x.d.ty.t_u32, None, k, half)?;
            Some(load_operands(b, x, k_lo)?)
        }
        None => None,
    };
    Ok((hi, lo))
}

/// `x` plus the step's product for accumulator `j`: with split planes `lo*hi + hi*lo + hi*hi`,
/// summed into a partial sum that starts from zero each loop iteration and is then added to the
/// accumulator in f32 (the matrix units accumulate f32 less carefully than an add: see
/// docs/perf/JOURNAL.md, f32 and mixed types).
fn multiply(
    b: &mut ModuleBuilder,
    (d, st): (&Decl, &Setup),
    ((ma, mbs), lo): &Step,
    j: usize,
    x: Word,
) -> BuildResult<Word> {
    let (t_mat_acc, operands) = (d.mt.t_mat_acc, st.operands);
    let Some((la, lbs)) = lo else {
        return b.mul_add(t_mat_acc, (*ma, mbs[j], x), operands);
    };
    let t = b.mul_add(t_mat_acc, (*la, mbs[j], x), operands)?;
    let t = b.mul_add(t_mat_acc, (*ma, lbs[j], t), operands)?;
    b.mul_add(t_mat_acc, (*ma, mbs[j], t), operands)
}

/// Adds a split's partial sums into the accumulators (nothing without split planes).
fn add_sums(b: &mut ModuleBuilder, d: &Decl, st: &Setup) -> BuildResult<()> {
    for (&v, &t) in st.v_acc.iter().zip(&st.v_sum) {
        let x = b.b.load(d.mt.t_mat_acc, None, v, None, [])?;
        let y = b.b.load(d.mt.t_mat_acc, None, t, None, [])?;
        let x = b.b.f_add(d.mt.t_mat_acc, None, x, y)?;
        b.b.store(v, x, None, [])?;
    }
    Ok(())
}

/// The K loop with layouts of type `t_layout`, entered from block `l_pre`, `steps` K steps per
/// iteration; ends in the block after the loop. Each step's loads are issued `ahead` steps
/// before its multiply: `steps - 1` puts all of an iteration's loads first, so the driver may
/// overlap the later steps' staging with the earlier steps' math; fewer keeps fewer operand
/// matrices live at once.
fn k_loop(
    b: &mut ModuleBuilder,
    (d, st): (&Decl, &Setup),
    t_layout: Word,
    l_pre: Word,
    (steps, ahead): (u32, u32),
    (k_start, k_end): (Word, Word),
) -> BuildResult<()> {
    let Decl {
        g,
        planes,
        ty: Types { t_u32, .. },
        mt: Tensors { t_mat_acc, c0, c1, .. },
        ..
    } = *d;
    let Setup {
        ref v_acc,
        ref v_sum,
        zero_acc,
        ..
    } = *st;
    let la = layout(b, d, t_layout, &st.left)?;
    let lb = layout(b, d, t_layout, &st.right)?;
    let x = LoopCtx {
        d,
        st,
        t_layout,
        la,
        lb,
    };
    let load = |b: &mut ModuleBuilder, k: Word| load_step(b, &x, k);
    let multiply = |b: &mut ModuleBuilder, step: &Step, j: usize, v: Word| multiply(b, (d, st), step, j, v);
    let add_sums = |b: &mut ModuleBuilder| add_sums(b, d, st);
    // Where an iteration's products go: the partial sums (split planes) or the accumulators.
    let into = if planes { v_sum } else { v_acc };
    if ahead == 0 && steps > 1 {
        // Load, multiply, step by step: an inner loop of `steps` K steps that the driver
        // unrolls (its hint), not unrolled here. The driver pipelines this form's loads
        // better: +7% at 4096^3 `nt` on the H200 for the same kernel unrolled by hand. The
        // inner loop counts its steps from 0, so its trip count is a constant the driver
        // sees (counting K from `kb` to `kb + steps * BK` was 1.4% slower).
        let c_steps = b.c_u32(steps);
        return b.counted_loop(l_pre, (k_start, k_end, steps * g.bk), |b, kb| {
            for &t in v_sum {
                b.b.store(t, zero_acc, None, [])?;
            }
            let l_inner = b.b.id();
            b.b.branch(l_inner)?;
            b.b.begin_block(Some(l_inner))?;
            b.counted_loop_ctl(l_inner, (c0, c_steps, c1), LoopControl::UNROLL, |b, step| {
                let dk = b.mul_u(step, g.bk)?;
                let k = b.b.i_add(t_u32, None, kb, dk)?;
                let step = load(b, k)?;
                for (j, &v) in into.iter().enumerate() {
                    let x = b.b.load(t_mat_acc, None, v, None, [])?;
                    let x = multiply(b, &step, j, x)?;
                    b.b.store(v, x, None, [])?;
                }
                Ok(())
            })?;
            add_sums(b)
        });
    }
    b.counted_loop(l_pre, (k_start, k_end, steps * g.bk), |b, kb| {
        let load_step = |b: &mut ModuleBuilder, step: u32| -> BuildResult<Step> {
            let k = if step == 0 { kb } else { b.add_u(kb, step * g.bk)? };
            load(b, k)
        };
        let mut pending = std::collections::VecDeque::with_capacity(steps as usize);
        let (mut loaded, mut acc) = (0, Vec::new());
        for step in 0..steps {
            while loaded <= (step + ahead).min(steps - 1) {
                pending.push_back(load_step(b, loaded)?);
                loaded += 1;
            }
            if acc.is_empty() {
                for &v in v_acc {
                    acc.push(if planes {
                        zero_acc
                    } else {
                        b.b.load(t_mat_acc, None, v, None, [])?
                    });
                }
            }
            let step = pending.pop_front().expect("step loaded above");
            for (j, x) in acc.iter_mut().enumerate() {
                *x = multiply(b, &step, j, *x)?;
            }
        }
        for (&v, x) in into.iter().zip(acc) {
            b.b.store(v, x, None, [])?;
        }
        add_sums(b)
    })
}

/// The loops over K. Workgroups inside C need no clamping but in K's last partial step: after
/// the whole loop iterations, an unclamped loop of single steps takes the whole steps left (all
/// of K when K is under one iteration, as in attention's K of 64 to 128), and a clamped one the
/// partial step. Workgroups on C's edge clamp throughout. The choice is workgroup-uniform.
fn loops(mb: &mut ModuleBuilder, d: &Decl, st: &Setup) -> BuildResult<()> {
    let Decl {
        s,
        g,
        ty: Types { t_bool, t_u32, .. },
        mt:
            Tensors {
                t_layout_clamped,
                t_layout_unclamped,
                c0,
                ..
            },
        ..
    } = *d;
    let Setup {
        pm,
        pn,
        m0,
        n0,
        k_loop_end,
        ..
    } = *st;
    let b = mb;
    let k_loop = |b: &mut ModuleBuilder, t_layout, l_pre, steps, ks| k_loop(b, (d, st), t_layout, l_pre, steps, ks);
    let m_end = b.add_u(m0, g.bm)?;
    let n_end = b.add_u(n0, g.bn)?;
    let in_m = b.b.u_less_than_equal(t_bool, None, m_end, pm)?;
    let in_n = b.b.u_less_than_equal(t_bool, None, n_end, pn)?;
    let k_rem = b.mod_u(k_loop_end, s.stages() * g.bk)?;
    let k_main = b.b.i_sub(t_u32, None, k_loop_end, k_rem)?;
    let inside = b.b.logical_and(t_bool, None, in_m, in_n)?;
    let (l_fast, l_edge, l_joined) = (b.b.id(), b.b.id(), b.b.id());
    b.b.selection_merge(l_joined, SelectionControl::NONE)?;
    b.b.branch_conditional(inside, l_fast, l_edge, [])?;
    b.b.begin_block(Some(l_fast))?;
    k_loop(b, t_layout_unclamped, l_fast, (s.stages(), s.lookahead()), (c0, k_main))?;
    let k_whole = if s.stages() > 1 {
        let k_part = b.mod_u(k_loop_end, g.bk)?;
        let k_whole = b.b.i_sub(t_u32, None, k_loop_end, k_part)?;
        let l_steps = b.b.id();
        b.b.branch(l_steps)?;
        b.b.begin_block(Some(l_steps))?;
        k_loop(b, t_layout_unclamped, l_steps, (1, 0), (k_main, k_whole))?;
        k_whole
    } else {
        k_main
    };
    let l_tail = b.b.id();
    b.b.branch(l_tail)?;
    b.b.begin_block(Some(l_tail))?;
    k_loop(b, t_layout_clamped, l_tail, (1, 0), (k_whole, k_loop_end))?;
    b.b.branch(l_joined)?;
    b.b.begin_block(Some(l_edge))?;
    k_loop(b, t_layout_clamped, l_edge, (1, 0), (c0, k_loop_end))?;
    b.b.branch(l_joined)?;
    b.b.begin_block(Some(l_joined))?;
    Ok(())
}

/// The epilogue: alpha * acc + beta * C (or the fused terms) through a clamped layout over C.
fn epilogue(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl, st: &Setup) -> BuildResult<()> {
    let Decl {
        cfg,
        fused,
        group_cols,
        f_element,
        ty: Types { t_c, t_res, .. },
        mt:
            Tensors {
                acc_rows,
                acc_cols,
                t_mat_acc,
                c_rows,
                c_cols,
                t_layout_clamped,
                ..
            },
        io: Interface { v_pc, .. },
        ..
    } = *d;
    let Setup {
        ref v_acc,
        ref col0s,
        ref c,
        row0,
        c_off,
        group,
        unscale,
        p_c,
        view,
        zero_acc,
        ..
    } = *st;
    let b = mb;
    let pc = |b: &mut ModuleBuilder, which: Pc| b.push_constant(v_pc, which as u32);
    let is_float = cfg.result_type.is_float();
    let mul = |b: &mut ModuleBuilder, x: Word, y: Word| {
        if is_float {
            b.b.f_mul(t_mat_acc, None, x, y)
        } else {
            b.b.i_mul(t_mat_acc, None, x, y)
        }
    };
    let lc_full = layout(b, d, t_layout_clamped, c)?;
    for (&v, &cj) in v_acc.iter().zip(col0s) {
        let lc = slice(b, (t_layout_clamped, lc_full, c), (row0, c_rows), (cj, c_cols))?;
        let mut out = b.b.load(t_mat_acc, None, v, None, [])?;
        // One factor at a time: their product may leave f32's range.
        for u in unscale.into_iter().flatten() {
            let u = b.b.composite_construct(t_mat_acc, None, [u])?;
            out = b.b.f_mul(t_mat_acc, None, out, u)?;
        }
        if let Some(f) = f_element {
            let id = b.b.id();
            let mut args = [out, f, row0, cj, c_off].map(Operand::IdRef).to_vec();
            if group_cols {
                args.extend(group.map(Operand::IdRef));
            }
            let op = Instruction::new(Op::CooperativeMatrixPerElementOpNV, Some(t_mat_acc), Some(id), args);
            b.b.insert_into_block(InsertPoint::End, op)?;
            out = id;
            if t_c != t_res {
                let t_mat_c = b.acc_type(t_c, Scope::Workgroup, (acc_rows, acc_cols));
                out = b.b.f_convert(t_mat_c, None, out)?;
            }
        }
        if key.epilogue.alpha && !fused {
            let bits = pc(b, Pc::Alpha)?;
            let alpha = b.scalar_from_bits(cfg.result_type, t_res, bits)?;
            let alpha = b.b.composite_construct(t_mat_acc, None, [alpha])?;
            out = mul(b, out, alpha)?;
        }
        if key.epilogue.beta && !fused {
            let bits = pc(b, Pc::Beta)?;
            let beta = b.scalar_from_bits(cfg.result_type, t_res, bits)?;
            let beta = b.b.composite_construct(t_mat_acc, None, [beta])?;
            let (tc, xc) = addressing(c, view);
            let cv =
                b.b.cooperative_matrix_load_tensor_nv(t_mat_acc, None, p_c, zero_acc, lc, MemoryAccess::NONE, tc, xc)?;
            let t = mul(b, cv, beta)?;
            out = if is_float {
                b.b.f_add(t_mat_acc, None, out, t)?
            } else {
                b.b.i_add(t_mat_acc, None, out, t)?
            };
        }
        let (tc, xc) = addressing(c, view);
        b.b.cooperative_matrix_store_tensor_nv(p_c, out, lc, MemoryAccess::NONE, tc, xc)?;
    }
    Ok(())
}

/// One K step's operands: the left matrix and the right ones (one per accumulator), and with
/// split planes the same from the lo plane.
type Step = ((Word, Vec<Word>), Option<(Word, Vec<Word>)>);

/// The per-element function of a fused epilogue: `(row, col, x, row0, col0, c_off) -> f32`, where
/// `row` and `col` count from the accumulator's corner (`row0`, `col0`) and `c_off` is C's first
/// element. The accumulator is C's tile, or its transpose when `transposed`. With `grouped`,
/// a last parameter names the tile's group, whose column vectors it reads.
/// It is called for every element of the tile, past C's edges too: those read the vectors and
/// C at C's last row or column (in bounds) and are dropped by the clamped store.
fn element_function(
    b: &mut ModuleBuilder,
    ep: &mut Fused,
    v_pc: Word,
    (v_c, t_c): (Word, Word),
    (transposed, grouped): (bool, bool),
) -> BuildResult<Word> {
    let (t_u32, t_f32, t_bool) = (b.t_u32(), b.t_f32(), b.t_bool());
    let mut params = vec![t_u32, t_u32, t_f32, t_u32, t_u32, t_u32];
    if grouped {
        params.push(t_u32);
    }
    let t_fn = b.b.type_function(t_f32, params);
    // Not DontInline: the driver inlines the function into the per-element loop it generates.
    let f = b.b.begin_function(t_f32, None, FunctionControl::INLINE, t_fn)?;
    let [row, col] = [b.b.function_parameter(t_u32)?, b.b.function_parameter(t_u32)?];
    let x = b.b.function_parameter(t_f32)?;
    let [row0, col0, c_off] = [
        b.b.function_parameter(t_u32)?,
        b.b.function_parameter(t_u32)?,
        b.b.function_parameter(t_u32)?,
    ];
    let group = grouped.then(|| b.b.function_parameter(t_u32)).transpose()?;
    b.b.begin_block(None)?;
    ep.prepare(b, v_pc, group)?;
    let clamped = |b: &mut ModuleBuilder, base: Word, i: Word, dim: Pc| -> BuildResult<Word> {
        let v = b.b.i_add(t_u32, None, base, i)?;
        let size = b.push_constant(v_pc, dim as u32)?;
        let one = b.c_u32(1);
        let last = b.b.i_sub(t_u32, None, size, one)?;
        let inside = b.b.u_less_than(t_bool, None, v, last)?;
        b.b.select(t_u32, None, inside, v, last)
    };
    let (along_m, along_n) = if transposed {
        ((col0, col), (row0, row))
    } else {
        ((row0, row), (col0, col))
    };
    let r = clamped(b, along_m.0, along_m.1, Pc::M)?;
    let c = clamped(b, along_n.0, along_n.1, Pc::N)?;
    let p_c = if ep.reads_c() {
        let ldc = b.push_constant(v_pc, Pc::Ldc as u32)?;
        let at = b.b.i_mul(t_u32, None, r, ldc)?;
        let at = b.b.i_add(t_u32, None, at, c)?;
        let at = b.b.i_add(t_u32, None, at, c_off)?;
        let p = b.ptr(StorageClass::StorageBuffer, t_c);
        let c0 = b.c_u32(0);
        Some(b.b.access_chain(p, None, v_c, [c0, at])?)
    } else {
        None
    };
    let v = ep.value(b, x, (r, c), p_c)?;
    b.b.ret_value(v)?;
    b.b.end_function()?;
    Ok(f)
}
