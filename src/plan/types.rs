//! Element types -> kernel path: which cooperative-matrix component type serves a GEMM's A and B,
//! and how each operand is converted on its way there. Pure.

use crate::config::ComponentType::{self, *};
use crate::error::{Error, Result};
use crate::kernel::Load;
use serde::Serialize;

/// How a GEMM with f32 operands computes (see [`GemmOptions::compute`](crate::GemmOptions::compute)).
/// Only f32 operands are affected: 16-bit and integer operands always go to the matrix units as
/// they are.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComputeMode {
    /// f32-level accuracy on the matrix units (the default): each f32 operand scaled by a power of
    /// two and split into two f16 parts (`hi + lo`, 22 significand bits), three f16 products per
    /// pair, f32 accumulation. On devices without an f16 -> f32 config, and for results other
    /// than f32, the `Exact` kernel. Non-finite inputs give NaN where they meet.
    #[default]
    Accurate,
    /// f32 operands rounded to f16 as they are loaded, products accumulated in f32: the speed of
    /// the f16 path. Each operand element carries a relative error of at most 2^-11; elements
    /// beyond f16's range (|x| > 65504) become infinite and those below 2^-14 lose precision.
    FastF16,
    /// Like `FastF16` with bf16: f32's whole range, relative error per element at most 2^-8.
    FastBf16,
    /// A plain f32 kernel without the matrix units: f32 multiply-adds in K order per element,
    /// error within f32 GEMM's usual `K u |a||b|` bound (u = 2^-24). f32 results only.
    Exact,
}

impl ComputeMode {
    /// The CLI name (`accurate`, `fast`, `fast-bf16`, `exact`).
    pub fn name(self) -> &'static str {
        match self {
            ComputeMode::Accurate => "accurate",
            ComputeMode::FastF16 => "fast",
            ComputeMode::FastBf16 => "fast-bf16",
            ComputeMode::Exact => "exact",
        }
    }

    /// Parses [`ComputeMode::name`] (`fast-f16` too).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "accurate" => Some(ComputeMode::Accurate),
            "fast" | "fast-f16" => Some(ComputeMode::FastF16),
            "fast-bf16" => Some(ComputeMode::FastBf16),
            "exact" => Some(ComputeMode::Exact),
            _ => None,
        }
    }
}

/// Where a GEMM's A and B go: a cooperative-matrix component type and each operand's load.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Route {
    /// The config's component type.
    pub component: ComponentType,
    /// How A and B are loaded.
    pub loads: [Load; 2],
}

/// The route for A and B of these types under `mode`, or a typed error naming what is supported.
/// Same types go as they are. A 16-bit float paired with f32 runs in the 16-bit type, the f32
/// operand rounded as it is loaded (as ggml does). Two f32 operands follow `mode`.
pub fn route(a: ComponentType, b: ComponentType, mode: ComputeMode) -> Result<Route> {
    let native = |component| Route {
        component,
        loads: [Load::Native; 2],
    };
    let half = |t: ComponentType| matches!(t, F16 | Bf16);
    match (a, b) {
        (F32, F32) => match mode {
            ComputeMode::FastF16 => Ok(Route {
                component: F16,
                loads: [Load::Round; 2],
            }),
            ComputeMode::FastBf16 => Ok(Route {
                component: Bf16,
                loads: [Load::Round; 2],
            }),
            // On an f16 -> f32 config; the caller falls back to `Simt` where there is none.
            ComputeMode::Accurate => Ok(Route {
                component: F16,
                loads: [Load::Split; 2],
            }),
            ComputeMode::Exact => Ok(Route {
                component: F32,
                loads: [Load::Simt; 2],
            }),
        },
        (F32, t) if half(t) => Ok(Route {
            component: t,
            loads: [Load::Round, Load::Native],
        }),
        (t, F32) if half(t) => Ok(Route {
            component: t,
            loads: [Load::Native, Load::Round],
        }),
        (a, b) if a == b => Ok(native(a)),
        (a, b) => Err(Error::Unsupported(format!(
            "A of {a} with B of {b}: A and B take the same type, or one of f16/bf16 with f32"
        ))),
    }
}

/// What f32 x f32 -> f32 runs on a device with these configs, in words (for device reports):
/// the accurate split needs an f16 -> f32 config, the fast modes an f16 or bf16 one; the exact
/// kernel runs everywhere.
pub fn f32_paths(configs: &[crate::config::GPUSubgroupMatrixConfig]) -> String {
    let has = |a: ComponentType| configs.iter().any(|c| c.component_type == a && c.result_type == F32);
    let mut out = vec![if has(F16) {
        "accurate (default): f16 split on the matrix units".to_string()
    } else {
        "accurate (default): the exact kernel (no f16 -> f32 config)".to_string()
    }];
    if has(F16) {
        out.push("fast: rounded to f16".into());
    }
    if has(Bf16) {
        out.push("fast-bf16: rounded to bf16".into());
    }
    out.push("exact: f32 without matrix units".into());
    out.join("; ")
}

/// The element types (A, B, C) the API takes, apart from f32 x f32 ([`f32_paths`]): 16-bit
/// floats into f32 or themselves, each beside an f32 operand, and 8-bit integers.
pub const TYPE_PAIRS: [[ComponentType; 3]; 8] = [
    [F16, F16, F32],
    [F16, F16, F16],
    [Bf16, Bf16, F32],
    [Bf16, Bf16, Bf16],
    [F16, F32, F32],
    [Bf16, F32, F32],
    [I8, I8, I32],
    [U8, U8, U32],
];

/// Which path each of [`TYPE_PAIRS`] takes on a device with these configs, in words (for device
/// reports), as the planner routes it: the matrix units where a config of the pair's product
/// type and C's type exists (for a 16-bit float C, else one into f32, its sums rounded by the
/// epilogue), else the kernels without them (products in f32 or in 32-bit integers); a 16-bit
/// float C there needs `sixteen_bit` (`shaderFloat16` and 16-bit storage).
pub fn type_paths(configs: &[crate::config::GPUSubgroupMatrixConfig], sixteen_bit: bool) -> Vec<(String, String)> {
    TYPE_PAIRS
        .iter()
        .map(|&[a, b, c]| {
            let name = if a == b { format!("{a} -> {c}") } else { format!("{a} x {b} -> {c}") };
            let component = if a == F32 { b } else { a };
            let config = |result| {
                configs
                    .iter()
                    .find(|cfg| cfg.component_type == component && cfg.result_type == result)
            };
            let path = if let Some(cfg) = config(c) {
                format!("matrix units ({cfg})")
            } else if let (Some(cfg), true) = (config(F32), matches!(c, F16 | Bf16)) {
                format!("matrix units ({cfg}, f32 sums rounded to {c})")
            } else if c.size_bytes() == 2 && !sixteen_bit {
                format!("none: no {component} -> {c} config, and 16-bit results without matrix units need shaderFloat16 and 16-bit storage")
            } else {
                let product = if matches!(component, I8 | U8) { c } else { F32 };
                format!("without matrix units ({product} products; no {component} -> {c} config)")
            };
            (name, path)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_types_go_native_and_f32_pairs_round_to_the_16_bit_side() {
        let mode = ComputeMode::default();
        assert_eq!(
            route(F16, F16, mode).unwrap(),
            Route {
                component: F16,
                loads: [Load::Native; 2]
            }
        );
        assert_eq!(route(I8, I8, mode).unwrap().component, I8);
        assert_eq!(
            route(F16, F32, mode).unwrap(),
            Route {
                component: F16,
                loads: [Load::Native, Load::Round]
            }
        );
        assert_eq!(
            route(F32, Bf16, mode).unwrap(),
            Route {
                component: Bf16,
                loads: [Load::Round, Load::Native]
            }
        );
        assert_eq!(route(F32, F32, ComputeMode::FastBf16).unwrap().loads, [Load::Round; 2]);
        assert_eq!(route(F32, F32, ComputeMode::FastF16).unwrap().component, F16);
        assert_eq!(route(F32, F32, ComputeMode::Exact).unwrap().loads, [Load::Simt; 2]);
        assert_eq!(route(F32, F32, ComputeMode::default()).unwrap().loads, [Load::Split; 2]);
    }

    #[test]
    fn type_paths_take_the_matrix_units_where_a_config_fits_and_say_why_not_elsewhere() {
        use crate::tiling::test_support::cfg;
        let lavapipe = [cfg(8, 8, 8, F16, F16), cfg(8, 8, 8, F16, F32), cfg(8, 8, 8, I8, I32)];
        let paths = type_paths(&lavapipe, true);
        let path = |name: &str| &paths.iter().find(|(n, _)| n == name).unwrap().1;
        assert!(
            path("f16 -> f32").starts_with("matrix units (8x8x8 f16->f32"),
            "{paths:?}"
        );
        assert!(path("f16 x f32 -> f32").starts_with("matrix units"), "{paths:?}");
        assert!(path("bf16 -> f32").starts_with("without matrix units (f32 products; no bf16 -> f32"));
        assert!(path("u8 -> u32").starts_with("without matrix units (u32 products"));
        assert!(path("i8 -> i32").starts_with("matrix units"));
        let f16_f32_only = type_paths(&[cfg(8, 8, 8, F16, F32)], true);
        assert_eq!(
            f16_f32_only[1],
            (
                "f16 -> f16".into(),
                "matrix units (8x8x8 f16->f32, f32 sums rounded to f16)".into()
            )
        );
        let none = type_paths(&[], false);
        assert_eq!(none.len(), TYPE_PAIRS.len());
        for (name, path) in &none {
            let sixteen = name.ends_with("-> f16") || name.ends_with("-> bf16");
            assert_eq!(path.starts_with("none: "), sixteen, "{name}: {path}");
            assert_eq!(path.starts_with("without matrix units"), !sixteen, "{name}: {path}");
        }
    }

    #[test]
    fn unsupported_pairs_are_typed_errors_that_say_what_works() {
        for (a, b) in [(F16, Bf16), (I8, U8), (F32, I8)] {
            let e = route(a, b, ComputeMode::default()).unwrap_err();
            assert!(matches!(e, Error::Unsupported(ref m) if m.contains("same type")), "{e}");
        }
    }

    #[test]
    fn device_reports_name_the_f32_path() {
        use crate::tiling::test_support::cfg;
        let lavapipe = [cfg(8, 8, 8, F16, F16), cfg(8, 8, 8, F16, F32), cfg(8, 8, 8, I8, I32)];
        let p = f32_paths(&lavapipe);
        assert!(
            p.starts_with("accurate (default): f16 split") && p.contains("fast: ") && !p.contains("bf16"),
            "{p}"
        );
        let ints_only = [cfg(16, 16, 32, I8, I32)];
        let p = f32_paths(&ints_only);
        assert!(
            p.contains("the exact kernel (no f16 -> f32 config)") && !p.contains("fast"),
            "{p}"
        );
    }

    #[test]
    fn mode_names_round_trip() {
        for m in [
            ComputeMode::Accurate,
            ComputeMode::FastF16,
            ComputeMode::FastBf16,
            ComputeMode::Exact,
        ] {
            assert_eq!(ComputeMode::parse(m.name()), Some(m));
        }
        assert_eq!(ComputeMode::parse("fp32"), None);
    }
}
