//! Element types on the command line: `A[,B]:C` (`f16:f32`, `f16,f32:f32`), and the Rust types
//! each combination runs with.

use anyhow::{Context as _, Result};
use vk_sgmat::ComponentType;

/// A, B and C's element types.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Types {
    pub a: ComponentType,
    pub b: ComponentType,
    pub c: ComponentType,
}

impl Types {
    /// The name of the types `TA x TB -> TC` (`f16:f32`, `f16,f32:f32`).
    pub fn name_of<TA: vk_sgmat::Element, TB: vk_sgmat::Element, TC: vk_sgmat::Element>() -> String {
        Self {
            a: TA::TYPE,
            b: TB::TYPE,
            c: TC::TYPE,
        }
        .name()
    }

    /// A and B of one type.
    pub fn pair(ab: ComponentType, c: ComponentType) -> Self {
        Self { a: ab, b: ab, c }
    }

    /// Parses `A:C` or `A,B:C`.
    pub fn parse(s: &str) -> Result<Self> {
        let (ab, c) = s.split_once(':').with_context(|| {
            format!("--types {s:?}: expected INPUT:RESULT or A,B:RESULT, e.g. f16:f32 or f16,f32:f32")
        })?;
        let t = |x: &str| ComponentType::parse(x).with_context(|| format!("unknown element type {x:?}"));
        let (a, b) = match ab.split_once(',') {
            Some((a, b)) => (t(a)?, t(b)?),
            None => (t(ab)?, t(ab)?),
        };
        Ok(Self { a, b, c: t(c)? })
    }

    /// [`Types::name`], and the mode where it decides the kernel (A and B both f32): `f32:f32
    /// fast`. Other pairs run the same way in every mode.
    pub fn label(&self, mode: vk_sgmat::ComputeMode) -> String {
        if (self.a, self.b) == (ComponentType::F32, ComponentType::F32) {
            format!("{} {}", self.name(), mode.name())
        } else {
            self.name()
        }
    }

    /// `f16:f32`, or `f16,f32:f32` when A and B differ.
    pub fn name(&self) -> String {
        if self.a == self.b {
            format!("{}:{}", self.a, self.c)
        } else {
            format!("{},{}:{}", self.a, self.b, self.c)
        }
    }
}

/// Calls `$body` with type aliases `$ta`, `$tb`, `$tc` bound to the Rust types of A, B and C, or
/// fails with the list of supported combinations.
macro_rules! with_types {
    ($types:expr, |$ta:ident, $tb:ident, $tc:ident| $body:expr) => {{
        use half::{bf16, f16};
        use vk_sgmat::ComponentType::*;
        let t: $crate::types::Types = $types;
        match (t.a, t.b, t.c) {
            (F16, F16, F32) => {
                type $ta = f16;
                type $tb = f16;
                type $tc = f32;
                $body
            }
            (F16, F16, F16) => {
                type $ta = f16;
                type $tb = f16;
                type $tc = f16;
                $body
            }
            (Bf16, Bf16, F32) => {
                type $ta = bf16;
                type $tb = bf16;
                type $tc = f32;
                $body
            }
            (Bf16, Bf16, Bf16) => {
                type $ta = bf16;
                type $tb = bf16;
                type $tc = bf16;
                $body
            }
            (F32, F32, F32) => {
                type $ta = f32;
                type $tb = f32;
                type $tc = f32;
                $body
            }
            (F32, F32, F16) => {
                type $ta = f32;
                type $tb = f32;
                type $tc = f16;
                $body
            }
            (F16, F32, F32) => {
                type $ta = f16;
                type $tb = f32;
                type $tc = f32;
                $body
            }
            (F32, F16, F32) => {
                type $ta = f32;
                type $tb = f16;
                type $tc = f32;
                $body
            }
            (F16, F32, F16) => {
                type $ta = f16;
                type $tb = f32;
                type $tc = f16;
                $body
            }
            (F32, F16, F16) => {
                type $ta = f32;
                type $tb = f16;
                type $tc = f16;
                $body
            }
            (Bf16, F32, F32) => {
                type $ta = bf16;
                type $tb = f32;
                type $tc = f32;
                $body
            }
            (F32, Bf16, F32) => {
                type $ta = f32;
                type $tb = bf16;
                type $tc = f32;
                $body
            }
            (I8, I8, I32) => {
                type $ta = i8;
                type $tb = i8;
                type $tc = i32;
                $body
            }
            (U8, U8, U32) => {
                type $ta = u8;
                type $tb = u8;
                type $tc = u32;
                $body
            }
            (I8, I8, U32) => {
                type $ta = i8;
                type $tb = i8;
                type $tc = u32;
                $body
            }
            (U8, U8, I32) => {
                type $ta = u8;
                type $tb = u8;
                type $tc = i32;
                $body
            }
            _ => anyhow::bail!(
                "element types {} are not supported; use f16:f32, f16:f16, bf16:f32, bf16:bf16, f32:f32, f32:f16, \
                 f16,f32:f32 (and f32,f16 / bf16,f32 / f32,bf16), i8:i32 or u8:u32",
                t.name()
            ),
        }
    }};
}
pub(crate) use with_types;

#[cfg(test)]
mod tests {
    use super::*;
    use vk_sgmat::ComponentType::*;

    #[test]
    fn parses_pairs_and_mixed_triples() {
        assert_eq!(Types::parse("f16:f32").unwrap(), Types::pair(F16, F32));
        let mixed = Types::parse("f16,f32:f32").unwrap();
        assert_eq!((mixed.a, mixed.b, mixed.c), (F16, F32, F32));
        assert_eq!(mixed.name(), "f16,f32:f32");
        assert!(Types::parse("f16").is_err());
        assert!(Types::parse("f16,q9:f32").is_err());
        // The mode names only f32 x f32 rows: other pairs run the same way in every mode.
        assert_eq!(
            Types::pair(F32, F32).label(vk_sgmat::ComputeMode::FastF16),
            "f32:f32 fast"
        );
        assert_eq!(mixed.label(vk_sgmat::ComputeMode::Exact), "f16,f32:f32");
    }
}
