//! Reading a ggml block format ([`QuantType`]) on the GPU: one value at a time, each the f32
//! arithmetic of ggml's `dequantize_row_*` in its order, as [`crate::quant::dequantize`]
//! computes it, each product and sum rounded on its own (`NoContraction`: a fused multiply-add
//! would round once and differ from ggml). The dequantizing pass ([`super::dequant`]) and the
//! matrix-vector kernel on quantized weights ([`super::gemv`]) both take values from here, a
//! unit of [`UNIT`] values at a time.

use super::builder::{BuildResult, ModuleBuilder};
use crate::quant::QuantType;
use rspirv::dr::Operand;
use rspirv::spirv::{Decoration, MemoryAccess, StorageClass, Word};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

mod packed;
pub(super) use packed::{packed, Packed};

/// GLSL.std.450 `UnpackHalf2x16` (exact; needs no Float16 capability).
const GLSL_UNPACK_HALF_2X16: u32 = 62;

/// Where the bytes after a run-time part of the address start: the binding's word holding the
/// first, and, where that byte need not begin the word, the right and left shifts that funnel
/// two words into one.
#[derive(Copy, Clone)]
struct Start {
    first: Word,
    funnel: Option<(Word, Word)>,
}

/// An aligned word (run-time part of its address, index) and the run-time shift applied to it.
type ShiftedKey = (Option<Word>, u32, Word);

/// One block's bytes as the kernel reads them: the word buffer and the block's first byte,
/// with the words read so far. Bytes are read through words aligned to the address they are
/// taken from (the block's, plus a run-time part that depends on the unit), each funnelled once
/// from the two words of the binding it straddles: every byte then sits at a shift known when
/// the kernel is generated, so a value costs a shift and a mask rather than a load and the
/// address arithmetic (a block need not start on a word: Q4_0's are 18 bytes). Callers name
/// bytes by their offset in the file's block; where the blocks are interleaved
/// ([`QuantType::interleave`]) the block finds them in its head or its tail.
pub(super) struct Block {
    words: Word,
    /// Whether `words` is a workgroup array the blocks were staged into (else the binding).
    shared: bool,
    base: Word,
    /// Per run-time part of the address: where its bytes start in the binding.
    starts: RefCell<HashMap<Option<Word>, Start>>,
    /// Aligned word `k` after each run-time part.
    aligned_words: RefCell<HashMap<(Option<Word>, u32), Word>>,
    /// Aligned words shifted right by a run-time amount (the unit's field position).
    shifted: RefCell<HashMap<ShiftedKey, Word>>,
    /// What depends on the unit alone (its addresses, shifts, scales), made once.
    unit: RefCell<HashMap<(&'static str, u32), Word>>,
    /// Whether the block starts on a word (its format's size is a multiple of 4 and the first
    /// block's byte is, which the planner checks): words at `at`s known to be multiples of 4
    /// are then loaded as they are, without the funnel.
    aligned: bool,
    /// Run-time parts of addresses known to be multiples of 4 bytes (see `aligned`) or of 16
    /// (see `vectors`): the larger multiple each is known to be (shared with `tail`).
    multiples: Rc<RefCell<HashMap<Word, u32>>>,
    /// The binding seen as 16-byte vectors, where every block starts on 16 bytes of it
    /// ([`crate::kernel::GemvKey::wide_loads`]): words after a run-time part that is a multiple
    /// of 16 then come from one vector load per four.
    vectors: Option<Word>,
    /// Vector `j` after each run-time part.
    loaded_vectors: RefCell<HashMap<(Option<Word>, u32), Word>>,
    /// Where the blocks are interleaved ([`QuantType::interleave`]): the block's byte from
    /// which its fields lie in the group's second part (its head's size), and its bytes there,
    /// read as a block of their own whose first byte is that one.
    tail: Option<(u32, Box<Block>)>,
}

/// Where a block's bytes (or its head's or tail's, interleaved) start: the byte, and whether
/// it begins a word and a 16-byte vector wherever the blocks' first byte does.
struct Place {
    base: Word,
    on_word: bool,
    on_vector: bool,
}

impl Block {
    /// Block `block` (a run-time index) of the blocks of `q` from byte `first` of the binding
    /// `words` (of u32; `vectors` the same binding as 16-byte vectors, where the blocks'
    /// first byte and every group's or block's size are multiples of 16), `interleaved` or
    /// whole ([`QuantType::interleave`]).
    pub(super) fn nth(
        b: &mut ModuleBuilder,
        (q, interleaved): (QuantType, bool),
        (words, vectors): (Word, Option<Word>),
        first: Word,
        block: Word,
    ) -> BuildResult<Self> {
        Self::placed(b, (q, interleaved), (words, vectors, false), first, block)
    }

    /// [`Block::nth`] for blocks staged in the workgroup array `words` (of u32), the blocks'
    /// first byte `first` bytes into it; words keep the alignment they had in the binding.
    pub(super) fn nth_staged(
        b: &mut ModuleBuilder,
        layout: (QuantType, bool),
        words: Word,
        first: Word,
        block: Word,
    ) -> BuildResult<Self> {
        Self::placed(b, layout, (words, None, true), first, block)
    }

    fn placed(
        b: &mut ModuleBuilder,
        (q, interleaved): (QuantType, bool),
        (words, vectors, shared): (Word, Option<Word>, bool),
        first: Word,
        block: Word,
    ) -> BuildResult<Self> {
        let multiples = Rc::<RefCell<HashMap<Word, u32>>>::default();
        let of = |place: Place| Block {
            words,
            vectors: vectors.filter(|_| place.on_vector),
            loaded_vectors: RefCell::default(),
            shared,
            base: place.base,
            starts: RefCell::default(),
            aligned_words: RefCell::default(),
            shifted: RefCell::default(),
            unit: RefCell::default(),
            aligned: place.on_word,
            multiples: multiples.clone(),
            tail: None,
        };
        let (head, tail) = places(b, q, interleaved, first, block)?;
        Ok(Block {
            tail: tail.map(|(split, place)| (split, Box::new(of(place)))),
            ..of(head)
        })
    }

    /// The block whose bytes from `offset` on are `offset`'s (the tail where the block is
    /// interleaved and `offset` lies past its head), and the offset in it.
    fn locate(&self, offset: u32) -> (&Block, u32) {
        match &self.tail {
            Some((split, tail)) if offset >= *split => (tail, offset - split),
            _ => (self, offset),
        }
    }

    /// Notes that the run-time address part `at` is a multiple of 4 bytes.
    fn on_words(&self, at: Word) -> Word {
        self.multiple_of(at, 4)
    }

    /// Notes that the run-time address part `at` is a multiple of 16 bytes (so of 4).
    fn on_vectors(&self, at: Word) -> Word {
        self.multiple_of(at, 16)
    }

    /// Notes that `at` is a multiple of `bytes` (a power of two), keeping the larger known.
    fn multiple_of(&self, at: Word, bytes: u32) -> Word {
        let mut multiples = self.multiples.borrow_mut();
        let known = multiples.entry(at).or_insert(bytes);
        *known = (*known).max(bytes);
        at
    }

    /// Whether the run-time address part `at` (none: 0) is known to be a multiple of `bytes`.
    fn known_multiple(&self, at: Option<Word>, bytes: u32) -> bool {
        at.is_none_or(|a| self.multiples.borrow().get(&a).is_some_and(|&m| m >= bytes))
    }

    /// The binding as vectors where bytes from `at` on start on one of its vectors.
    fn vectors_from(&self, at: Option<Word>) -> Option<Word> {
        self.vectors.filter(|_| self.known_multiple(at, 16))
    }

    /// Whether bytes from `at` on start on a word of the binding.
    fn starts_on_word(&self, at: Option<Word>) -> bool {
        self.aligned && self.known_multiple(at, 4)
    }

    /// The word `key` names for this unit: made by `f` the first time, reused after (every
    /// value of a unit shares its scales and field positions; the kernel emits them once).
    fn once(
        &self,
        b: &mut ModuleBuilder,
        key: (&'static str, u32),
        f: impl FnOnce(&mut ModuleBuilder) -> BuildResult<Word>,
    ) -> BuildResult<Word> {
        if let Some(&w) = self.unit.borrow().get(&key) {
            return Ok(w);
        }
        let w = f(b)?;
        self.unit.borrow_mut().insert(key, w);
        Ok(w)
    }
}

/// Where block `block` of the blocks of `q` from byte `first` starts: whole, or its head and,
/// after the head's size, its tail, where `interleaved` (group `block / n` of `n` blocks from
/// `first + (block / n) n size`: the heads, `head` bytes each, then the tails).
fn places(
    b: &mut ModuleBuilder,
    q: QuantType,
    interleaved: bool,
    first: Word,
    block: Word,
) -> BuildResult<(Place, Option<(u32, Place)>)> {
    let t_u32 = b.t_u32();
    let size = q.device_block_bytes() as u32;
    let Some(i) = q.interleave().filter(|_| interleaved) else {
        let at = b.mul_u(block, size)?;
        let base = b.b.i_add(t_u32, None, first, at)?;
        let whole = Place {
            base,
            on_word: size % 4 == 0,
            on_vector: size % 16 == 0,
        };
        return Ok((whole, None));
    };
    let (n, head) = (i.blocks as u32, i.head as u32);
    let group = b.div_u(block, n)?;
    let j = b.mod_u(block, n)?;
    let group = b.mul_u(group, n * size)?;
    let group = b.b.i_add(t_u32, None, first, group)?;
    let at = b.mul_u(j, head)?;
    let head_base = b.b.i_add(t_u32, None, group, at)?;
    let tails = b.add_u(group, n * head)?;
    let at = b.mul_u(j, size - head)?;
    let tail_base = b.b.i_add(t_u32, None, tails, at)?;
    let on = |bytes: u32, step: u32| (n * head) % bytes == 0 && step % bytes == 0;
    Ok((
        Place {
            base: head_base,
            on_word: head % 4 == 0,
            on_vector: head % 16 == 0,
        },
        Some((
            head,
            Place {
                base: tail_base,
                on_word: on(4, size - head),
                on_vector: on(16, size - head),
            },
        )),
    ))
}

/// Values per unit: the 32 values one invocation dequantizes at a time, a block of the 32-value
/// formats or a sub-block of 32 of the 256-value ones.
pub const UNIT: u32 = 32;

/// Unit `u` of a row of blocks of `layout` ([`Block::nth`]) whose first byte is `row` (in the
/// 32-bit words `words`): its block, and its index `s` within the block (0 for 32-value
/// blocks).
pub(super) fn unit(
    b: &mut ModuleBuilder,
    layout: (QuantType, bool),
    words: (Word, Option<Word>),
    row: Word,
    u: Word,
) -> BuildResult<(Block, Word)> {
    let per_block = layout.0.block_values() as u32 / UNIT;
    let block = b.div_u(u, per_block)?;
    let s = b.mod_u(u, per_block)?;
    Ok((Block::nth(b, layout, words, row, block)?, s))
}

/// Value `32 s + l` of the block (`s` the unit, a u32 id; `l` < 32 a literal, so everything
/// that depends on it alone is folded), as f32: one arm per format, each the formula of
/// [`crate::quant::dequantize`]'s function for it, value by value.
pub(super) fn value(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    // The nibble of a 32-value block's byte `l % 16` that holds value l: low for l < 16.
    let nibble = |b: &mut ModuleBuilder, qs: u32| -> BuildResult<Word> {
        let x = byte_at(b, blk, None, qs + l % 16)?;
        let shift = b.c_u32(4 * (l / 16));
        bits(b, x, shift, 0xf)
    };
    match q {
        QuantType::Q8_0 => {
            let d = half_at(b, blk, 0)?;
            let x = byte_at(b, blk, None, 2 + l)?;
            // The i8 plus 128 is the byte with its top bit flipped.
            let c128 = b.c_u32(0x80);
            let t_u32 = b.t_u32();
            let v = b.b.bitwise_xor(t_u32, None, x, c128)?;
            let v = code_f32(b, v, 128)?;
            fmul(b, v, d)
        }
        QuantType::Q4_0 => {
            let d = half_at(b, blk, 0)?;
            let v = nibble(b, 2)?;
            let v = code_f32(b, v, 8)?;
            fmul(b, v, d)
        }
        QuantType::Mxfp4 => {
            let d = blk.once(b, ("e8m0", 0), |b| {
                let e = byte_at(b, blk, None, 0)?;
                e8m0_half(b, e)
            })?;
            let v = nibble(b, 1)?;
            let v = fp4(b, v)?;
            let v = code_f32(b, v, 12)?;
            fmul(b, v, d)
        }
        QuantType::Q4_1 => {
            let (d, m) = (half_at(b, blk, 0)?, half_at(b, blk, 2)?);
            let v = nibble(b, 4)?;
            let v = code_f32(b, v, 0)?;
            let v = fmul(b, v, d)?;
            fadd(b, v, m)
        }
        QuantType::Q5_0 | QuantType::Q5_1 => {
            let plus = q == QuantType::Q5_1;
            let (qh, qs) = if plus { (4, 8) } else { (2, 6) };
            let low = nibble(b, qs)?;
            // The fifth bit: bit l % 8 of byte qh + l / 8, put at 16.
            let h = byte_at(b, blk, None, qh + l / 8)?;
            let shift = b.c_u32(l % 8);
            let h = bits(b, h, shift, 1)?;
            let h = b.mul_u(h, 16)?;
            let t_u32 = b.t_u32();
            let v = b.b.bitwise_or(t_u32, None, low, h)?;
            let d = half_at(b, blk, 0)?;
            if plus {
                let m = half_at(b, blk, 2)?;
                let v = code_f32(b, v, 0)?;
                let v = fmul(b, v, d)?;
                fadd(b, v, m)
            } else {
                let v = code_f32(b, v, 16)?;
                fmul(b, v, d)
            }
        }
        QuantType::Q2K => q2_k(b, blk, s, l),
        QuantType::Q3K => q3_k(b, blk, s, l),
        QuantType::Q4K | QuantType::Q5K => q45_k(b, q, blk, s, l),
        QuantType::Q6K => q6_k(b, blk, s, l),
    }
}

/// `block_q2_K`: value `32 s + l` is two bits of `qs[32 (s / 4) + l]` at `2 (s % 4)`, times
/// `d * (scale & 15)`, less `dmin * (scale >> 4)`, with `scales[2 s + l / 16]`.
fn q2_k(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let (at, shift) = two_bit_field(b, blk, s)?;
    let v = field(b, blk, (Some(at), 16 + l), shift, 3)?;
    let (dl, ml) = (q2_k_scale(b, blk, s, l, true)?, q2_k_scale(b, blk, s, l, false)?);
    let v = code_f32(b, v, 0)?;
    let v = fmul(b, dl, v)?;
    fsub(b, v, ml)
}

/// Q2_K's `d * (scale & 15)` (`scale`) or `dmin * (scale >> 4)` for value `32 s + l`
/// (`scales[2 s + l / 16]`), once per unit.
fn q2_k_scale(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32, scale: bool) -> BuildResult<Word> {
    blk.once(b, ("q2k scale", 2 * (l / 16) + u32::from(scale)), |b| {
        // Byte 2s + h of the scales: in the word at 4 (s / 2), at bit 16 (s % 2) + 8h.
        let at = blk.once(b, ("q2k scales at", 0), |b| {
            let pair = b.div_u(s, 2)?;
            b.mul_u(pair, 4).map(|at| blk.on_words(at))
        })?;
        let within = blk.once(b, ("q2k scale shift", l / 16), |b| {
            let odd = b.mod_u(s, 2)?;
            let shift = b.mul_u(odd, 16)?;
            b.add_u(shift, 8 * (l / 16))
        })?;
        let sc = byte_of_word(b, blk, (Some(at), 0), within)?;
        let shift = b.c_u32(if scale { 0 } else { 4 });
        let x = bits(b, sc, shift, 0xf)?;
        let x = u2f(b, x)?;
        let d = half_at(b, blk, if scale { 80 } else { 82 })?;
        fmul(b, d, x)
    })
}

/// `block_q3_K`: value `32 s + l` is two bits of `qs` as in Q2_K, less 4 where bit `s` of
/// `hmask[l]` is clear, times `d * (scale - 32)` with the 6-bit scale `2 s + l / 16`.
fn q3_k(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let (at, shift) = two_bit_field(b, blk, s)?;
    let low = field(b, blk, (Some(at), 32 + l), shift, 3)?;
    let set = field(b, blk, (None, l), s, 1)?;
    // low - 4 + 4 * set, as code - 4.
    let plus = b.mul_u(set, 4)?;
    let v = b.b.i_add(t_u32, None, low, plus)?;
    let dl = q3_k_scale(b, blk, s, l / 16)?;
    let v = code_f32(b, v, 4)?;
    fmul(b, dl, v)
}

/// Q3_K's `d * (scale - 32)` of half `h` of unit `s` (6-bit scale `2 s + h`), once per unit.
fn q3_k_scale(b: &mut ModuleBuilder, blk: &Block, s: Word, h: u32) -> BuildResult<Word> {
    blk.once(b, ("q3k dl", h), |b| {
        let t_u32 = b.t_u32();
        // Scale i: low four bits in byte i % 8's nibble i / 8, high two in byte 8 + i % 4 at
        // 2 (i / 4).
        let i = b.mul_u(s, 2)?;
        let i = b.add_u(i, h)?;
        let i8_ = b.mod_u(i, 8)?;
        let lo_byte = byte_at(b, blk, Some(i8_), 96)?;
        let nib_shift = b.div_u(i, 8)?;
        let nib_shift = b.mul_u(nib_shift, 4)?;
        let lo4 = bits(b, lo_byte, nib_shift, 0xf)?;
        let i4 = b.mod_u(i, 4)?;
        let hi_byte = byte_at(b, blk, Some(i4), 104)?;
        let hi_shift = b.div_u(i, 4)?;
        let hi_shift = b.mul_u(hi_shift, 2)?;
        let hi2 = bits(b, hi_byte, hi_shift, 3)?;
        let hi2 = b.mul_u(hi2, 16)?;
        let scale = b.b.bitwise_or(t_u32, None, lo4, hi2)?;
        let scale = b.add_u(scale, u32::MAX - 31)?;
        let d = half_at(b, blk, 108)?;
        let scale = s2f(b, scale)?;
        fmul(b, d, scale)
    })
}

/// `block_q4_K` / `block_q5_K`: sub-block `s` has a 6-bit scale and minimum
/// (`get_scale_min_k4`); value `32 s + l` is nibble `s % 2` of `qs[32 (s / 2) + l]` (plus 16
/// where bit `s` of `qh[l]` is set, Q5_K), times `d * scale`, less `dmin * min`.
fn q45_k(b: &mut ModuleBuilder, q: QuantType, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let five = q == QuantType::Q5K;
    let (at, shift) = q45_k_field(b, blk, s)?;
    let mut v = field(b, blk, (Some(at), if five { 48 } else { 16 } + l), shift, 0xf)?;
    if five {
        let h = field(b, blk, (None, 16 + l), s, 1)?;
        let h = b.mul_u(h, 16)?;
        v = b.b.i_add(t_u32, None, v, h)?;
    }
    let (d1, m1) = (scale_min_k4(b, blk, s, true)?, scale_min_k4(b, blk, s, false)?);
    let v = code_f32(b, v, 0)?;
    let v = fmul(b, d1, v)?;
    fsub(b, v, m1)
}

/// The Q4_K/Q5_K `qs` nibbles of unit `s`: their offset past the field's start, `32 (s / 2)`,
/// and their shift in the byte, `4 (s % 2)`; once per unit.
fn q45_k_field(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<(Word, Word)> {
    let at = blk.once(b, ("q45k at", 0), |b| {
        let pair = b.div_u(s, 2)?;
        b.mul_u(pair, 32).map(|at| blk.on_vectors(at))
    })?;
    let shift = blk.once(b, ("q45k shift", 0), |b| {
        let odd = b.mod_u(s, 2)?;
        b.mul_u(odd, 4)
    })?;
    Ok((at, shift))
}

/// Sub-block `s`'s `d * scale` (`scale`) or `dmin * min` of a Q4_K/Q5_K block, once per unit:
/// `get_scale_min_k4` over bytes 4..16, with i = s % 4, a = [4 + i], m = [8 + i], c = [12 + i].
fn scale_min_k4(b: &mut ModuleBuilder, blk: &Block, s: Word, scale: bool) -> BuildResult<Word> {
    blk.once(b, ("q45k scale", u32::from(scale)), |b| {
        let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
        // Bytes 4 + i, 8 + i and 12 + i: byte i of words 1, 2 and 3.
        let within = blk.once(b, ("q45k byte shift", 0), |b| {
            let i = b.mod_u(s, 4)?;
            b.mul_u(i, 8)
        })?;
        let own = byte_of_word(b, blk, (None, if scale { 1 } else { 2 }), within)?;
        let c = byte_of_word(b, blk, (None, 3), within)?;
        let (c0, c4, c6) = (b.c_u32(0), b.c_u32(4), b.c_u32(6));
        let first = b.b.u_less_than(t_bool, None, s, c4)?;
        let low = bits(b, own, c0, 63)?;
        let c_part = bits(b, c, if scale { c0 } else { c4 }, 0xf)?;
        let top = bits(b, own, c6, 3)?;
        // For s >= 4 the scale's top bits come from byte 4 + i ("a"), the minimum's from 8 + i.
        let top = b.mul_u(top, 16)?;
        let high = b.b.bitwise_or(t_u32, None, c_part, top)?;
        let x = b.b.select(t_u32, None, first, low, high)?;
        let x = u2f(b, x)?;
        let d = half_at(b, blk, if scale { 0 } else { 2 })?;
        fmul(b, d, x)
    })
}

/// `block_q6_K`: with `n = s / 4` and quarter `t = s % 4`, value `32 s + l` is nibble `t / 2` of
/// `ql[64 n + 32 (t % 2) + l]` with bits `2t` of `qh[32 n + l]` above it, less 32, times
/// `d * scales[8 n + 2 t + l / 16]` (signed).
fn q6_k(b: &mut ModuleBuilder, blk: &Block, s: Word, l: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let (n, quarter, ql_at, ql_shift, qh_at, qh_shift) = q6_k_fields(b, blk, s)?;
    let low = field(b, blk, (Some(ql_at), l), ql_shift, 0xf)?;
    let high = field(b, blk, (Some(qh_at), 128 + l), qh_shift, 3)?;
    let high = b.mul_u(high, 16)?;
    let v = b.b.bitwise_or(t_u32, None, low, high)?;
    let scale = q6_k_scale(b, blk, (n, quarter), l / 16)?;
    let v = code_f32(b, v, 32)?;
    fmul(b, scale, v)
}

/// Q6_K's fields of unit `4 n + t`: `n`, `t`, the offset `64 n + 32 (t % 2)` of its `ql`
/// bytes and their nibble's shift `4 (t / 2)`, the offset `32 n` of its `qh` bytes and their
/// bits' shift `2 t`; once per unit.
#[allow(clippy::type_complexity)]
fn q6_k_fields(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<(Word, Word, Word, Word, Word, Word)> {
    let t_u32 = b.t_u32();
    let n = blk.once(b, ("q6k n", 0), |b| b.div_u(s, 4))?;
    let quarter = blk.once(b, ("q6k quarter", 0), |b| b.mod_u(s, 4))?;
    let ql_at = blk.once(b, ("q6k ql", 0), |b| {
        let odd = b.mod_u(quarter, 2)?;
        let at = b.mul_u(n, 64)?;
        let step = b.mul_u(odd, 32)?;
        b.b.i_add(t_u32, None, at, step).map(|at| blk.on_vectors(at))
    })?;
    let ql_shift = blk.once(b, ("q6k ql shift", 0), |b| {
        let upper = b.div_u(quarter, 2)?;
        b.mul_u(upper, 4)
    })?;
    let qh_at = blk.once(b, ("q6k qh", 0), |b| b.mul_u(n, 32).map(|at| blk.on_vectors(at)))?;
    let qh_shift = blk.once(b, ("q6k qh shift", 0), |b| b.mul_u(quarter, 2))?;
    Ok((n, quarter, ql_at, ql_shift, qh_at, qh_shift))
}

/// Q6_K's `d * scales[8 n + 2 t + h]` (signed) of half `h` of unit `4 n + t`, once per unit.
fn q6_k_scale(b: &mut ModuleBuilder, blk: &Block, (n, quarter): (Word, Word), h: u32) -> BuildResult<Word> {
    blk.once(b, ("q6k scale", h), |b| {
        let t_u32 = b.t_u32();
        // Byte 8n + 2t + h of the scales (from 192): in the word at 8n + 4 (t / 2), at bit
        // 16 (t % 2) + 8h.
        let at = blk.once(b, ("q6k scales at", 0), |b| {
            let at = b.mul_u(n, 8)?;
            let pair = b.div_u(quarter, 2)?;
            let step = b.mul_u(pair, 4)?;
            b.b.i_add(t_u32, None, at, step).map(|at| blk.on_words(at))
        })?;
        let within = blk.once(b, ("q6k scale shift", h), |b| {
            let odd = b.mod_u(quarter, 2)?;
            let shift = b.mul_u(odd, 16)?;
            b.add_u(shift, 8 * h)
        })?;
        let sc = byte_of_word(b, blk, (Some(at), 48), within)?;
        let sc = signed_byte(b, sc)?;
        let d = half_at(b, blk, 208)?;
        let sc = s2f(b, sc)?;
        fmul(b, d, sc)
    })
}

/// The Q2_K/Q3_K `qs` field of unit `s`: its offset in the block, `32 (s / 4)` (the field's
/// start and l come on top), and the shift of its two bits, `2 (s % 4)`; once per unit.
fn two_bit_field(b: &mut ModuleBuilder, blk: &Block, s: Word) -> BuildResult<(Word, Word)> {
    let at = blk.once(b, ("2-bit at", 0), |b| {
        let half = b.div_u(s, 4)?;
        b.mul_u(half, 32).map(|at| blk.on_vectors(at))
    })?;
    let shift = blk.once(b, ("2-bit shift", 0), |b| {
        let shift = b.mod_u(s, 4)?;
        b.mul_u(shift, 2)
    })?;
    Ok((at, shift))
}

/// An FP4 (E2M1) code doubled, as ggml's `kvalues_mxfp4` holds it, plus 12 (so 0..=24, for
/// [`code_f32`]): magnitudes 0, 1, 2, 3, 4, 6, 8, 12 (`c` for c < 4, else
/// `(2 + c % 2) << (c / 2 - 1)`), negative with bit 3.
fn fp4(b: &mut ModuleBuilder, code: Word) -> BuildResult<Word> {
    let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
    let (c0, c4, c7, c8) = (b.c_u32(0), b.c_u32(4), b.c_u32(7), b.c_u32(8));
    let c = b.b.bitwise_and(t_u32, None, code, c7)?;
    let small = b.b.u_less_than(t_bool, None, c, c4)?;
    let odd = b.mod_u(c, 2)?;
    let base = b.add_u(odd, 2)?;
    let e = b.div_u(c, 2)?;
    let e = b.add_u(e, u32::MAX)?;
    let e = b.b.select(t_u32, None, small, c0, e)?;
    let big = b.b.shift_left_logical(t_u32, None, base, e)?;
    let mag = b.b.select(t_u32, None, small, c, big)?;
    let negative = b.b.u_greater_than_equal(t_bool, None, code, c8)?;
    let c12 = b.c_u32(12);
    let below = b.b.i_sub(t_u32, None, c12, mag)?;
    let above = b.b.i_add(t_u32, None, c12, mag)?;
    b.b.select(t_u32, None, negative, below, above)
}

/// Half the E8M0 scale `2^(e - 127)` as f32 (ggml's `GGML_E8M0_TO_FP32_HALF`): the bits
/// `(e - 1) << 23`, or `0x200000 << e` (subnormal) for e < 2.
fn e8m0_half(b: &mut ModuleBuilder, e: Word) -> BuildResult<Word> {
    let (t_u32, t_bool, t_f32) = (b.t_u32(), b.t_bool(), b.t_f32());
    let (c2, c23, least) = (b.c_u32(2), b.c_u32(23), b.c_u32(0x0020_0000));
    let tiny = b.b.u_less_than(t_bool, None, e, c2)?;
    let sub = b.b.shift_left_logical(t_u32, None, least, e)?;
    let em1 = b.add_u(e, u32::MAX)?;
    let normal = b.b.shift_left_logical(t_u32, None, em1, c23)?;
    let bits = b.b.select(t_u32, None, tiny, sub, normal)?;
    b.b.bitcast(t_f32, None, bits)
}

/// Byte `at + offset` of the block (u32 0..=255; `at` a run-time part, if any).
fn byte_at(b: &mut ModuleBuilder, blk: &Block, at: Option<Word>, offset: u32) -> BuildResult<Word> {
    let (blk, offset) = blk.locate(offset);
    let word = aligned_word(b, blk, at, offset / 4)?;
    let shift = b.c_u32(8 * (offset % 4));
    bits(b, word, shift, 0xff)
}

/// The byte at bit `within` (a run-time multiple of 8) of aligned word `k` after `at`: a
/// byte whose place in its word depends on the unit, taken from the word with one shift.
fn byte_of_word(b: &mut ModuleBuilder, blk: &Block, (at, k): (Option<Word>, u32), within: Word) -> BuildResult<Word> {
    let word = word_at(b, blk, at, 4 * k)?;
    bits(b, word, within, 0xff)
}

/// Bits `shift..` of byte `at + offset`, masked to `mask` (`shift` a run-time amount the same
/// for every value of the unit; the field must lie inside the byte): the aligned word is
/// shifted once per unit, each value then takes its byte at a literal shift.
fn field(
    b: &mut ModuleBuilder,
    blk: &Block,
    (at, offset): (Option<Word>, u32),
    shift: Word,
    mask: u32,
) -> BuildResult<Word> {
    let (blk, offset) = blk.locate(offset);
    let k = offset / 4;
    let key = (at, k, shift);
    let cached = blk.shifted.borrow().get(&key).copied();
    let word = match cached {
        Some(w) => w,
        None => {
            let w = aligned_word(b, blk, at, k)?;
            let t_u32 = b.t_u32();
            let w = b.b.shift_right_logical(t_u32, None, w, shift)?;
            blk.shifted.borrow_mut().insert(key, w);
            w
        }
    };
    let within = b.c_u32(8 * (offset % 4));
    bits(b, word, within, mask)
}

/// The little-endian f16 at byte `offset` of the block (always even in every format, and every
/// block size is even but MXFP4's, which holds none), as f32.
fn half_at(b: &mut ModuleBuilder, blk: &Block, offset: u32) -> BuildResult<Word> {
    blk.once(b, ("half", offset), |b| unpacked_half(b, blk, offset))
}

fn unpacked_half(b: &mut ModuleBuilder, blk: &Block, offset: u32) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let t_vec2 = b.b.type_vector(t_f32, 2);
    let (blk, offset) = blk.locate(offset);
    let word = aligned_word(b, blk, None, offset / 4)?;
    let shift = b.c_u32(8 * (offset % 4));
    let h = bits(b, word, shift, 0xffff)?;
    let glsl = b.glsl();
    let pair =
        b.b.ext_inst(t_vec2, None, glsl, GLSL_UNPACK_HALF_2X16, [Operand::IdRef(h)])?;
    b.b.composite_extract(t_f32, None, pair, [0])
}

/// Bytes `byte..byte + 4` after the block's first byte plus `at` (`byte` a literal, where a
/// field starts: the field's bytes lie in one part of an interleaved block), as one word,
/// wherever the device holds them ([`aligned_word`] of the part they lie in).
fn word_at(b: &mut ModuleBuilder, blk: &Block, at: Option<Word>, byte: u32) -> BuildResult<Word> {
    let (blk, byte) = blk.locate(byte);
    // Bytes that need not start a word come after a run-time part that puts them at one.
    let at = match (at, byte % 4) {
        (at, 0) => at,
        (None, r) => Some(b.c_u32(r)),
        (Some(at), r) => Some(b.add_u(at, r)?),
    };
    aligned_word(b, blk, at, byte / 4)
}

/// Bytes `4k..4k + 4` after the block's first byte plus `at` (in the block's own part, where it
/// is interleaved: callers locate it), as one word: the binding's word
/// itself where they begin one, else the two words they straddle, funnelled
/// (`(lo >> sh) | (hi << (31 - sh)) << 1`, well defined for every shift). The binding holds at
/// least 8 bytes past the last block, so `hi` is inside.
fn aligned_word(b: &mut ModuleBuilder, blk: &Block, at: Option<Word>, k: u32) -> BuildResult<Word> {
    if let Some(&w) = blk.aligned_words.borrow().get(&(at, k)) {
        return Ok(w);
    }
    let t_u32 = b.t_u32();
    if let Some(vectors) = blk.vectors_from(at) {
        let v = vector_after(b, blk, (vectors, at), k / 4)?;
        let w = b.b.composite_extract(t_u32, None, v, [k % 4])?;
        blk.aligned_words.borrow_mut().insert((at, k), w);
        return Ok(w);
    }
    let Start { first, funnel } = start(b, blk, at)?;
    let load = |b: &mut ModuleBuilder, j: u32| {
        let i = b.add_u(first, k + j)?;
        load_word(b, blk, i)
    };
    let w = match funnel {
        None => load(b, 0)?,
        Some((right, left)) => {
            let pair = [load(b, 0)?, load(b, 1)?];
            let lo = b.b.shift_right_logical(t_u32, None, pair[0], right)?;
            let hi = b.b.shift_left_logical(t_u32, None, pair[1], left)?;
            let c1 = b.c_u32(1);
            let hi = b.b.shift_left_logical(t_u32, None, hi, c1)?;
            b.b.bitwise_or(t_u32, None, lo, hi)?
        }
    };
    blk.aligned_words.borrow_mut().insert((at, k), w);
    Ok(w)
}

/// Word `i` of the block's words (the binding's, or the workgroup array's it was staged into).
fn load_word(b: &mut ModuleBuilder, blk: &Block, i: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    if blk.shared {
        let p_u32 = b.ptr(StorageClass::Workgroup, t_u32);
        let p = b.b.access_chain(p_u32, None, blk.words, [i])?;
        b.b.load(t_u32, None, p, Some(MemoryAccess::NON_PRIVATE_POINTER), [])
    } else {
        let p_u32 = b.ptr(StorageClass::StorageBuffer, t_u32);
        let c0 = b.c_u32(0);
        let p = b.b.access_chain(p_u32, None, blk.words, [c0, i])?;
        b.b.load(t_u32, None, p, None, [])
    }
}

/// The 16-byte vector `j` after the block's first byte plus `at` (which starts a vector of
/// `vectors`), loaded once.
fn vector_after(b: &mut ModuleBuilder, blk: &Block, (vectors, at): (Word, Option<Word>), j: u32) -> BuildResult<Word> {
    if let Some(&v) = blk.loaded_vectors.borrow().get(&(at, j)) {
        return Ok(v);
    }
    let first = start(b, blk, at)?.first;
    let first = b.div_u(first, 4)?;
    let i = b.add_u(first, j)?;
    let t_uvec4 = b.t_uvec(4);
    let p = b.ptr(StorageClass::StorageBuffer, t_uvec4);
    let c0 = b.c_u32(0);
    let p = b.b.access_chain(p, None, vectors, [c0, i])?;
    let v = b.b.load(t_uvec4, None, p, None, [])?;
    blk.loaded_vectors.borrow_mut().insert((at, j), v);
    Ok(v)
}

/// Where the bytes after the block's first byte plus `at` start, once per run-time part: the
/// funnel's shifts only where they need not begin a word ([`Block::starts_on_word`]).
fn start(b: &mut ModuleBuilder, blk: &Block, at: Option<Word>) -> BuildResult<Start> {
    if let Some(&s) = blk.starts.borrow().get(&at) {
        return Ok(s);
    }
    let t_u32 = b.t_u32();
    let addr = match at {
        Some(at) => b.b.i_add(t_u32, None, blk.base, at)?,
        None => blk.base,
    };
    let first = b.div_u(addr, 4)?;
    let funnel = if blk.starts_on_word(at) {
        None
    } else {
        let lane = b.mod_u(addr, 4)?;
        let right = b.mul_u(lane, 8)?;
        let c31 = b.c_u32(31);
        Some((right, b.b.i_sub(t_u32, None, c31, right)?))
    };
    let s = Start { first, funnel };
    blk.starts.borrow_mut().insert(at, s);
    Ok(s)
}

/// `(x >> shift) & mask`.
fn bits(b: &mut ModuleBuilder, x: Word, shift: Word, mask: u32) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let s = b.b.shift_right_logical(t_u32, None, x, shift)?;
    let m = b.c_u32(mask);
    b.b.bitwise_and(t_u32, None, s, m)
}

/// A byte (0..=255) as the i8 it holds, sign-extended (i32 bits).
fn signed_byte(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let t_u32 = b.t_u32();
    let c24 = b.c_u32(24);
    let up = b.b.shift_left_logical(t_u32, None, x, c24)?;
    b.b.shift_right_arithmetic(t_u32, None, up, c24)
}

/// `code - bias` as f32, exactly, for a code below 2^23: the code's bits under the exponent of
/// 2^23 make the float `2^23 + code`, and subtracting `2^23 + bias` leaves the difference exactly
/// (both are integers of one binade). Two full-rate operations where an integer conversion runs
/// at a quarter of the rate on NVIDIA's SMs, once per value: the decode kernel's largest cost.
fn code_f32(b: &mut ModuleBuilder, code: Word, bias: u32) -> BuildResult<Word> {
    let (t_u32, t_f32) = (b.t_u32(), b.t_f32());
    let magic = b.c_u32(0x4b00_0000);
    let bits = b.b.bitwise_or(t_u32, None, code, magic)?;
    let f = b.b.bitcast(t_f32, None, bits)?;
    let offset = b.c_bits(t_f32, (8_388_608.0f32 + bias as f32).to_bits());
    fsub(b, f, offset)
}

fn s2f(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    b.b.convert_s_to_f(t_f32, None, x)
}

fn u2f(b: &mut ModuleBuilder, x: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    b.b.convert_u_to_f(t_f32, None, x)
}

/// `x * y`, rounded on its own.
fn fmul(b: &mut ModuleBuilder, x: Word, y: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let r = b.b.f_mul(t_f32, None, x, y)?;
    b.b.decorate(r, Decoration::NoContraction, []);
    Ok(r)
}

/// `x + y`, rounded on its own.
fn fadd(b: &mut ModuleBuilder, x: Word, y: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let r = b.b.f_add(t_f32, None, x, y)?;
    b.b.decorate(r, Decoration::NoContraction, []);
    Ok(r)
}

/// `x - y`, rounded on its own.
fn fsub(b: &mut ModuleBuilder, x: Word, y: Word) -> BuildResult<Word> {
    let t_f32 = b.t_f32();
    let r = b.b.f_sub(t_f32, None, x, y)?;
    b.b.decorate(r, Decoration::NoContraction, []);
    Ok(r)
}
