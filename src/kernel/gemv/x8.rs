//! Activations rounded to 8 bits beside a unit of weight codes: a unit of X as the rounding
//! pass wrote it or as the kernel rounds it, its packed dot products with the codes, and their
//! sums turned into values.

use super::*;

/// One unit of a row of X as [`crate::kernel::act8`] writes it (the pass, or the kernel rounding
/// X itself): 8 words of codes, the scale, and the scale times each half's sum of codes.
pub(super) struct X8Unit {
    pub(super) codes: Vec<Word>,
    pub(super) d: Word,
    pub(super) sums: [Word; 2],
}

impl X8Unit {
    /// Unit `u` of each of the invocation's rows of X: as the pass wrote it, or rounded here
    /// from X's values of `k.round_x` ([`GemvKey::round_x`]).
    pub(super) fn each_row(b: &mut ModuleBuilder, ids: &Ids, k: &KLoop, u: Word) -> BuildResult<Vec<Self>> {
        let vectors = match k.round_x {
            Some(elem) => UNIT * elem.size_bytes() / VECTOR_BYTES,
            None => BLOCK_VECTORS,
        };
        let first = b.mul_u(u, vectors)?;
        k.x_rows
            .iter()
            .map(|&row| {
                let at = b.b.i_add(ids.t_u32, None, row, first)?;
                match k.round_x {
                    Some(elem) => X8Unit::round(b, ids, (k.v_x, at), (elem, vectors)),
                    None => X8Unit::load(b, ids, k.v_x, at),
                }
            })
            .collect()
    }

    /// The unit of `elem` values whose first of `vectors` vectors is `at` in X, rounded.
    fn round(
        b: &mut ModuleBuilder,
        ids: &Ids,
        (v_x, at): (Word, Word),
        (elem, vectors): (ComponentType, u32),
    ) -> BuildResult<Self> {
        let mut raws = Vec::new();
        for v in 0..vectors {
            let at = b.add_u(at, v)?;
            raws.push(load_vector(b, ids, v_x, at)?);
        }
        let (codes, d, sums) = crate::kernel::act8::rounded_unit(b, elem, &raws)?;
        Ok(X8Unit { codes, d, sums })
    }

    /// The unit whose first vector is `at` in X.
    pub(super) fn load(b: &mut ModuleBuilder, ids: &Ids, v_x: Word, at: Word) -> BuildResult<Self> {
        let mut words = Vec::new();
        for v in 0..BLOCK_VECTORS {
            let at = b.add_u(at, v)?;
            let raw = load_vector(b, ids, v_x, at)?;
            for i in 0..4 {
                words.push(b.b.composite_extract(ids.t_u32, None, raw, [i])?);
            }
        }
        let f = |b: &mut ModuleBuilder, i: usize| b.b.bitcast(ids.t_f32, None, words[i]);
        let (d, sums) = (f(b, 8)?, [f(b, 9)?, f(b, 10)?]);
        words.truncate(8);
        Ok(X8Unit { codes: words, d, sums })
    }

    /// `slot += sum over the unit of x w`: each half's packed dot products of the codes, then
    /// `a (d_x sum) + b (d_x sum(q))` per half (once for both where the halves share them).
    pub(super) fn add_product(
        &self,
        b: &mut ModuleBuilder,
        ids: &Ids,
        w: &crate::kernel::blocks::Packed,
        slot: Word,
    ) -> BuildResult<()> {
        let (t_u32, t_f32) = (ids.t_u32, ids.t_f32);
        let mut halves = [0; 2];
        for (h, half) in halves.iter_mut().enumerate() {
            let mut sum = None;
            for (k, (&x, &wk)) in self.codes.iter().zip(&w.words).enumerate().skip(4 * h).take(4) {
                let mut dot = packed_dot(b, w.signed, x, wk)?;
                if let Some(plus) = w.plus {
                    let more = packed_dot(b, false, x, plus[k])?;
                    dot = b.b.i_add(t_u32, None, dot, more)?;
                }
                sum = Some(match sum {
                    None => dot,
                    Some(s) => b.b.i_add(t_u32, None, s, dot)?,
                });
            }
            *half = sum.expect("four words a half");
        }
        let terms: Vec<(Word, Word, Option<Word>, Word)> = if w.shared {
            let sum = b.b.i_add(t_u32, None, halves[0], halves[1])?;
            let x_sum = b.b.f_add(t_f32, None, self.sums[0], self.sums[1])?;
            vec![(sum, w.a[0], w.b[0], x_sum)]
        } else {
            (0..2).map(|h| (halves[h], w.a[h], w.b[h], self.sums[h])).collect()
        };
        let mut total = b.b.load(t_f32, None, slot, None, [])?;
        for (sum, a, off, x_sum) in terms {
            let sum = small_int_f32(b, sum)?;
            let dots = b.b.f_mul(t_f32, None, sum, self.d)?;
            let v = b.b.f_mul(t_f32, None, a, dots)?;
            total = b.b.f_add(t_f32, None, total, v)?;
            if let Some(off) = off {
                let v = b.b.f_mul(t_f32, None, off, x_sum)?;
                total = b.b.f_add(t_f32, None, total, v)?;
            }
        }
        b.b.store(slot, total, None, [])
    }
}

/// The packed dot product of X's four signed codes with W's four (signed or unsigned), as the
/// bits of an i32.
pub(super) fn packed_dot(b: &mut ModuleBuilder, signed: bool, x: Word, w: Word) -> BuildResult<Word> {
    let t_i32 = b.b.type_int(32, 1);
    let t_u32 = b.t_u32();
    let packed = Some(rspirv::spirv::PackedVectorFormat::PackedVectorFormat4x8Bit);
    let dot = if signed {
        b.b.s_dot(t_i32, None, x, w, packed)?
    } else {
        b.b.su_dot(t_i32, None, x, w, packed)?
    };
    b.b.bitcast(t_u32, None, dot)
}

/// The i32 whose bits are `x`, |x| < 2^22, as f32: `x + 0x4b400000` is the float
/// `1.5 * 2^23 + x`, and subtracting `1.5 * 2^23` leaves x exactly (both integers of one
/// binade), two full-rate operations where a conversion runs at a quarter of the rate on
/// NVIDIA's SMs. A half unit's sum is at most 16 * 127 * 255.
pub(super) fn small_int_f32(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let (t_u32, t_f32) = (b.t_u32(), b.t_f32());
    let magic = b.c_u32(0x4b40_0000);
    let biased = b.b.i_add(t_u32, None, x, magic)?;
    let f = b.b.bitcast(t_f32, None, biased)?;
    let offset = b.c_bits(t_f32, 12_582_912.0f32.to_bits());
    b.b.f_sub(t_f32, None, f, offset)
}
