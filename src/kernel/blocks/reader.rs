//! A block's bytes as the kernels read them ([`Block`]): where a block (or, interleaved, its
//! head and its tail) starts, and each byte, 16-bit field and word of it taken from the binding
//! or from the workgroup array it was staged into, with the fewest loads its alignment allows.
//! What the bytes mean, format by format, is the parent module's.

use super::bits;
use crate::kernel::builder::{BuildResult, ModuleBuilder};
use crate::quant::QuantType;
use rspirv::dr::Operand;
use rspirv::spirv::{MemoryAccess, StorageClass, Word};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

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
/// bytes by their offset in the block as [`QuantType::device_block`] lays it out (the file's
/// block, the K-quant formats' codes regrouped); where the blocks are interleaved
/// ([`QuantType::interleave`]) the block finds them in its head or its tail.
pub(in crate::kernel) struct Block {
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
    pub(in crate::kernel) fn nth(
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
    pub(in crate::kernel) fn nth_staged(
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
    pub(super) fn on_words(&self, at: Word) -> Word {
        self.multiple_of(at, 4)
    }

    /// Notes that the run-time address part `at` is a multiple of 16 bytes (so of 4).
    pub(super) fn on_vectors(&self, at: Word) -> Word {
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
    pub(super) fn once(
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

/// Byte `at + offset` of the block (u32 0..=255; `at` a run-time part, if any).
pub(super) fn byte_at(b: &mut ModuleBuilder, blk: &Block, at: Option<Word>, offset: u32) -> BuildResult<Word> {
    let (blk, offset) = blk.locate(offset);
    let word = aligned_word(b, blk, at, offset / 4)?;
    let shift = b.c_u32(8 * (offset % 4));
    bits(b, word, shift, 0xff)
}

/// The byte at bit `within` (a run-time multiple of 8) of aligned word `k` after `at`: a
/// byte whose place in its word depends on the unit, taken from the word with one shift.
pub(super) fn byte_of_word(
    b: &mut ModuleBuilder,
    blk: &Block,
    (at, k): (Option<Word>, u32),
    within: Word,
) -> BuildResult<Word> {
    let word = word_at(b, blk, at, 4 * k)?;
    bits(b, word, within, 0xff)
}

/// Bits `shift..` of byte `at + offset`, masked to `mask` (`shift` a run-time amount the same
/// for every value of the unit; the field must lie inside the byte): the aligned word is
/// shifted once per unit, each value then takes its byte at a literal shift.
pub(super) fn field(
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
pub(super) fn half_at(b: &mut ModuleBuilder, blk: &Block, offset: u32) -> BuildResult<Word> {
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
pub(super) fn word_at(b: &mut ModuleBuilder, blk: &Block, at: Option<Word>, byte: u32) -> BuildResult<Word> {
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
