//! The epilogue: alpha * acc + beta * C, or a fused epilogue's per-element function, stored through a clamped layout over C.

use super::*;

/// The epilogue: alpha * acc + beta * C (or the fused terms) through a clamped layout over C.
pub(super) fn epilogue(mb: &mut ModuleBuilder, key: &KernelKey, d: &Decl, st: &Setup) -> BuildResult<()> {
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

/// The per-element function of a fused epilogue: `(row, col, x, row0, col0, c_off) -> f32`, where
/// `row` and `col` count from the accumulator's corner (`row0`, `col0`) and `c_off` is C's first
/// element. The accumulator is C's tile, or its transpose when `transposed`. With `grouped`,
/// a last parameter names the tile's group, whose column vectors it reads.
/// It is called for every element of the tile, past C's edges too: those read the vectors and
/// C at C's last row or column (in bounds) and are dropped by the clamped store.
pub(super) fn element_function(
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
