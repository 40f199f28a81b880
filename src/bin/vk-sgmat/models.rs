//! `vk-sgmat bench --model NAME`: the GEMMs of one transformer layer, weights stored `N x K` as
//! `nn.Linear` holds them (layout `nt`, tokens as M), at the token counts inference runs, and
//! a summary per token count: each GEMM's time and weight bytes per second, and the layer's.

use crate::report::BenchRow;
use anyhow::{bail, Result};
use std::fmt::Write as _;

/// One layer's GEMMs: name, N (output features) and K (input features).
#[derive(Debug)]
pub(crate) struct Model {
    pub name: &'static str,
    pub gemms: &'static [(&'static str, usize, usize)],
}

/// The layers `--model` knows.
pub(crate) const MODELS: [Model; 3] = [
    Model {
        name: "llama-7b",
        gemms: &[
            ("qkv", 12288, 4096),
            ("out", 4096, 4096),
            ("gate_up", 22016, 4096),
            ("down", 4096, 11008),
        ],
    },
    Model {
        name: "llama-3-8b",
        // K and V take 1024 features each (grouped-query attention).
        gemms: &[
            ("qkv", 6144, 4096),
            ("out", 4096, 4096),
            ("gate_up", 28672, 4096),
            ("down", 4096, 14336),
        ],
    },
    Model {
        name: "mixtral-expert",
        // One expert of Mixtral 8x7B (each token visits two of eight).
        gemms: &[("gate_up", 28672, 4096), ("down", 4096, 14336)],
    },
];

/// Tokens per GEMM: decode (1, a batch of 8), short prompts, prefill.
pub(crate) const TOKENS: [usize; 6] = [1, 8, 32, 128, 512, 2048];

/// The model named `name`, or an error listing the known ones.
pub(crate) fn model(name: &str) -> Result<&'static Model> {
    match MODELS.iter().find(|m| m.name == name) {
        Some(m) => Ok(m),
        None => bail!(
            "--model {name:?}: known models are {}",
            MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

impl Model {
    /// Every (tokens, N, K) of the sweep, token count by token count.
    pub fn shapes(&self) -> Vec<(usize, usize, usize)> {
        TOKENS
            .iter()
            .flat_map(|&t| self.gemms.iter().map(move |&(_, n, k)| (t, n, k)))
            .collect()
    }

    /// Per type and token count: each GEMM's microseconds and weight TB/s (B's bytes over its
    /// time), and the layer's summed time.
    pub fn summary(&self, rows: &[BenchRow]) -> String {
        let mut out = String::new();
        let mut types: Vec<&str> = Vec::new();
        for r in rows {
            if !types.contains(&r.types.as_str()) {
                types.push(&r.types);
            }
        }
        for t in types {
            for tokens in TOKENS {
                let mut parts = Vec::new();
                let mut total = 0.0;
                for &(name, n, k) in self.gemms {
                    let Some(r) = rows.iter().find(|r| r.types == t && (r.m, r.n, r.k) == (tokens, n, k)) else {
                        continue;
                    };
                    let us = r.median_ms * 1e3;
                    total += us;
                    let tbps = (n * k * weight_bytes(t)) as f64 / (us * 1e-6) / 1e12;
                    parts.push(format!("{name} {us:.1} us {tbps:.2} TB/s"));
                }
                if !parts.is_empty() {
                    let _ = writeln!(
                        out,
                        "model {} {t} tokens {tokens}: {}; layer {total:.1} us",
                        self.name,
                        parts.join(", ")
                    );
                }
            }
        }
        out
    }
}

/// Bytes of B's elements in a bench row's types label (`f16:f32`, `f16,f32:f32`, `i8:i32`).
fn weight_bytes(types: &str) -> usize {
    let inputs = types.split([':', ' ']).next().unwrap_or("");
    match inputs.rsplit(',').next().unwrap_or(inputs) {
        "f32" => 4,
        "i8" | "u8" => 1,
        _ => 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(m: usize, n: usize, k: usize, ms: f64) -> BenchRow {
        BenchRow {
            types: "f16:f32".into(),
            layout: "nt".into(),
            config: String::new(),
            m,
            n,
            k,
            median_ms: ms,
            tflops: 0.0,
            cublas_tflops: None,
            ratio: None,
            peak_tflops: 0.0,
            peak_fraction: 0.0,
            peers: Vec::new(),
            kernel: String::new(),
        }
    }

    #[test]
    fn shapes_and_summary_follow_the_layer() {
        let m = model("llama-7b").unwrap();
        let shapes = m.shapes();
        assert_eq!(shapes.len(), TOKENS.len() * 4);
        assert_eq!(shapes[0], (1, 12288, 4096));
        assert_eq!(shapes[shapes.len() - 1], (2048, 4096, 11008));
        // 22016 x 4096 f16 weights (180 MB) in 45 us: 4.01 TB/s.
        let rows = [row(1, 22016, 4096, 0.045), row(1, 4096, 4096, 0.01)];
        let s = m.summary(&rows);
        assert_eq!(
            (
                weight_bytes("f32:f32 exact"),
                weight_bytes("f16,f32:f32"),
                weight_bytes("i8:i32")
            ),
            (4, 4, 1)
        );
        assert!(s.contains("gate_up 45.0 us 4.01 TB/s"), "{s}");
        assert!(s.contains("layer 55.0 us"), "{s}");
        assert!(model("gpt-9").unwrap_err().to_string().contains("llama-3-8b"));
    }
}
