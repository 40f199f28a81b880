//! The fused-epilogue options as the commands run them: `--epilogue` parsed into a bias axis
//! and an activation, and the terms a command's GEMMs take.

use crate::types::Types;
use anyhow::{bail, Result};
use vk_sgmat::{Activation, Axis, ComponentType};

/// The parsed terms: bias axis and activation.
pub fn parse(s: &str) -> Result<(Option<Axis>, Activation)> {
    let (mut bias, mut act) = (None, Activation::None);
    for t in s.split(',').map(str::trim) {
        match t {
            "none" | "" => {}
            "bias-row" => bias = Some(Axis::Row),
            "bias-col" => bias = Some(Axis::Col),
            _ => match Activation::ALL.into_iter().find(|a| a.name() == t) {
                Some(a) => act = a,
                None => bail!("--epilogue {t}: use none, bias-row, bias-col, relu, gelu, gelu-erf or silu"),
            },
        }
    }
    Ok((bias, act))
}

/// A batch's fused epilogue (`--epilogue`, `--out`): its bias axis, activation and label.
#[derive(Clone, Debug)]
pub struct Terms {
    pub bias: Option<Axis>,
    pub activation: Activation,
    pub label: String,
}

/// The types a batch (`dequant`: or a grouped GEMM, which also dequantises 8-bit inputs) runs
/// with `--epilogue`/`--out` (C of the `--out` type), and its terms; `types` and `None` where
/// neither flag was given.
pub fn fused_terms(args: &crate::cli::FusedArgs, types: Types, dequant: bool) -> Result<(Types, Option<Terms>)> {
    if args.epilogue.is_none() && args.out.is_none() {
        return Ok((types, None));
    }
    let label = args.epilogue.clone().unwrap_or_else(|| "none".into());
    let (bias, activation) = crate::terms::parse(&label)?;
    let int = matches!(types.a, ComponentType::I8 | ComponentType::U8);
    let c = args.out_type(if int { ComponentType::F32 } else { types.c })?;
    if !(types.a.is_float() || (int && dequant)) || !c.is_float() {
        bail!(
            "--batch with --epilogue/--out runs float inputs and results here (--groups and the library dequantise 8-bit ones too)"
        );
    }
    let terms = Terms {
        bias,
        activation,
        label,
    };
    Ok((Types { c, ..types }, Some(terms)))
}
