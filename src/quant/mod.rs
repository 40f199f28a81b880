//! Quantized weights in ggml's block formats, as GGUF files store them (issue 47): the formats'
//! sizes, and a CPU reference to turn blocks into f32 ([`dequantize`]) and f32 into blocks
//! ([`quantize`]). The layouts and the dequantization arithmetic follow ggml's definitions
//! (`ggml-common.h`'s block structs, `ggml-quants.c`'s `dequantize_row_*`), written here from
//! them: every value is computed with the same f32 operations in the same order, so it equals
//! ggml's reference bit for bit. On the GPU, weights in these formats are
//! [`QuantMatrix`](crate::QuantMatrix)es ([`Context::upload_quantized`](crate::Context::upload_quantized)).

mod dequantize;
mod device;
mod quantize;

pub use dequantize::dequantize;
pub(crate) use dequantize::IQ4_VALUES;
pub use device::Interleave;
pub use quantize::quantize;

use crate::error::{Error, Result};
use std::fmt;

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
    /// 32 values: an f16 scale and 32 4-bit indices into ggml's non-linear table
    /// (`kvalues_iq4nl`, -127..=113) (18 bytes).
    Iq4Nl,
    /// 256 values: 8 sub-blocks of 32 with 6-bit scales, 4-bit indices into IQ4_NL's table
    /// (136 bytes).
    Iq4Xs,
    /// 32 values: an 8-bit power-of-two scale (E8M0) and 32 FP4 (E2M1) values (17 bytes).
    Mxfp4,
    /// 64 values: four sub-blocks of 16, each with an unsigned E4M3 scale, 64 FP4 (E2M1)
    /// values (36 bytes).
    Nvfp4,
}

impl QuantType {
    /// Every format, in ggml's order of its type numbers.
    pub const ALL: [QuantType; 14] = [
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
        QuantType::Iq4Nl,
        QuantType::Iq4Xs,
        QuantType::Mxfp4,
        QuantType::Nvfp4,
    ];

    /// Values per block.
    pub fn block_values(self) -> usize {
        match self {
            QuantType::Q2K | QuantType::Q3K | QuantType::Q4K | QuantType::Q5K | QuantType::Q6K | QuantType::Iq4Xs => {
                256
            }
            QuantType::Nvfp4 => 64,
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
            QuantType::Iq4Nl => 18,
            QuantType::Iq4Xs => 136,
            QuantType::Mxfp4 => 17,
            QuantType::Nvfp4 => 36,
        }
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
            QuantType::Iq4Nl => "iq4_nl",
            QuantType::Iq4Xs => "iq4_xs",
            QuantType::Mxfp4 => "mxfp4",
            QuantType::Nvfp4 => "nvfp4",
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
