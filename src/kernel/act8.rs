//! Activations rounded to 8 bits, a block of [`UNIT`] values at a time, for the matrix-vector
//! kernel on quantized weights ([`super::gemv`] with [`super::GemvKey::int8_x`]): it then
//! multiplies four weight codes by four activations in one packed integer dot product instead
//! of dequantizing each weight to f32 (ggml's `q8_1` activations and `mul_mat_vecq`, written
//! here from the idea). Each block's scale is `d = max |x| / 127` and its codes
//! `round_even(x * 127 / max |x|)` (all zero where the block is), so `|x - d q| <= d / 2` up to
//! the rounding of `x * 127 / max |x|` in f32.
//!
//! Bindings: 0 = X (16-byte vectors of f16, bf16 or f32, each row contiguous along K), 2 = the
//! blocks out (16-byte vectors). Each block out is [`BLOCK_VECTORS`] vectors: the 32 codes as
//! 8 words (value `4k + j` in byte `j` of word `k`, two's complement), then `d`, `d` times the
//! sum of the codes of values 0..16, `d` times that of 16..32 (f32 bits), and a zero word.
//! Push constants ([`super::PushConstants`]): `m` = rows, `n` = blocks per row (K / 32), `k` =
//! workgroups dispatched (they stride over the blocks together), `lda_vec` and `a_off_vec` = X's
//! leading dimension and first vector, `ldb_vec` and `c_off` = the blocks' (in vectors).

pub use super::blocks::UNIT;
use super::builder::{BuildResult, ModuleBuilder};
use super::push::Pc;
use crate::config::ComponentType;
use rspirv::dr::Operand;
use rspirv::spirv::{BuiltIn, FunctionControl, StorageClass, Word};

/// Invocations per workgroup.
pub const THREADS: u32 = 128;
/// Most workgroups per dispatch.
pub const MAX_GROUPS: u32 = 4096;
/// 16-byte vectors per block of 32 activations out.
pub const BLOCK_VECTORS: u32 = 3;

/// GLSL.std.450 instruction numbers.
const GLSL_ROUND_EVEN: u32 = 2;
const GLSL_FABS: u32 = 4;
const GLSL_FMAX: u32 = 40;

pub(super) fn emit(elem: ComponentType) -> BuildResult<Vec<u32>> {
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let t_void = b.t_void();
    let t_u32 = b.t_u32();
    let t_uvec3 = b.t_uvec(3);
    let t_uvec4 = b.t_uvec(4);
    let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = b.push_constant_block(super::push::PC_MEMBERS);
    let v_x = b.storage_buffer(t_uvec4, 16, 0, true);
    let v_out = b.storage_buffer(t_uvec4, 16, 2, false);

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let pc = |b: &mut ModuleBuilder, i: Pc| b.push_constant(v_pc, i as u32);
    let (rows, units, groups) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::K)?);
    let (x_ld, x_off) = (pc(b, Pc::LdaVec)?, pc(b, Pc::AOff)?);
    let (out_ld, out_off) = (pc(b, Pc::LdbVec)?, pc(b, Pc::COff)?);
    b.grid_stride_rows((v_local, v_wg, THREADS), (rows, units, groups), |b, r, u| {
        let p_sb = b.ptr(StorageClass::StorageBuffer, t_uvec4);
        let c0 = b.c_u32(0);
        let per = 16 / elem.size_bytes();
        let first = b.b.i_mul(t_u32, None, r, x_ld)?;
        let first = b.b.i_add(t_u32, None, first, x_off)?;
        let step = b.mul_u(u, UNIT / per)?;
        let first = b.b.i_add(t_u32, None, first, step)?;
        let mut raws = Vec::new();
        for v in 0..UNIT / per {
            let at = b.add_u(first, v)?;
            let p = b.b.access_chain(p_sb, None, v_x, [c0, at])?;
            raws.push(b.b.load(t_uvec4, None, p, None, [])?);
        }
        let (codes, d, sums) = rounded_unit(b, elem, &raws)?;
        let mut words = codes;
        words.push(b.b.bitcast(t_u32, None, d)?);
        for s in sums {
            words.push(b.b.bitcast(t_u32, None, s)?);
        }
        words.push(c0);
        let at = b.b.i_mul(t_u32, None, r, out_ld)?;
        let at = b.b.i_add(t_u32, None, at, out_off)?;
        let step = b.mul_u(u, BLOCK_VECTORS)?;
        let at = b.b.i_add(t_u32, None, at, step)?;
        for (v, four) in words.chunks(4).enumerate() {
            let vector = b.b.composite_construct(t_uvec4, None, four.to_vec())?;
            let at = b.add_u(at, v as u32)?;
            let p = b.b.access_chain(p_sb, None, v_out, [c0, at])?;
            b.b.store(p, vector, None, [])?;
        }
        Ok(())
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}

/// A unit of X, its [`UNIT`] values of `elem` in 16-byte vectors `raws` (in order), rounded: 8
/// words of packed codes, the scale `d`, and `d` times the sum of each half's codes: a block
/// as the pass writes it, and as the matrix-vector kernel rounding X itself holds it
/// ([`super::GemvKey::round_x`]).
pub(super) fn rounded_unit(
    b: &mut ModuleBuilder,
    elem: ComponentType,
    raws: &[Word],
) -> BuildResult<(Vec<Word>, Word, [Word; 2])> {
    let glsl = b.glsl();
    let mut x = Vec::new();
    for &raw in raws {
        x.extend(super::widen::widen_in_order(b, glsl, elem, raw)?);
    }
    let (codes, d, sums) = round_block(b, &x)?;
    let t_f32 = b.t_f32();
    let mut scaled = [0; 2];
    for (out, s) in scaled.iter_mut().zip(sums) {
        *out = b.b.f_mul(t_f32, None, d, s)?;
    }
    Ok((codes, d, scaled))
}

/// One block's eight four-vectors of f32 (values in order) as 8 words of packed codes, the
/// scale `d`, and the sums of the codes of each half as f32 (exact: at most 16 * 127).
fn round_block(b: &mut ModuleBuilder, x: &[Word]) -> BuildResult<(Vec<Word>, Word, [Word; 2])> {
    let (t_u32, t_f32, t_bool) = (b.t_u32(), b.t_f32(), b.t_bool());
    let t_vec4 = b.b.type_vector(t_f32, 4);
    let t_uvec4 = b.t_uvec(4);
    let t_i32 = b.b.type_int(32, 1);
    let t_ivec4 = b.b.type_vector(t_i32, 4);
    let glsl = b.glsl();
    let mut amax = None;
    for &v in x {
        let a = b.b.ext_inst(t_vec4, None, glsl, GLSL_FABS, [Operand::IdRef(v)])?;
        amax = Some(match amax {
            None => a,
            Some(m) => {
                b.b.ext_inst(t_vec4, None, glsl, GLSL_FMAX, [Operand::IdRef(m), Operand::IdRef(a)])?
            }
        });
    }
    let amax = amax.expect("a block has values");
    let mut m = b.b.composite_extract(t_f32, None, amax, [0])?;
    for i in 1..4 {
        let c = b.b.composite_extract(t_f32, None, amax, [i])?;
        m =
            b.b.ext_inst(t_f32, None, glsl, GLSL_FMAX, [Operand::IdRef(m), Operand::IdRef(c)])?;
    }
    let c127 = b.c_bits(t_f32, 127.0f32.to_bits());
    let zero = b.c_bits(t_f32, 0);
    let d = b.b.f_div(t_f32, None, m, c127)?;
    let any = b.b.f_ord_greater_than(t_bool, None, m, zero)?;
    let inv = b.b.f_div(t_f32, None, c127, m)?;
    let inv = b.b.select(t_f32, None, any, inv, zero)?;
    let inv4 = b.b.composite_construct(t_vec4, None, [inv; 4])?;
    let mask = b.c_u32(0xff);
    let mask4 = b.b.constant_composite(t_uvec4, [mask; 4]);
    let shifts = [0, 8, 16, 24].map(|s| b.c_u32(s));
    let shifts = b.b.constant_composite(t_uvec4, shifts);
    let mut words = Vec::new();
    let mut half_sums = [None, None];
    for (k, &v) in x.iter().enumerate() {
        let scaled = b.b.f_mul(t_vec4, None, v, inv4)?;
        let rounded =
            b.b.ext_inst(t_vec4, None, glsl, GLSL_ROUND_EVEN, [Operand::IdRef(scaled)])?;
        let q = b.b.convert_f_to_s(t_ivec4, None, rounded)?;
        let h = &mut half_sums[k / 4];
        *h = Some(match *h {
            None => q,
            Some(s) => b.b.i_add(t_ivec4, None, s, q)?,
        });
        let bytes = b.b.bitcast(t_uvec4, None, q)?;
        let bytes = b.b.bitwise_and(t_uvec4, None, bytes, mask4)?;
        let placed = b.b.shift_left_logical(t_uvec4, None, bytes, shifts)?;
        let mut word = b.b.composite_extract(t_u32, None, placed, [0])?;
        for i in 1..4 {
            let part = b.b.composite_extract(t_u32, None, placed, [i])?;
            word = b.b.bitwise_or(t_u32, None, word, part)?;
        }
        words.push(word);
    }
    let mut sums = [0; 2];
    for (out, s) in sums.iter_mut().zip(half_sums) {
        let s = s.expect("each half has values");
        let mut total = b.b.composite_extract(t_i32, None, s, [0])?;
        for i in 1..4 {
            let part = b.b.composite_extract(t_i32, None, s, [i])?;
            total = b.b.i_add(t_i32, None, total, part)?;
        }
        *out = b.b.convert_s_to_f(t_f32, None, total)?;
    }
    Ok((words, d, sums))
}
