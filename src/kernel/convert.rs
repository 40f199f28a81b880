//! f32 operands on their way to 16-bit matrix units: rounded ([`super::Load::Round`]) or split
//! ([`super::Load::Split`], the accurate f32 mode) as the GEMM kernel copies them to shared memory.
//!
//! The split:
//! An f32 `x` becomes `hi + lo`: `hi` is `s x` rounded to f16's 11 significand bits and
//! `lo = f16(s x - hi)` (at most 12 bits, rounded to 11): 22 of x's 24 bits, the rest rounded. `s` is a power of two that puts the matrix's largest magnitude in
//! `[2^14, 2^15)`, so `hi` cannot overflow f16 and only elements below `2^-28` of the largest lose
//! precision to f16's subnormals. Products `hi*hi + hi*lo + lo*hi` (the dropped `lo*lo` is about
//! `2^-22` relative) accumulate in f32, and the epilogue multiplies by `1/(s_a s_b)` (exact).

use super::builder::{BuildResult, ModuleBuilder};
use super::push::Pc;
use crate::config::ComponentType;
use rspirv::spirv::{StorageClass, Word};

/// Biased exponent the scaled largest magnitude gets: `2^14`.
const TARGET_EXP: u32 = 127 + 14;

/// Per operand, the scale `s` (f32) from its largest magnitude's bits in word `ci` (an id) of
/// the scale buffer, and `1/s`. Non-finite or zero maxima scale by 1; exponents clamp to normal
/// f32.
pub(super) fn scales(b: &mut ModuleBuilder, v_scale: Word, ci: Word) -> BuildResult<(Word, Word)> {
    let (t_u32, t_bool, t_f32) = (b.t_u32(), b.t_bool(), b.t_f32());
    let p_sb_u32 = b.ptr(StorageClass::StorageBuffer, t_u32);
    let c0 = b.c_u32(0);
    let p = b.b.access_chain(p_sb_u32, None, v_scale, [c0, ci])?;
    let bits = b.b.load(t_u32, None, p, None, [])?;
    let c23 = b.c_u32(23);
    let exp = b.b.shift_right_logical(t_u32, None, bits, c23)?;
    // s = 2^(14 - e): biased exponent 2 * 127 + 14 - biased(e), clamped to 1..=254.
    let c_top = b.c_u32(127 + TARGET_EXP);
    let want = b.b.i_sub(t_u32, None, c_top, exp)?;
    let c254 = b.c_u32(254);
    let high = b.b.u_greater_than(t_bool, None, want, c254)?;
    let want = b.b.select(t_u32, None, high, c254, want)?;
    let c1 = b.c_u32(1);
    let low = b.b.u_less_than(t_bool, None, want, c1)?;
    let want = b.b.select(t_u32, None, low, c1, want)?;
    // Zero (nothing to scale) or infinity/NaN (exponent 255: results are non-finite anyway).
    let c255 = b.c_u32(255);
    let is_zero = b.b.i_equal(t_bool, None, bits, c0)?;
    let non_finite = b.b.i_equal(t_bool, None, exp, c255)?;
    let plain = b.b.logical_or(t_bool, None, is_zero, non_finite)?;
    let c127 = b.c_u32(127);
    let want = b.b.select(t_u32, None, plain, c127, want)?;
    let s_bits = b.b.shift_left_logical(t_u32, None, want, c23)?;
    let s = b.b.bitcast(t_f32, None, s_bits)?;
    let one = b.c_bits(t_f32, 1.0f32.to_bits());
    let inv = b.b.f_div(t_f32, None, one, s)?;
    Ok((s, inv))
}

/// Both operands' `(s, 1/s)` ([`scales`]) from scale words 0 (A) and 1 (B).
pub(super) fn operand_scales(b: &mut ModuleBuilder, v_scale: Word) -> BuildResult<[(Word, Word); 2]> {
    let (w0, w1) = (b.c_u32(0), b.c_u32(1));
    Ok([scales(b, v_scale, w0)?, scales(b, v_scale, w1)?])
}

/// Eight f32 (two vectors of their bits) times `scale`, split into f16 high and low parts:
/// (vector of the eight `hi`, vector of the eight `lo`), element order kept.
pub(super) fn split_f32x8(b: &mut ModuleBuilder, lo: Word, hi: Word, scale: Word) -> BuildResult<(Word, Word)> {
    let t_uvec4 = b.t_uvec(4);
    let t_uvec2 = b.t_uvec(2);
    let t_f32 = b.t_f32();
    let t_vec4 = b.b.type_vector(t_f32, 4);
    let t_h = b.t_scalar(ComponentType::F16);
    let t_hvec4 = b.b.type_vector(t_h, 4);
    let mut his = [0; 2];
    let mut los = [0; 2];
    // hi: x rounded (half away from zero, on the magnitude bits) to the 11 significand bits f16
    // has, in integer arithmetic rather than as f32(f16(x)): compilers may fold that round trip
    // to x, which would leave lo zero. |x - hi| <= 2^-11 |x|, so the dropped lo*lo is 2^-22.
    let mask = b.c_u32(0xffff_e000);
    let mask4 = b.b.constant_composite(t_uvec4, [mask; 4]);
    let half = b.c_u32(0x1000);
    let half4 = b.b.constant_composite(t_uvec4, [half; 4]);
    for (i, v) in [lo, hi].into_iter().enumerate() {
        let f = b.b.bitcast(t_vec4, None, v)?;
        let x = b.b.vector_times_scalar(t_vec4, None, f, scale)?;
        let xb = b.b.bitcast(t_uvec4, None, x)?;
        let rounded = b.b.i_add(t_uvec4, None, xb, half4)?;
        let hb = b.b.bitwise_and(t_uvec4, None, rounded, mask4)?;
        let hf = b.b.bitcast(t_vec4, None, hb)?;
        let h = b.b.f_convert(t_hvec4, None, hf)?;
        let rest = b.b.f_sub(t_vec4, None, x, hf)?;
        let l = b.b.f_convert(t_hvec4, None, rest)?;
        his[i] = b.b.bitcast(t_uvec2, None, h)?;
        los[i] = b.b.bitcast(t_uvec2, None, l)?;
    }
    Ok((
        b.b.vector_shuffle(t_uvec4, None, his[0], his[1], [0, 1, 2, 3])?,
        b.b.vector_shuffle(t_uvec4, None, los[0], los[1], [0, 1, 2, 3])?,
    ))
}

/// Eight f32 (two vectors of their bits) rounded to nearest even in `to` (f16 or bf16; overflow
/// gives infinity) and packed into one vector, element order kept. The hardware conversion does
/// the work, but SPIR-V leaves its rounding to the implementation (NVIDIA's to bf16 measured
/// worse than nearest), so bf16 is first rounded to nearest even in integer arithmetic, NaNs
/// kept, and the conversion is then exact.
pub(super) fn narrow_f32x8(b: &mut ModuleBuilder, lo: Word, hi: Word, to: ComponentType) -> BuildResult<Word> {
    let t_uvec4 = b.t_uvec(4);
    let t_uvec2 = b.t_uvec(2);
    let t_bool = b.t_bool();
    let t_bvec4 = b.b.type_vector(t_bool, 4);
    let t_f32 = b.t_f32();
    let t_vec4 = b.b.type_vector(t_f32, 4);
    let t_h = b.t_scalar(to);
    let t_hvec4 = b.b.type_vector(t_h, 4);
    let mut splat = |v: u32| {
        let c = b.c_u32(v);
        b.b.constant_composite(t_uvec4, [c; 4])
    };
    let (c16, c1, c7fff, keep) = (splat(16), splat(1), splat(0x7fff), splat(0xffff_0000));
    let (abs_mask, inf) = (splat(0x7fff_ffff), splat(0x7f80_0000));
    let mut halves = [0; 2];
    for (out, v) in halves.iter_mut().zip([lo, hi]) {
        let v = if to == ComponentType::Bf16 {
            let top = b.b.shift_right_logical(t_uvec4, None, v, c16)?;
            let odd = b.b.bitwise_and(t_uvec4, None, top, c1)?;
            let bias = b.b.i_add(t_uvec4, None, c7fff, odd)?;
            let sum = b.b.i_add(t_uvec4, None, v, bias)?;
            let r = b.b.bitwise_and(t_uvec4, None, sum, keep)?;
            // A NaN's payload could round into infinity: leave NaNs to the conversion.
            let mag = b.b.bitwise_and(t_uvec4, None, v, abs_mask)?;
            let nan = b.b.u_greater_than(t_bvec4, None, mag, inf)?;
            b.b.select(t_uvec4, None, nan, v, r)?
        } else {
            v
        };
        let f = b.b.bitcast(t_vec4, None, v)?;
        let h = b.b.f_convert(t_hvec4, None, f)?;
        *out = b.b.bitcast(t_uvec2, None, h)?;
    }
    b.b.vector_shuffle(t_uvec4, None, halves[0], halves[1], [0, 1, 2, 3])
}

/// A planes pass's split ([`split_f32x8`]) where its scale words are bound (`v_scale`): the
/// scale from the word push constant `Col0` names (a push constant, not a literal, so one
/// pipeline serves A and B) and how far the `lo` plane lies after the `hi` plane (`BOff`, in
/// vectors).
pub(super) fn plane_scale(
    b: &mut ModuleBuilder,
    v_pc: Word,
    v_scale: Option<Word>,
) -> BuildResult<Option<(Word, Word)>> {
    let Some(v) = v_scale else { return Ok(None) };
    let word = b.push_constant(v_pc, Pc::Col0 as u32)?;
    let (scale, _) = scales(b, v, word)?;
    Ok(Some((scale, b.push_constant(v_pc, Pc::BOff as u32)?)))
}

/// Eight f32 (two vectors of their bits) stored at vector `at` of the copy `v_dst`: rounded to
/// `to`, or with `planes` ([`plane_scale`]) split, `hi` at `at` and `lo` its offset after.
pub(super) fn store_converted(
    b: &mut ModuleBuilder,
    (v_dst, at): (Word, Word),
    (lo, hi): (Word, Word),
    to: ComponentType,
    planes: Option<(Word, Word)>,
) -> BuildResult<()> {
    let (t_u32, t_uvec4) = (b.t_u32(), b.t_uvec(4));
    let p_sb_uvec4 = b.ptr(StorageClass::StorageBuffer, t_uvec4);
    let u0 = b.c_u32(0);
    let (first, second) = match planes {
        Some((scale, lo_off)) => {
            let (hi_plane, lo_plane) = split_f32x8(b, lo, hi, scale)?;
            (hi_plane, Some((lo_plane, lo_off)))
        }
        None => (narrow_f32x8(b, lo, hi, to)?, None),
    };
    let p = b.b.access_chain(p_sb_uvec4, None, v_dst, [u0, at])?;
    b.b.store(p, first, None, [])?;
    if let Some((lo_plane, lo_off)) = second {
        let at = b.b.i_add(t_u32, None, at, lo_off)?;
        let p = b.b.access_chain(p_sb_uvec4, None, v_dst, [u0, at])?;
        b.b.store(p, lo_plane, None, [])?;
    }
    Ok(())
}
