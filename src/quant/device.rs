//! How the device holds a format's blocks: each padded to start on a word, the K-quant formats'
//! codes and scales regrouped by the 32 values each unit of the kernels takes, and interleaved
//! in groups where the rows allow: the bytes as the kernels read them fastest, the values the
//! file's bit for bit. The kernels' block reader names every field by its offset in the
//! regrouped block and finds it in the interleaved groups.

use super::dequantize::scale_min_k4;
use super::QuantType;
use crate::error::Result;

/// Groups of blocks as the device holds them ([`QuantType::interleave`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Interleave {
    /// Blocks a group.
    pub blocks: usize,
    /// Bytes of each block's head, which come first in the group, block after block; the
    /// rest of each block ([`QuantType::device_block_bytes`] less these) follows them.
    pub head: usize,
}

impl Interleave {
    /// Bytes of a group of `q`'s blocks on the device (a multiple of 16).
    pub fn group_bytes(self, q: QuantType) -> usize {
        self.blocks * q.device_block_bytes()
    }

    /// `blocks` (a whole number of groups of `q`'s blocks as the file holds them, which for
    /// every interleaved format are as large as the device's) into `out`, each block laid out
    /// as the device holds it (Q2_K's codes regrouped by unit), interleaved.
    pub fn scatter(self, q: QuantType, blocks: &[u8], out: &mut [u8]) {
        let (size, head) = (q.device_block_bytes(), self.head);
        let group = self.group_bytes(q);
        let mut device = [0u8; 256];
        let device = &mut device[..size];
        for (from, to) in blocks.chunks_exact(group).zip(out.chunks_exact_mut(group)) {
            let (heads, tails) = to.split_at_mut(self.blocks * head);
            let tails = tails.chunks_exact_mut(size - head);
            for ((block, h), t) in from.chunks_exact(size).zip(heads.chunks_exact_mut(head)).zip(tails) {
                q.device_block(block, device);
                h.copy_from_slice(&device[..head]);
                t.copy_from_slice(&device[head..]);
            }
        }
    }
}

impl QuantType {
    /// Bytes each block takes on the device: its size, or for Q3_K and Q6_K (110 and 210
    /// bytes) two more, so that every block starts on a 4-byte word and the kernels read its
    /// words as they are, without putting each together from two (the one-token decode of a
    /// 22016x4096 Q4_K weight, 144-byte blocks, took 25.6 us read as words and 31.4 through
    /// the funnel on the H200, docs/perf/h200-35-2.txt). The values are the file's, bit for
    /// bit; the padding costs under 2% more memory. The 32-value formats keep their size (two
    /// bytes would be 6-11% of a block).
    pub fn device_block_bytes(self) -> usize {
        match self {
            QuantType::Q3K | QuantType::Q6K => self.block_bytes() + 2,
            _ => self.block_bytes(),
        }
    }

    /// How the device interleaves this format's blocks where a matrix allows it
    /// ([`QuantType::interleaves`]), or none where every block is kept whole. Each group of
    /// [`Interleave::blocks`] consecutive blocks holds its blocks' first [`Interleave::head`]
    /// bytes (their scales; Q2_K's codes too) one after another, then the rest of each: every
    /// block's codes then start on 16 bytes, so decode reads them in 16-byte loads where a
    /// block of 18 or 34 bytes is read word by word, each word put together from two. The
    /// values are the file's, bit for bit; no byte is added.
    ///
    /// Measured on the H200 (docs/perf/h200-41-1.txt, -2), one token of a 22016x4096 weight:
    /// Q8_0 33.2 -> 29.7 us, Q4_0 21.6 -> 20.5, MXFP4 34.9 -> 31.3, Q2_K 20.7 -> 18.2, Q5_0
    /// 24.9 -> 24.6 (14336 rows: 18.2 -> 16.4); Q4_1 and Q5_1 within 1%; eight tokens 1-6%
    /// faster, but Q2_K's 7% slower. Kept whole: Q3_K, Q4_K and Q5_K, whose blocks start on 16
    /// bytes already, and Q6_K, whose eight tokens ran 11% slower interleaved (67.0 -> 74.7
    /// us, with 32-bit loads 77.4) for 0-3% at one token. IQ4_NL and IQ4_XS are interleaved as
    /// the formats of their shapes are (Q4_0's; Q5_1's pairs), not yet measured on a GPU.
    pub fn interleave(self) -> Option<Interleave> {
        let (blocks, head) = match self {
            QuantType::Q8_0 | QuantType::Q4_0 | QuantType::Iq4Nl => (8, 2),
            QuantType::Q4_1 => (4, 4),
            QuantType::Q5_0 => (8, 6),
            QuantType::Q5_1 => (2, 8),
            QuantType::Mxfp4 => (16, 1),
            QuantType::Q2K => (4, 80),
            // 136-byte blocks: two make 17 vectors, each block's nibbles after their heads.
            QuantType::Iq4Xs => (2, 8),
            // 36-byte blocks: four make nine vectors, each block's codes after the four scales
            // (one token 25.1 -> 24.4 us, eight 52.3 -> 51.2; docs/perf/h200-48-1.txt).
            QuantType::Nvfp4 => (4, 4),
            QuantType::Q3K | QuantType::Q4K | QuantType::Q5K | QuantType::Q6K => return None,
        };
        Some(Interleave { blocks, head })
    }

    /// Whether rows of `cols` values are interleaved on the device ([`QuantType::interleave`]):
    /// where each row is a whole number of groups, so no group spans two rows.
    pub fn interleaves(self, cols: usize) -> bool {
        self.interleave()
            .is_some_and(|i| cols % self.block_values() == 0 && (cols / self.block_values()) % i.blocks == 0)
    }

    /// `block`, one block of this format as the file holds it, into `out`
    /// ([`QuantType::device_block_bytes`]) as the device holds it: padded with zeros, and for
    /// the K-quant formats with their codes regrouped by unit ([`regroup_two_bit`],
    /// [`regroup_k_nibbles`], [`regroup_q6_k`]) and Q3_K's, Q4_K's and Q5_K's scales by field
    /// ([`regroup_q3_k_scales`], [`regroup_k_scales`]). Interleaving, where a matrix takes
    /// it, is done on these after ([`Interleave::scatter`]).
    pub(crate) fn device_block(self, block: &[u8], out: &mut [u8]) {
        let n = block.len();
        out[n..].fill(0);
        out[..n].copy_from_slice(block);
        match self {
            QuantType::Q6K => regroup_q6_k(&block[..CODES_Q6K], &mut out[..CODES_Q6K]),
            QuantType::Q2K => regroup_two_bit(self, block, out),
            QuantType::Q3K => {
                regroup_two_bit(self, block, out);
                regroup_q3_k_scales(&block[96..108], &mut out[96..108]);
            }
            QuantType::Q4K | QuantType::Q5K => {
                regroup_k_scales(&block[4..16], &mut out[4..16]);
                let qs = n - 128;
                regroup_k_nibbles(&block[qs..], &mut out[qs..n]);
            }
            _ => {}
        }
    }

    /// The device bytes of a row of `values` values ([`QuantType::device_block_bytes`] each
    /// block), or [`QuantType::bytes_for`]'s error.
    pub fn device_bytes_for(self, values: usize) -> Result<usize> {
        self.bytes_for(values)?;
        Ok(values / self.block_values() * self.device_block_bytes())
    }
}

/// Bytes of a Q6_K block's codes (`ql` and `qh`); its scales and `d` follow them.
const CODES_Q6K: usize = 192;

/// A Q6_K block's codes (`ql[128]`, `qh[64]`) regrouped by unit of 32 values: unit `s` (values
/// `32 s..32 s + 32`) takes bytes `24 s..24 s + 24`, 16 of low nibbles (byte `i` holds value
/// `i`'s, and value `i + 16`'s above it) then 8 of high bit pairs (byte `i` holds those of
/// values `i`, `i + 8`, `i + 16`, `i + 24`, from bit 0 up). In the file a unit's four bits lie
/// in 32 bytes of `ql` shared with another unit and its two in 32 bytes of `qh` shared with
/// three, so decode read 64 bytes to use 24, each at a shift that depends on the unit; here
/// it reads its own 24, each field at a literal shift.
fn regroup_q6_k(file: &[u8], out: &mut [u8]) {
    let (ql, qh) = file.split_at(128);
    for (s, unit) in out.chunks_exact_mut(24).enumerate() {
        let (n, t) = (s / 4, s % 4);
        let code = |j: usize| {
            let low = (ql[64 * n + 32 * (t % 2) + j] >> (4 * (t / 2))) & 0xf;
            let high = (qh[32 * n + j] >> (2 * t)) & 3;
            (low, high)
        };
        let (lows, highs) = unit.split_at_mut(16);
        for (i, byte) in lows.iter_mut().enumerate() {
            *byte = code(i).0 | code(i + 16).0 << 4;
        }
        pack_pairs(|j| code(j).1, highs);
    }
}

/// Two bits of each of 32 values (`pair(j)` for value `j`) in 8 bytes: byte `i` holds those of
/// values `i`, `i + 8`, `i + 16`, `i + 24`, from bit 0 up. Four consecutive values' pairs then
/// lie in one word's four bytes at one shift.
fn pack_pairs(pair: impl Fn(usize) -> u8, out: &mut [u8]) {
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = (0..4).fold(0, |acc, q| acc | pair(i + 8 * q) << (2 * q));
    }
}

/// Q2_K's (`qs` from byte 16) and Q3_K's (from 32, with `hmask` before it) 2-bit codes
/// regrouped by unit: unit `s` (values `32 s..`, in the file bits `2 (s % 4)` of
/// `qs[32 (s / 4)..]`) takes 8 bytes at `8 s` past the field's new start ([`pack_pairs`]):
/// Q2_K's at 16, where they were; Q3_K's at 0, then each unit's 4 bytes of `hmask` bits at
/// `64 + 4 s` (byte `i`'s bit `k` the bit of value `4 k + i`, so four consecutive values' bits
/// lie in one word at one shift); then its scales ([`regroup_q3_k_scales`]).
fn regroup_two_bit(q: QuantType, file: &[u8], out: &mut [u8]) {
    let qs = if q == QuantType::Q3K { 32 } else { 16 };
    let to = if q == QuantType::Q3K { 0 } else { 16 };
    for s in 0..8 {
        let code = |j: usize| (file[qs + 32 * (s / 4) + j] >> (2 * (s % 4))) & 3;
        pack_pairs(code, &mut out[to + 8 * s..to + 8 * s + 8]);
        if q == QuantType::Q3K {
            for (i, byte) in out[64 + 4 * s..68 + 4 * s].iter_mut().enumerate() {
                *byte = (0..8).fold(0, |acc, k| acc | ((file[4 * k + i] >> s) & 1) << k);
            }
        }
    }
}

/// Q3_K's sixteen 6-bit scales (`scales[12]` from byte 96, ggml's `kmask` packing) regrouped as
/// their low four bits, scale `i`'s at bit `4 (i % 8)` of the word at `96 + 4 (i / 8)`, then
/// their top two, scale `i`'s at bit `2 i` of the word at 104: two shifts and masks at run-time
/// positions where the file's packing takes a different byte for scales 0..8 and 8..16.
fn regroup_q3_k_scales(scales: &[u8], out: &mut [u8]) {
    let mut words = [0u32; 3];
    for i in 0..16 {
        let low = u32::from(if i < 8 { scales[i] & 0xf } else { scales[i - 8] >> 4 });
        let top = u32::from((scales[8 + i % 4] >> (2 * (i / 4))) & 3);
        words[i / 8] |= low << (4 * (i % 8));
        words[2] |= top << (2 * i);
    }
    for (to, w) in out.chunks_exact_mut(4).zip(words) {
        to.copy_from_slice(&w.to_le_bytes());
    }
}

/// Q4_K's and Q5_K's `qs[128]` (per 64 values, 32 bytes of low nibbles then high ones) regrouped
/// by unit of 32 values: unit `s` takes bytes `16 s..16 s + 16`, byte `i` holding value `i`'s
/// nibble and value `i + 16`'s above it, as a 32-value block's. In the file a unit's nibbles
/// share 32 bytes with the next unit's, at a shift that depends on the unit.
fn regroup_k_nibbles(qs: &[u8], out: &mut [u8]) {
    for (s, unit) in out.chunks_exact_mut(16).enumerate() {
        let nibble = |j: usize| (qs[32 * (s / 2) + j] >> (4 * (s % 2))) & 0xf;
        for (i, byte) in unit.iter_mut().enumerate() {
            *byte = nibble(i) | nibble(i + 16) << 4;
        }
    }
}

/// Q4_K's and Q5_K's `scales[12]` (eight 6-bit scales and minima, `get_scale_min_k4`'s packing)
/// regrouped by field as three little-endian words: the scales' low four bits (unit `j` at bit
/// `4 j`), the minima's, then the top two bits of each (the scale's at `2 j`, the minimum's at
/// `16 + 2 j`). Each is then two shifts and masks at run-time positions, where the file's
/// packing takes a different formula for units 0..4 and 4..8.
fn regroup_k_scales(scales: &[u8], out: &mut [u8]) {
    let mut words = [0u32; 3];
    for j in 0..8 {
        let (scale, min) = scale_min_k4(j, scales);
        let (scale, min) = (u32::from(scale), u32::from(min));
        words[0] |= (scale & 0xf) << (4 * j);
        words[1] |= (min & 0xf) << (4 * j);
        words[2] |= (scale >> 4) << (2 * j) | (min >> 4) << (16 + 2 * j);
    }
    for (to, w) in out.chunks_exact_mut(4).zip(words) {
        to.copy_from_slice(&w.to_le_bytes());
    }
}
