//! Quantized weights in ggml's block formats, as GGUF files store them (issue 47): the formats'
//! sizes, and a CPU reference to turn blocks into f32 ([`dequantize`]) and f32 into blocks
//! ([`quantize`]). The layouts and the dequantization arithmetic follow ggml's definitions
//! (`ggml-common.h`'s block structs, `ggml-quants.c`'s `dequantize_row_*`), written here from
//! them: every value is computed with the same f32 operations in the same order, so it equals
//! ggml's reference bit for bit. On the GPU, weights in these formats are
//! [`QuantMatrix`](crate::QuantMatrix)es ([`Context::upload_quantized`](crate::Context::upload_quantized)).

mod dequantize;
mod quantize;

pub use dequantize::dequantize;
pub use quantize::quantize;

use crate::error::{Error, Result};
use std::fmt;

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

    /// `blocks` (a whole number of groups of `q`'s device blocks, each as
    /// [`QuantType::device_block_bytes`] lays it out) into `out`, interleaved.
    pub fn scatter(self, q: QuantType, blocks: &[u8], out: &mut [u8]) {
        let (size, head) = (q.device_block_bytes(), self.head);
        let group = self.group_bytes(q);
        for (from, to) in blocks.chunks_exact(group).zip(out.chunks_exact_mut(group)) {
            let (heads, tails) = to.split_at_mut(self.blocks * head);
            let tails = tails.chunks_exact_mut(size - head);
            for ((block, h), t) in from.chunks_exact(size).zip(heads.chunks_exact_mut(head)).zip(tails) {
                h.copy_from_slice(&block[..head]);
                t.copy_from_slice(&block[head..]);
            }
        }
    }
}

/// A ggml block format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum QuantType {
    /// 32 values: an f16 scale and 32 signed 8-bit integers (34 bytes).
    Q8_0,
    /// 32 values: an f16 scale and 32 4-bit integers offset by 8 (18 bytes).
    Q4_0,
    /// 32 values: f16 scale and minimum, 32 4-bit integers (20 bytes).
    Q4_1,
    /// 32 values: an f16 scale, 32 5-bit integers offset by 16 (22 bytes).
    Q5_0,
    /// 32 values: f16 scale and minimum, 32 5-bit integers (24 bytes).
    Q5_1,
    /// 256 values: 16 sub-blocks of 16 with 4-bit scales and minima, 2-bit integers (84 bytes).
    Q2K,
    /// 256 values: 16 sub-blocks of 16 with 6-bit scales, 3-bit integers (110 bytes).
    Q3K,
    /// 256 values: 8 sub-blocks of 32 with 6-bit scales and minima, 4-bit integers (144 bytes).
    Q4K,
    /// 256 values: 8 sub-blocks of 32 with 6-bit scales and minima, 5-bit integers (176 bytes).
    Q5K,
    /// 256 values: 16 sub-blocks of 16 with 8-bit scales, 6-bit integers (210 bytes).
    Q6K,
    /// 32 values: an 8-bit power-of-two scale (E8M0) and 32 FP4 (E2M1) values (17 bytes).
    Mxfp4,
}

impl QuantType {
    /// Every format, in ggml's order of its type numbers.
    pub const ALL: [QuantType; 11] = [
        QuantType::Q4_0,
        QuantType::Q4_1,
        QuantType::Q5_0,
        QuantType::Q5_1,
        QuantType::Q8_0,
        QuantType::Q2K,
        QuantType::Q3K,
        QuantType::Q4K,
        QuantType::Q5K,
        QuantType::Q6K,
        QuantType::Mxfp4,
    ];

    /// Values per block.
    pub fn block_values(self) -> usize {
        match self {
            QuantType::Q2K | QuantType::Q3K | QuantType::Q4K | QuantType::Q5K | QuantType::Q6K => 256,
            _ => 32,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            QuantType::Q8_0 => 34,
            QuantType::Q4_0 => 18,
            QuantType::Q4_1 => 20,
            QuantType::Q5_0 => 22,
            QuantType::Q5_1 => 24,
            QuantType::Q2K => 84,
            QuantType::Q3K => 110,
            QuantType::Q4K => 144,
            QuantType::Q5K => 176,
            QuantType::Q6K => 210,
            QuantType::Mxfp4 => 17,
        }
    }

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
    /// us, with 32-bit loads 77.4) for 0-3% at one token.
    pub fn interleave(self) -> Option<Interleave> {
        let (blocks, head) = match self {
            QuantType::Q8_0 | QuantType::Q4_0 => (8, 2),
            QuantType::Q4_1 => (4, 4),
            QuantType::Q5_0 => (8, 6),
            QuantType::Q5_1 => (2, 8),
            QuantType::Mxfp4 => (16, 1),
            QuantType::Q2K => (4, 80),
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

    /// The device bytes of a row of `values` values ([`QuantType::device_block_bytes`] each
    /// block), or [`QuantType::bytes_for`]'s error.
    pub fn device_bytes_for(self, values: usize) -> Result<usize> {
        self.bytes_for(values)?;
        Ok(values / self.block_values() * self.device_block_bytes())
    }

    /// ggml's name (`q4_K`, `mxfp4`, ...).
    pub fn name(self) -> &'static str {
        match self {
            QuantType::Q8_0 => "q8_0",
            QuantType::Q4_0 => "q4_0",
            QuantType::Q4_1 => "q4_1",
            QuantType::Q5_0 => "q5_0",
            QuantType::Q5_1 => "q5_1",
            QuantType::Q2K => "q2_K",
            QuantType::Q3K => "q3_K",
            QuantType::Q4K => "q4_K",
            QuantType::Q5K => "q5_K",
            QuantType::Q6K => "q6_K",
            QuantType::Mxfp4 => "mxfp4",
        }
    }

    /// The format named `name` (ggml's names, any case), or a typed error listing them.
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
                Error::Unsupported(format!(
                    "quantized type {name:?}: the block formats are {}",
                    names.join(", ")
                ))
            })
    }

    /// The bytes of `values` values in this format, or a typed error where `values` is not a
    /// whole number of blocks.
    pub fn bytes_for(self, values: usize) -> Result<usize> {
        if values % self.block_values() != 0 {
            return Err(Error::InvalidOperand(format!(
                "{values} values of {self}: its blocks hold {} each, so a row (K) must be a multiple of {}",
                self.block_values(),
                self.block_values()
            )));
        }
        Ok(values / self.block_values() * self.block_bytes())
    }
}

impl fmt::Display for QuantType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Checks that `bytes` hold exactly the blocks of `values` values of `t`.
fn check_lengths(t: QuantType, bytes: usize, values: usize) -> Result<()> {
    let want = t.bytes_for(values)?;
    if bytes != want {
        return Err(Error::InvalidOperand(format!(
            "{values} values of {t} take {want} bytes ({} blocks of {}), not {bytes}",
            values / t.block_values(),
            t.block_bytes()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
