//! Kernel generator: one SPIR-V module per [`KernelKey`], emitted with rspirv (no GLSL compiler at
//! run time). See the `gemm` submodule for the kernel's structure.

pub mod absmax;
pub mod act8;
mod blocks;
mod builder;
mod convert;
pub mod dequant;
mod epilogue;
pub use epilogue::{Activation, Axis, Epilogue};
mod gemm;
pub mod gemv;
pub use gemv::{
    gemv_takes, GemvKey, BLOCK_LANE_VALUES, GEMV_MAX_COLS, GEMV_MAX_ROWS, GEMV_MAX_ROWS_PER_LANE, GEMV_THREADS,
};
mod gemm_store;
pub mod group_table;
pub use group_table::generate as generate_group_table;
pub mod narrow;
pub mod peak;
mod push;
mod raster;
pub mod reduce;
mod simt;
pub mod transpose;
mod widen;
mod workgroup;

use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use crate::error::{Error, Result};
use crate::tiling::{KernelScope, Layout, TileScheme};
use serde::Serialize;

/// A diagnostic variant of the GEMM kernel with one part of its main loop removed, timed to see
/// where the time goes (`vk-sgmat tune --probe`). Every variant but [`Probe::Full`] computes a
/// wrong result by design: the library only builds them for [`crate::Timing::Probe`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// The real kernel.
    #[default]
    Full,
    /// Global loads cycle over the first two K steps' addresses, so they hit in L1: removes
    /// L2/DRAM traffic, keeps every instruction.
    NoGlobal,
    /// No fragment loads or multiply-adds: the global-to-shared copy and barriers alone.
    NoMma,
    /// No barriers in the main loop.
    NoBarrier,
    /// No global loads or shared stores: fragment loads and multiply-adds (and barriers) alone.
    MmaOnly,
    /// Global loads without bounds checks (only for problems that are whole tiles; still correct
    /// there): the cost of the checks.
    Unchecked,
    /// The real kernel with its shared memory padded to at least this many bytes (still
    /// correct): whether shared memory per workgroup limits how many workgroups share an SM.
    SharedAtLeast(u32),
    /// Every multiply-add on the matrix units returns its accumulator unchanged, in kernels of
    /// both scopes: the wrong results of a driver that computes a configuration wrongly. Not
    /// for timing: [`ContextOptions::inject_fault`](crate::ContextOptions::inject_fault) builds
    /// one configuration's kernels so, to test the driver self-test.
    NoProducts,
}

impl Probe {
    /// The probes that remove a part of the loop, the real kernel first.
    pub const PARTS: [Probe; 6] = [
        Probe::Full,
        Probe::NoGlobal,
        Probe::NoMma,
        Probe::NoBarrier,
        Probe::MmaOnly,
        Probe::Unchecked,
    ];

    /// A short name (`full`, `no_global`, `shared_40960`, ...).
    pub fn name(self) -> String {
        match self {
            Probe::Full => "full".into(),
            Probe::NoGlobal => "no_global".into(),
            Probe::NoMma => "no_mma".into(),
            Probe::NoBarrier => "no_barrier".into(),
            Probe::MmaOnly => "mma_only".into(),
            Probe::Unchecked => "unchecked".into(),
            Probe::SharedAtLeast(bytes) => format!("shared_{bytes}"),
            Probe::NoProducts => "no_products".into(),
        }
    }
}

/// How one operand travels from memory to the matrix units.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Load {
    /// Stored in the config's component type.
    #[default]
    Native,
    /// Stored as f32 and rounded to nearest even in the config's 16-bit float type (f16 or bf16)
    /// as it is copied to shared memory: no extra pass over memory.
    Round,
    /// Stored as f32 and multiplied in f32 by the invocations, not the matrix units (the config is
    /// [`SIMT_CONFIG`], or for an f32 operand beside a 16-bit float one, that type's
    /// [`simt_config`]).
    Simt,
    /// Stored in the config's component type (f16, bf16, i8 or u8) and widened to f32 (or i32 /
    /// u32) as the kernel without matrix units copies it to shared memory (the config is that
    /// type's [`simt_config`]).
    Widen,
    /// Stored as i8 or u8 and kept packed, four along K to a 32-bit word, in shared memory: the
    /// kernel without matrix units multiplies them by packed dot products (four products a
    /// word; `shaderIntegerDotProduct`; both operands, the type's [`simt_config`]).
    Packed,
    /// Stored as f32, scaled by a power of two (from the largest magnitude, see [`absmax`], read
    /// from binding 3) and split into two f16 parts `hi + lo` as it is copied to shared memory;
    /// the kernel multiplies `hi*hi + hi*lo + lo*hi` (both operands; an f16 -> f32 config).
    Split,
    /// The accurate split done first ([`narrow`]'s split pass): stored as f16 `hi` and `lo`
    /// planes one after the other along K, each padded with zeros to whole K steps, so the
    /// kernel's K is twice the padded K. The workgroup-scope kernel multiplies `hi*hi + hi*lo +
    /// lo*hi` per K step like [`Load::Split`] and unscales by the scale words at binding 3
    /// (both operands; an f16 -> f32 config).
    Planes,
}

impl Load {
    /// Storage vectors (16 bytes) per shared-memory vector of the config's type: the ratio of
    /// the stored element's size to the config's.
    pub fn storage_vectors(self) -> u32 {
        match self {
            Load::Native | Load::Simt | Load::Widen | Load::Packed | Load::Planes => 1,
            Load::Round | Load::Split => 2,
        }
    }

    /// What the GEMM kernel loads once the operand was converted first (see
    /// [`crate::GemmOptions::convert_first`]): a rounded operand arrives as a 16-bit one.
    pub fn converted_first(self) -> Self {
        match self {
            Load::Round => Load::Native,
            other => other,
        }
    }

    /// The type the operand is stored in, for a config whose component type is `component`.
    pub fn storage_type(self, component: ComponentType) -> ComponentType {
        match self {
            Load::Native | Load::Widen | Load::Packed | Load::Planes => component,
            Load::Round | Load::Simt | Load::Split => ComponentType::F32,
        }
    }

    /// Whether both operands run on the kernel without matrix units.
    pub fn without_matrix_units(loads: [Load; 2]) -> bool {
        loads
            .iter()
            .all(|l| matches!(l, Load::Simt | Load::Widen | Load::Packed))
    }
}

/// Everything that selects one generated kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct KernelKey {
    /// The cooperative-matrix configuration.
    pub config: GPUSubgroupMatrixConfig,
    /// The workgroup tiling.
    pub scheme: TileScheme,
    /// A's storage order.
    pub a_layout: Layout,
    /// B's storage order.
    pub b_layout: Layout,
    /// The epilogue terms.
    pub epilogue: Epilogue,
    /// How A and B are stored and converted (subgroup-scope kernels only).
    pub loads: [Load; 2],
    /// [`Probe::Full`] except in diagnostic timing.
    pub probe: Probe,
    /// A grouped GEMM in one dispatch: each workgroup row reads its group from a table at
    /// binding 3 (see [`crate::plan::GemmPlan::grouped`]).
    pub grouped: bool,
    /// Sizes the kernel takes as constants instead of push constants (workgroup scope only):
    /// one pipeline per problem shape, which NVIDIA's driver compiles into a faster loop
    /// ([`crate::GemmOptions::specialize`]).
    pub fixed: Option<FixedSizes>,
}

/// A problem's N, K and leading dimensions (in elements), built into a kernel as constants
/// ([`KernelKey::fixed`]). M stays a push constant, so one kernel serves every M: an inference
/// batch's token count changes from call to call where the weights' N and K do not.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct FixedSizes {
    /// Columns of C and B.
    pub n: u32,
    /// The inner dimension.
    pub k: u32,
    /// A's leading dimension.
    pub lda: u32,
    /// B's leading dimension.
    pub ldb: u32,
    /// C's leading dimension.
    pub ldc: u32,
}

impl KernelKey {
    /// A file-name-safe name, e.g. `gemm_16x16x16_f16_f32_nt_sg2x4_fr4x2_k32_s32_ab` (`_a32`,
    /// `_b32`: that operand is stored as f32 and rounded).
    pub fn name(&self) -> String {
        let c = &self.config;
        let loads: String = ["a", "b"]
            .iter()
            .zip(self.loads)
            .filter(|(_, l)| *l != Load::Native)
            .map(|(name, l)| {
                let suffix = match l {
                    Load::Round => "32",
                    Load::Split => "_split",
                    Load::Planes => "_planes",
                    Load::Widen => "_widen",
                    Load::Packed => "_packed",
                    _ => "_simt",
                };
                format!("_{name}{suffix}")
            })
            .collect();
        format!(
            "gemm_{}x{}x{}_{}_{}_{}{}_{}{}{}{}{}{}{}",
            c.m,
            c.n,
            c.k,
            c.component_type,
            c.result_type,
            self.a_layout.letter(),
            self.b_layout.letter(),
            self.scheme.name(),
            match (self.epilogue.alpha, self.epilogue.beta) {
                (false, false) => "",
                (true, false) => "_a",
                (false, true) => "_b",
                (true, true) => "_ab",
            },
            loads,
            self.epilogue.fused_suffix(),
            match self.probe {
                Probe::Full => String::new(),
                p => format!("_probe_{}", p.name()),
            },
            if self.grouped { "_grouped" } else { "" },
            match self.fixed {
                None => String::new(),
                Some(f) => format!("_fixed_n{}_k{}_ld{}_{}_{}", f.n, f.k, f.lda, f.ldb, f.ldc),
            }
        )
    }
}

impl KernelKey {
    /// Checks that the key's conversions exist: f32 storage narrows to a 16-bit float config, in
    /// the subgroup-scope kernel.
    pub fn check_loads(&self) -> Result<()> {
        let plain = self.loads == [Load::Native; 2] && !self.grouped && self.probe == Probe::Full;
        if self.fixed.is_some() && (!plain || self.scheme.scope() != KernelScope::Workgroup) {
            return Err(Error::Unsupported(format!(
                "sizes built into the kernel take a workgroup-scope scheme on operands read as \
                 stored, one ungrouped GEMM: not {} with loads {:?}",
                self.scheme.name(),
                self.loads
            )));
        }
        if self.grouped && self.loads.iter().any(|l| matches!(l, Load::Split | Load::Planes)) {
            let why = "its tile table is at binding 3, where the accurate split reads scale words";
            return Err(Error::Unsupported(format!(
                "a grouped GEMM in one dispatch takes no accurate split: {why}"
            )));
        }
        if self.loads == [Load::Native; 2] {
            return Ok(());
        }
        if self
            .loads
            .iter()
            .any(|l| matches!(l, Load::Simt | Load::Widen | Load::Packed))
        {
            return self.check_simt();
        }
        let c = self.config;
        if self.loads.contains(&Load::Planes) {
            let f16_f32 = (c.component_type, c.result_type) == (ComponentType::F16, ComponentType::F32);
            if self.loads != [Load::Planes; 2] || !f16_f32 {
                return Err(Error::Unsupported(format!(
                    "split planes take both operands on an f16 -> f32 config, not {c}"
                )));
            }
            if self.scheme.scope() != KernelScope::Workgroup || self.scheme.n_parts() != 1 {
                return Err(Error::InvalidTileScheme(format!(
                    "{}: split planes run on a workgroup-scope scheme of one accumulator",
                    self.scheme.name()
                )));
            }
            return Ok(());
        }
        if self.loads.contains(&Load::Split)
            && (self.loads != [Load::Split; 2]
                || (c.component_type, c.result_type) != (ComponentType::F16, ComponentType::F32))
        {
            return Err(Error::Unsupported(format!(
                "the accurate split takes f32 A and B on an f16 -> f32 config, not {c}"
            )));
        }
        let t = self.config.component_type;
        if !matches!(t, ComponentType::F16 | ComponentType::Bf16) {
            return Err(Error::Unsupported(format!(
                "f32 operands round to f16 or bf16 configs, not {t}"
            )));
        }
        if self.scheme.scope() != KernelScope::Subgroup {
            return Err(Error::InvalidTileScheme(format!(
                "{}: operands stored as f32 need a subgroup-scope scheme, or rounding first (GemmOptions::convert_first)",
                self.scheme.name()
            )));
        }
        Ok(())
    }
}

/// The config a [`Load::Simt`] key carries ([`crate::config::SIMT_CONFIG`]), and that of each
/// type the kernel without matrix units widens ([`crate::config::simt_config`]).
pub use crate::config::{simt_config, SIMT_CONFIG};

impl KernelKey {
    /// The config the key's tile is sized and checked by: its own, but [`SIMT_CONFIG`] for
    /// the kernel without matrix units, which widens every type to 32 bits in shared memory.
    pub fn tile_config(&self) -> GPUSubgroupMatrixConfig {
        if Load::without_matrix_units(self.loads) {
            SIMT_CONFIG
        } else {
            self.config
        }
    }

    /// The rules of the kernel without matrix units: both operands on it, each stored in the
    /// config's type (widened, 16-bit floats and 8-bit integers) or as f32 (beside a float
    /// config), the config the one [`simt_config`] gives, a subgroup-scope scheme with one 8x8
    /// block of C per invocation, and K steps of whole vectors of every stored type.
    fn check_simt(&self) -> Result<()> {
        let bad = |why: String| Err(Error::InvalidTileScheme(format!("{}: {why}", self.scheme.name())));
        let c = self.config;
        let ct = c.component_type;
        let loads_fit = match ct {
            ComponentType::F32 => self.loads == [Load::Simt; 2],
            ComponentType::F16 | ComponentType::Bf16 => {
                self.loads.iter().all(|l| matches!(l, Load::Simt | Load::Widen)) && self.loads != [Load::Simt; 2]
            }
            _ => self.loads == [Load::Widen; 2] || self.loads == [Load::Packed; 2],
        };
        if !loads_fit || simt_config(ct) != Some(c) {
            return Err(Error::Unsupported(format!(
                "the kernel without matrix units takes A and B of one type (f32, f16, bf16, i8 or u8; an f32 one beside a 16-bit float one) on that type's config ({} -> {}), not {c} with loads {:?}",
                ct,
                simt_config(ct).map_or("none".into(), |s| s.result_type.to_string()),
                self.loads
            )));
        }
        if self.scheme.scope() != KernelScope::Subgroup {
            return bad("the kernel without matrix units needs a subgroup-scope scheme".into());
        }
        let g = self.scheme.geometry(&self.config);
        let block = simt::BLOCK;
        if (g.bm / block) * (g.bn / block) != g.threads {
            return bad(format!(
                "a {}x{} tile in {}x{} blocks is not one block per invocation ({})",
                g.bm, g.bn, block, block, g.threads
            ));
        }
        let widest = self
            .loads
            .iter()
            .map(|l| simt::per_vector(l.storage_type(ct)))
            .max()
            .unwrap_or(4);
        if g.bk % widest != 0 || g.bm % widest != 0 || g.bn % widest != 0 {
            return bad(format!(
                "a {}x{} tile with K step {} does not split into whole {widest}-element vectors",
                g.bm, g.bn, g.bk
            ));
        }
        Ok(())
    }
}

/// The kernel's push constants, in declaration order (all 32-bit). Offsets, batch strides and
/// leading dimensions of A and B are in 16-byte vectors, of C in elements; alpha and beta are the bit patterns of the
/// result type's scalar (f32 bits for f16 results, converted in the kernel).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable, Serialize)]
pub struct PushConstants {
    /// Rows of this pass.
    pub m: u32,
    /// Columns of this pass.
    pub n: u32,
    /// K of this pass.
    pub k: u32,
    /// A's leading dimension in vectors.
    pub lda_vec: u32,
    /// B's leading dimension in vectors.
    pub ldb_vec: u32,
    /// C's leading dimension in elements.
    pub ldc: u32,
    /// A's first element, in vectors from the binding.
    pub a_off_vec: u32,
    /// B's first element, in vectors from the binding.
    pub b_off_vec: u32,
    /// C's first element, in elements from the binding.
    pub c_off: u32,
    /// alpha's bits.
    pub alpha_bits: u32,
    /// beta's bits.
    pub beta_bits: u32,
    /// Batch entry z of a GEMM dispatch (the workgroup's z) reads A this many vectors after
    /// entry 0 (0: every entry reads the same A).
    pub a_batch_vec: u32,
    /// The same for B, in vectors.
    pub b_batch_vec: u32,
    /// The same for C, in elements (entries never overlap: the planner checks).
    pub c_batch: u32,
    /// The pass's first row of C in the whole problem: where a fused epilogue's row vectors
    /// (bias, scales) start for it.
    pub row0: u32,
    /// The pass's first column, for column vectors.
    pub col0: u32,
}

/// Number of storage-buffer bindings: A, B, C at bindings 0, 1, 2 of set 0; at 3 the scale
/// words of [`Load::Split`] kernels or a grouped kernel's tile table ([`KernelKey::grouped`]);
/// at 4, 5 and 6 a fused epilogue's bias, row scales and column scales (each bound only for the
/// kernels that read it).
pub const BINDINGS: u32 = 7;

/// The binding of a fused epilogue's bias vector (then row and column scales).
pub const BIAS_BINDING: u32 = 4;

/// Generates the `peak` kernel for `config` (see [`peak`]).
pub fn generate_peak(config: &GPUSubgroupMatrixConfig, subgroup_size: u32) -> Result<Vec<u32>> {
    peak::emit(config, subgroup_size).map_err(|e| Error::Codegen(format!("peak {config}: {e}")))
}

/// Generates the largest-magnitude pass of the accurate split (see [`absmax`]).
pub fn generate_absmax() -> Result<Vec<u32>> {
    absmax::emit().map_err(|e| Error::Codegen(format!("absmax: {e}")))
}

/// Generates the pass that dequantizes blocks of `quant` into a dense copy of `to` (f16 or f32)
/// before the GEMM (see [`dequant`]), the blocks interleaved in groups where `interleaved`
/// ([`crate::quant::QuantType::interleave`]).
pub fn generate_dequant(quant: crate::quant::QuantType, to: ComponentType, interleaved: bool) -> Result<Vec<u32>> {
    if !matches!(to, ComponentType::F16 | ComponentType::F32) {
        return Err(Error::Unsupported(format!(
            "{quant} blocks dequantize to f16 or f32, not {to}"
        )));
    }
    if interleaved && quant.interleave().is_none() {
        return Err(Error::Unsupported(format!("{quant} blocks are never interleaved")));
    }
    dequant::emit(quant, to, interleaved).map_err(|e| Error::Codegen(format!("dequantize {quant} to {to}: {e}")))
}

/// Generates the pass that rounds `elem` activations to 8 bits per block of 32 for the
/// matrix-vector kernel on quantized weights (see [`act8`]).
pub fn generate_act8(elem: ComponentType) -> Result<Vec<u32>> {
    if !gemv_takes(elem) {
        return Err(Error::Unsupported(format!(
            "activations of {elem} round to 8 bits from f16, bf16 or f32"
        )));
    }
    act8::emit(elem).map_err(|e| Error::Codegen(format!("activations of {elem} to 8 bits: {e}")))
}

/// Generates the pass that rounds an f32 operand to `to` (f16 or bf16) before the GEMM (see
/// [`narrow`]).
pub fn generate_narrow(to: ComponentType) -> Result<Vec<u32>> {
    if !matches!(to, ComponentType::F16 | ComponentType::Bf16) {
        return Err(Error::Unsupported(format!(
            "f32 operands narrow to f16 or bf16, not {to}"
        )));
    }
    narrow::emit(narrow::Output::Rounded(to)).map_err(|e| Error::Codegen(format!("narrow to {to}: {e}")))
}

/// Generates the pass that splits an f32 operand into f16 planes for [`Load::Planes`]: in the
/// operand's storage order ([`narrow`]), or `transposed` into the other ([`transpose`]).
pub fn generate_split_planes(transposed: bool) -> Result<Vec<u32>> {
    let words = if transposed {
        transpose::emit(transpose::Output::Planes)
    } else {
        narrow::emit(narrow::Output::Planes)
    };
    words.map_err(|e| Error::Codegen(format!("split planes: {e}")))
}

/// Generates the pass that copies an operand into the other storage order before the GEMM (see
/// [`transpose`]): an operand of `bytes`-byte elements (2 or 1) bit for bit (`rounds_to`
/// `None`), or an f32 operand rounded to `Some(t)` (f16 or bf16; `bytes` 2).
pub fn generate_transpose(rounds_to: Option<ComponentType>, bytes: u8) -> Result<Vec<u32>> {
    let output = match (rounds_to, bytes) {
        (None, 2) => transpose::Output::Copy16,
        (None, 1) => transpose::Output::Copy8,
        (Some(t @ (ComponentType::F16 | ComponentType::Bf16)), 2) => transpose::Output::Rounded(t),
        (Some(t), _) => {
            return Err(Error::Unsupported(format!(
                "f32 operands narrow to f16 or bf16 (2 bytes), not {t} ({bytes} bytes)"
            )))
        }
        (None, _) => {
            return Err(Error::Unsupported(format!(
                "operands of {bytes}-byte elements are not copied transposed: 16-bit and 8-bit ones are"
            )))
        }
    };
    transpose::emit(output).map_err(|e| Error::Codegen(format!("transpose: {e}")))
}

/// Generates the matrix-vector kernel of `key` (see [`gemv`]).
pub fn generate_gemv(key: &GemvKey) -> Result<Vec<u32>> {
    let shared_rows = key.lanes < GEMV_THREADS;
    let cols_fit = if shared_rows {
        key.shared_rows_fit()
    } else {
        key.lanes == GEMV_THREADS && (1..=GEMV_MAX_COLS).contains(&key.cols)
    };
    if !gemv_takes(key.elem)
        || !(1..=GEMV_MAX_ROWS).contains(&key.rows)
        || !cols_fit
        || !(1..=2).contains(&key.unroll)
        || (key.int8_x && key.quant.is_none())
        || (key.round_x && !key.int8_x)
        || (key.grouped && key.c_transposed)
        || (key.interleaved && key.quant.and_then(|q| q.interleave()).is_none())
    {
        return Err(Error::Unsupported(format!(
            "{}: the matrix-vector kernel takes f16, bf16 or f32, 1 to {GEMV_MAX_ROWS} rows of X, 1 or 2 vectors a step, 8-bit activations only beside weights in a block format (rounded in the kernel only with them), interleaved blocks only in a format that has groups, groups only into an untransposed C, and either {GEMV_THREADS} lanes with 1 to {GEMV_MAX_COLS} rows of W per workgroup or (8-bit activations only) 16, 32 or 64 lanes with 1 to {} rows of W an invocation and at most {GEMV_THREADS} sums a workgroup",
            key.name(),
            GEMV_MAX_ROWS_PER_LANE
        )));
    }
    gemv::emit(key).map_err(|e| Error::Codegen(format!("{}: {e}", key.name())))
}

/// Generates the split-K reduction for a result type (see [`reduce`]).
pub fn generate_reduce(result_type: crate::config::ComponentType, epilogue: Epilogue) -> Result<Vec<u32>> {
    reduce::emit(result_type, epilogue).map_err(|e| Error::Codegen(format!("reduce {result_type}: {e}")))
}

/// Generates the SPIR-V words of a kernel. The scheme is checked against the key's config first
/// (without device limits: [`TileScheme::check_device`] is the pipeline's job), since a key can
/// pair any scheme with any config.
pub fn generate(key: &KernelKey) -> Result<Vec<u32>> {
    key.check_loads()?;
    key.scheme
        .check(&key.tile_config(), &crate::device::DeviceLimits::default())?;
    key.epilogue.check(key.config.result_type)?;
    if key.scheme.scope() == KernelScope::Workgroup {
        key.epilogue.check_workgroup_scope(key.config.result_type)?;
    }
    let words = match key.scheme.scope() {
        _ if Load::without_matrix_units(key.loads) => simt::emit(key),
        KernelScope::Subgroup => gemm::emit(key),
        KernelScope::Workgroup => workgroup::emit(key),
    };
    words.map_err(|e| Error::Codegen(format!("{}: {e}", key.name())))
}
