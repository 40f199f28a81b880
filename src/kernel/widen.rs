//! One 16-byte vector of stored elements widened to 32-bit four-vectors, for the kernels without
//! matrix units: f32 as it is, f16 and bf16 to f32, i8 and u8 to 32-bit integers (sign- or
//! zero-extended, as u32 bits). Every conversion is exact.

use super::builder::{BuildResult, ModuleBuilder};
use crate::config::ComponentType;
use rspirv::dr::Operand;
use rspirv::spirv::Word;

/// GLSL.std.450 `UnpackHalf2x16`: two f16 in a word to f32, exact, without the Float16
/// capability (so devices without `shaderFloat16` widen f16 too).
const GLSL_UNPACK_HALF_2X16: u32 = 62;

/// Elements of `stored` per 16-byte vector.
pub fn per_vector(stored: ComponentType) -> u32 {
    16 / stored.size_bytes()
}

/// Whether the widened four-vectors of `stored` are integers (u32 bits) rather than f32.
pub fn widens_to_int(stored: ComponentType) -> bool {
    matches!(stored, ComponentType::I8 | ComponentType::U8)
}

/// The elements of `raw` (a `uvec4` of `elem`, f32/f16/bf16/i8/u8) as four-vectors (`vec4` of
/// f32 for floats, `uvec4` for 8-bit integers), each with the index of its elements in the
/// 16-byte vector. bf16's come as the even and the odd elements (two operations for eight);
/// the others in order. `glsl` is the module's GLSL.std.450 import (f16 only).
pub fn widen(b: &mut ModuleBuilder, glsl: Word, elem: ComponentType, raw: Word) -> BuildResult<Vec<(Word, [u32; 4])>> {
    let (t_u32, t_f32) = (b.t_u32(), b.t_f32());
    let t_uvec4 = b.t_uvec(4);
    let t_vec4 = b.b.type_vector(t_f32, 4);
    let t_vec2 = b.b.type_vector(t_f32, 2);
    let splat = |b: &mut ModuleBuilder, v: [u32; 4]| {
        let c = v.map(|x| b.c_u32(x));
        b.b.constant_composite(t_uvec4, c)
    };
    Ok(match elem {
        ComponentType::F32 => vec![(b.b.bitcast(t_vec4, None, raw)?, [0, 1, 2, 3])],
        ComponentType::Bf16 => {
            let shift = splat(b, [16; 4]);
            let mask = splat(b, [0xffff_0000; 4]);
            let even = b.b.shift_left_logical(t_uvec4, None, raw, shift)?;
            let odd = b.b.bitwise_and(t_uvec4, None, raw, mask)?;
            vec![
                (b.b.bitcast(t_vec4, None, even)?, [0, 2, 4, 6]),
                (b.b.bitcast(t_vec4, None, odd)?, [1, 3, 5, 7]),
            ]
        }
        ComponentType::I8 | ComponentType::U8 => {
            // Byte j of word w is element 4w + j: each word splatted and shifted per lane.
            let signed = elem == ComponentType::I8;
            let (up, down) = if signed {
                (splat(b, [24, 16, 8, 0]), splat(b, [24; 4]))
            } else {
                (splat(b, [0, 8, 16, 24]), splat(b, [0xff; 4]))
            };
            let mut out = Vec::with_capacity(4);
            for w in 0..4 {
                let word = b.b.composite_extract(t_u32, None, raw, [w])?;
                let words = b.b.composite_construct(t_uvec4, None, [word; 4])?;
                let v = if signed {
                    let high = b.b.shift_left_logical(t_uvec4, None, words, up)?;
                    b.b.shift_right_arithmetic(t_uvec4, None, high, down)?
                } else {
                    let low = b.b.shift_right_logical(t_uvec4, None, words, up)?;
                    b.b.bitwise_and(t_uvec4, None, low, down)?
                };
                out.push((v, [0, 1, 2, 3].map(|j| 4 * w + j)));
            }
            out
        }
        _ => {
            let mut pairs = Vec::new();
            for w in 0..4 {
                let word = b.b.composite_extract(t_u32, None, raw, [w])?;
                pairs.push(b.b.ext_inst(t_vec2, None, glsl, GLSL_UNPACK_HALF_2X16, [Operand::IdRef(word)])?);
            }
            vec![
                (
                    b.b.vector_shuffle(t_vec4, None, pairs[0], pairs[1], [0, 1, 2, 3])?,
                    [0, 1, 2, 3],
                ),
                (
                    b.b.vector_shuffle(t_vec4, None, pairs[2], pairs[3], [0, 1, 2, 3])?,
                    [4, 5, 6, 7],
                ),
            ]
        }
    })
}

/// [`widen`]'s four-vectors in element order (bf16's even and odd ones interleaved): vector `j`
/// holds elements `4j..4j+4`.
pub fn widen_in_order(b: &mut ModuleBuilder, glsl: Word, elem: ComponentType, raw: Word) -> BuildResult<Vec<Word>> {
    let parts: Vec<Word> = widen(b, glsl, elem, raw)?.into_iter().map(|(v, _)| v).collect();
    if elem != ComponentType::Bf16 {
        return Ok(parts);
    }
    let t_f32 = b.t_f32();
    let t_vec4 = b.b.type_vector(t_f32, 4);
    let (even, odd) = (parts[0], parts[1]);
    Ok(vec![
        b.b.vector_shuffle(t_vec4, None, even, odd, [0, 4, 1, 5])?,
        b.b.vector_shuffle(t_vec4, None, even, odd, [2, 6, 3, 7])?,
    ])
}
