//! A thin wrapper over `rspirv::dr::Builder`: caches constants, records capabilities and extensions
//! as they are used, decorates deduplicated types once, and writes the module header at the end.

use crate::config::{ComponentType, GPUSubgroupMatrixConfig};
use rspirv::dr;
use rspirv::spirv::{self, Capability, CooperativeMatrixOperands, Scope, StorageClass, Word};
use std::collections::{HashMap, HashSet};

/// `CooperativeMatrixUse::MatrixAccumulatorKHR`.
const USE_ACC: u32 = 2;

pub(crate) type BuildResult<T> = Result<T, dr::Error>;

pub(crate) struct ModuleBuilder {
    pub b: dr::Builder,
    capabilities: Vec<Capability>,
    extensions: Vec<&'static str>,
    constants: HashMap<(Word, u32), Word>,
    /// `uvec4` constants ([`ModuleBuilder::c_uvec4`]).
    vectors: HashMap<[u32; 4], Word>,
    decorated: HashSet<(Word, u32)>,
    /// Global variables for the entry point's interface (SPIR-V 1.4+ lists all of them).
    pub interface: Vec<Word>,
    /// The GLSL.std.450 import, once made ([`ModuleBuilder::glsl`]).
    glsl: Option<Word>,
    /// [`ModuleBuilder::mul_add`] returns its accumulator unchanged ([`super::Probe::NoProducts`]).
    pub drop_products: bool,
}

impl ModuleBuilder {
    pub fn new() -> Self {
        let mut b = dr::Builder::new();
        b.set_version(1, 6);
        let mut s = Self {
            b,
            capabilities: Vec::new(),
            extensions: Vec::new(),
            constants: HashMap::new(),
            vectors: HashMap::new(),
            decorated: HashSet::new(),
            interface: Vec::new(),
            glsl: None,
            drop_products: false,
        };
        s.need(Capability::Shader);
        s.need(Capability::VulkanMemoryModel);
        s
    }

    pub fn need(&mut self, cap: Capability) {
        if !self.capabilities.contains(&cap) {
            self.capabilities.push(cap);
        }
    }

    pub fn extension(&mut self, name: &'static str) {
        if !self.extensions.contains(&name) {
            self.extensions.push(name);
        }
    }

    /// The module's GLSL.std.450 import, made on first use.
    pub fn glsl(&mut self) -> Word {
        match self.glsl {
            Some(id) => id,
            None => *self.glsl.insert(self.b.ext_inst_import("GLSL.std.450")),
        }
    }

    pub fn t_void(&mut self) -> Word {
        self.b.type_void()
    }
    pub fn t_bool(&mut self) -> Word {
        self.b.type_bool()
    }
    pub fn t_u32(&mut self) -> Word {
        self.b.type_int(32, 0)
    }
    pub fn t_f32(&mut self) -> Word {
        self.b.type_float(32, None)
    }
    pub fn t_uvec(&mut self, n: u32) -> Word {
        let u = self.t_u32();
        if n == 1 {
            u
        } else {
            self.b.type_vector(u, n)
        }
    }

    /// The SPIR-V scalar type of a component type, declaring the capabilities it needs.
    pub fn t_scalar(&mut self, t: ComponentType) -> Word {
        use ComponentType::*;
        match t {
            F16 => {
                self.need(Capability::Float16);
                self.b.type_float(16, None)
            }
            Bf16 => {
                self.need(Capability::BFloat16TypeKHR);
                self.extension("SPV_KHR_bfloat16");
                self.b.type_float(16, Some(spirv::FPEncoding::BFloat16KHR))
            }
            F32 => self.b.type_float(32, None),
            F64 => {
                self.need(Capability::Float64);
                self.b.type_float(64, None)
            }
            F8E4M3 | F8E5M2 => {
                self.need(Capability::Float8EXT);
                self.extension("SPV_EXT_float8");
                let enc = if t == F8E4M3 {
                    spirv::FPEncoding::Float8E4M3EXT
                } else {
                    spirv::FPEncoding::Float8E5M2EXT
                };
                self.b.type_float(8, Some(enc))
            }
            I8 | U8 => {
                self.need(Capability::Int8);
                self.b.type_int(8, u32::from(t == I8))
            }
            I16 | U16 => {
                self.need(Capability::Int16);
                self.b.type_int(16, u32::from(t == I16))
            }
            I32 | U32 => self.b.type_int(32, u32::from(t == I32)),
            I64 | U64 => {
                self.need(Capability::Int64);
                self.b.type_int(64, u32::from(t == I64))
            }
        }
    }

    pub fn ptr(&mut self, class: StorageClass, pointee: Word) -> Word {
        self.b.type_pointer(None, class, pointee)
    }

    /// A 32-bit (or narrower) constant of type `ty` with the given bit pattern, created once.
    pub fn c_bits(&mut self, ty: Word, bits: u32) -> Word {
        if let Some(&id) = self.constants.get(&(ty, bits)) {
            return id;
        }
        let id = self.b.constant_bit32(ty, bits);
        self.constants.insert((ty, bits), id);
        id
    }

    pub fn c_u32(&mut self, v: u32) -> Word {
        let t = self.t_u32();
        self.c_bits(t, v)
    }

    /// A `uvec4` constant of `words`, created once (a table a kernel indexes at run time).
    pub fn c_uvec4(&mut self, words: [u32; 4]) -> Word {
        if let Some(&id) = self.vectors.get(&words) {
            return id;
        }
        let t = self.t_uvec(4);
        let parts = words.map(|w| self.c_u32(w));
        let id = self.b.constant_composite(t, parts);
        self.vectors.insert(words, id);
        id
    }

    /// The A (`m x k`), B (`k x n`) and accumulator (`m x n`) cooperative-matrix types of `cfg`
    /// at `scope`, with the capability bf16 operands need.
    pub fn matrix_types(
        &mut self,
        cfg: &GPUSubgroupMatrixConfig,
        scope: Scope,
        (m, n, k): (u32, u32, u32),
    ) -> (Word, Word, Word) {
        // `CooperativeMatrixUse` values (the accumulator's: `USE_ACC`).
        const USE_A: u32 = 0;
        const USE_B: u32 = 1;
        let (t_comp, t_res) = (self.t_scalar(cfg.component_type), self.t_scalar(cfg.result_type));
        if cfg.component_type == ComponentType::Bf16 {
            self.need(Capability::BFloat16CooperativeMatrixKHR);
        }
        let c_scope = self.c_u32(scope as u32);
        let (cm, cn, ck) = (self.c_u32(m), self.c_u32(n), self.c_u32(k));
        // All three use constants before the types (acc_type finds its one cached), so the
        // constants' ids, and the golden disassemblies, keep their order.
        let (use_a, use_b) = (self.c_u32(USE_A), self.c_u32(USE_B));
        self.c_u32(USE_ACC);
        (
            self.b.type_cooperative_matrix_khr(t_comp, c_scope, cm, ck, use_a),
            self.b.type_cooperative_matrix_khr(t_comp, c_scope, ck, cn, use_b),
            self.acc_type(t_res, scope, (m, n)),
        )
    }

    /// The accumulator cooperative-matrix type of `m x n` elements of type `elem` at `scope`
    /// (`CooperativeMatrixUse::MatrixAccumulatorKHR`).
    pub fn acc_type(&mut self, elem: Word, scope: Scope, (m, n): (u32, u32)) -> Word {
        let c_scope = self.c_u32(scope as u32);
        let (cm, cn, use_acc) = (self.c_u32(m), self.c_u32(n), self.c_u32(USE_ACC));
        self.b.type_cooperative_matrix_khr(elem, c_scope, cm, cn, use_acc)
    }

    /// `x * c` on u32.
    pub fn mul_u(&mut self, x: Word, c: u32) -> BuildResult<Word> {
        let (t, k) = (self.t_u32(), self.c_u32(c));
        self.b.i_mul(t, None, x, k)
    }

    /// `x + c` on u32.
    pub fn add_u(&mut self, x: Word, c: u32) -> BuildResult<Word> {
        let (t, k) = (self.t_u32(), self.c_u32(c));
        self.b.i_add(t, None, x, k)
    }

    /// `x / c` on u32.
    pub fn div_u(&mut self, x: Word, c: u32) -> BuildResult<Word> {
        let (t, k) = (self.t_u32(), self.c_u32(c));
        self.b.u_div(t, None, x, k)
    }

    /// `x % c` on u32.
    pub fn mod_u(&mut self, x: Word, c: u32) -> BuildResult<Word> {
        let (t, k) = (self.t_u32(), self.c_u32(c));
        self.b.u_mod(t, None, x, k)
    }

    /// An `Input` variable decorated as the built-in `which`.
    pub fn builtin_input(&mut self, ty: Word, which: spirv::BuiltIn) -> Word {
        let p = self.ptr(StorageClass::Input, ty);
        let v = self.b.variable(p, None, StorageClass::Input, None);
        self.b
            .decorate(v, spirv::Decoration::BuiltIn, [dr::Operand::BuiltIn(which)]);
        self.interface.push(v);
        v
    }

    /// The push-constant block: `members` consecutive u32s (see `PushConstants`).
    pub fn push_constant_block(&mut self, members: u32) -> Word {
        let t_u32 = self.t_u32();
        let t_pc = self.b.type_struct(vec![t_u32; members as usize]);
        self.decorate_once(t_pc, spirv::Decoration::Block, vec![]);
        for i in 0..members {
            self.member_decorate_once(
                t_pc,
                i,
                spirv::Decoration::Offset,
                vec![dr::Operand::LiteralBit32(4 * i)],
            );
        }
        let p = self.ptr(StorageClass::PushConstant, t_pc);
        let v = self.b.variable(p, None, StorageClass::PushConstant, None);
        self.interface.push(v);
        v
    }

    /// The label of the block being built (what a phi after it names as its predecessor).
    pub fn current_label(&self) -> BuildResult<Word> {
        let (f, blk) = (self.b.selected_function(), self.b.selected_block());
        f.zip(blk)
            .and_then(|(f, blk)| self.b.module_ref().functions[f].blocks[blk].label_id())
            .ok_or(dr::Error::DetachedInstruction(None))
    }

    /// A structured loop `for (i = start; i < end; i += step) body(i)` on u32, entered from the
    /// current block. `body` starts in the loop's body block and may add blocks of its own; the
    /// block after the loop is open when this returns.
    pub fn counted_loop(
        &mut self,
        (start, end, step): (Word, Word, u32),
        body: impl FnOnce(&mut Self, Word) -> BuildResult<()>,
    ) -> BuildResult<()> {
        let c_step = self.c_u32(step);
        self.counted_loop_by((start, end, c_step), body)
    }

    /// [`ModuleBuilder::counted_loop`] with a step computed at run time.
    pub fn counted_loop_by(
        &mut self,
        range: (Word, Word, Word),
        body: impl FnOnce(&mut Self, Word) -> BuildResult<()>,
    ) -> BuildResult<()> {
        self.counted_loop_ctl(range, spirv::LoopControl::NONE, body)
    }

    /// [`ModuleBuilder::counted_loop_by`] with a loop-control hint.
    pub fn counted_loop_ctl(
        &mut self,
        (start, end, c_step): (Word, Word, Word),
        control: spirv::LoopControl,
        body: impl FnOnce(&mut Self, Word) -> BuildResult<()>,
    ) -> BuildResult<()> {
        let (t_u32, t_bool) = (self.t_u32(), self.t_bool());
        let entry = self.current_label()?;
        let (l_header, l_body, l_continue, l_merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        let next = self.b.id();
        self.b.branch(l_header)?;
        self.b.begin_block(Some(l_header))?;
        let i = self.b.phi(t_u32, None, [(start, entry), (next, l_continue)])?;
        let more = self.b.u_less_than(t_bool, None, i, end)?;
        self.b.loop_merge(l_merge, l_continue, control, [])?;
        self.b.branch_conditional(more, l_body, l_merge, [])?;
        self.b.begin_block(Some(l_body))?;
        body(self, i)?;
        self.b.branch(l_continue)?;
        self.b.begin_block(Some(l_continue))?;
        self.b.i_add(t_u32, Some(next), i, c_step)?;
        self.b.branch(l_header)?;
        self.b.begin_block(Some(l_merge))?;
        Ok(())
    }

    /// A workgroup (shared memory) array of `len` elements of `elem`, in the entry point's
    /// interface.
    pub fn workgroup_array(&mut self, elem: Word, len: u32) -> Word {
        let c_len = self.c_u32(len);
        let t_arr = self.b.type_array(elem, c_len);
        let p = self.ptr(spirv::StorageClass::Workgroup, t_arr);
        let v = self.b.variable(p, None, spirv::StorageClass::Workgroup, None);
        self.interface.push(v);
        v
    }

    /// `if (cond) return;`, continuing in the block after it (open when this returns). Where
    /// `cond` is the same for the whole workgroup, before any barrier.
    pub fn return_if(&mut self, cond: Word) -> BuildResult<()> {
        let (l_return, l_go) = (self.b.id(), self.b.id());
        self.b.selection_merge(l_go, spirv::SelectionControl::NONE)?;
        self.b.branch_conditional(cond, l_return, l_go, [])?;
        self.b.begin_block(Some(l_return))?;
        self.b.ret()?;
        self.b.begin_block(Some(l_go)).map(|_| ())
    }

    /// A barrier for the whole workgroup that makes its writes to workgroup memory visible to
    /// every invocation after it (acquire and release).
    pub fn workgroup_barrier(&mut self) -> BuildResult<()> {
        let scope = self.c_u32(spirv::Scope::Workgroup as u32);
        let sem = (spirv::MemorySemantics::ACQUIRE_RELEASE | spirv::MemorySemantics::WORKGROUP_MEMORY).bits();
        let sem = self.c_u32(sem);
        self.b.control_barrier(scope, scope, sem)
    }

    /// `if (cond) { body }`, continuing after it.
    pub fn if_then(&mut self, cond: Word, body: impl FnOnce(&mut Self) -> BuildResult<()>) -> BuildResult<()> {
        let (l_then, l_merge) = (self.b.id(), self.b.id());
        self.b.selection_merge(l_merge, spirv::SelectionControl::NONE)?;
        self.b.branch_conditional(cond, l_then, l_merge, [])?;
        self.b.begin_block(Some(l_then))?;
        body(self)?;
        self.b.branch(l_merge)?;
        self.b.begin_block(Some(l_merge))?;
        Ok(())
    }

    /// A grid-stride loop over `rows x row_vecs` items (vectors of a matrix in storage order),
    /// shared by `groups` workgroups of `threads` invocations: invocation `i` of the grid takes
    /// items `i`, `i + groups * threads`, ...; `body(row, column)` for each. `v_local` and `v_wg`
    /// are the LocalInvocationIndex and WorkgroupId inputs.
    pub fn grid_stride_rows(
        &mut self,
        (v_local, v_wg, threads): (Word, Word, u32),
        (rows, row_vecs, groups): (Word, Word, Word),
        body: impl FnOnce(&mut Self, Word, Word) -> BuildResult<()>,
    ) -> BuildResult<()> {
        let (t_u32, t_uvec3) = (self.t_u32(), self.t_uvec(3));
        let lid = self.b.load(t_u32, None, v_local, None, [])?;
        let wg = self.b.load(t_uvec3, None, v_wg, None, [])?;
        let wx = self.b.composite_extract(t_u32, None, wg, [0])?;
        let base = self.mul_u(wx, threads)?;
        let gid = self.b.i_add(t_u32, None, base, lid)?;
        let total = self.b.i_mul(t_u32, None, rows, row_vecs)?;
        let stride = self.mul_u(groups, threads)?;
        self.counted_loop_by((gid, total, stride), |b, v| {
            let r = b.b.u_div(t_u32, None, v, row_vecs)?;
            let c = b.b.u_mod(t_u32, None, v, row_vecs)?;
            body(b, r, c)
        })
    }

    /// Loads member `member` (a u32) of the push-constant block `block`.
    pub fn push_constant(&mut self, block: Word, member: u32) -> BuildResult<Word> {
        let t_u32 = self.t_u32();
        let p_u32 = self.ptr(StorageClass::PushConstant, t_u32);
        let idx = self.c_u32(member);
        let p = self.b.access_chain(p_u32, None, block, [idx])?;
        self.b.load(t_u32, None, p, None, [])
    }

    /// A storage buffer `{ elem data[]; }` at set 0, `binding`.
    pub fn storage_buffer(&mut self, elem: Word, stride: u32, binding: u32, read_only: bool) -> Word {
        use spirv::Decoration::*;
        let t_arr = self.b.type_runtime_array(elem);
        self.decorate_once(t_arr, ArrayStride, vec![dr::Operand::LiteralBit32(stride)]);
        let t_struct = self.b.type_struct([t_arr]);
        self.decorate_once(t_struct, Block, vec![]);
        self.member_decorate_once(t_struct, 0, Offset, vec![dr::Operand::LiteralBit32(0)]);
        let p = self.ptr(StorageClass::StorageBuffer, t_struct);
        let v = self.b.variable(p, None, StorageClass::StorageBuffer, None);
        self.b.decorate(v, DescriptorSet, [dr::Operand::LiteralBit32(0)]);
        self.b.decorate(v, Binding, [dr::Operand::LiteralBit32(binding)]);
        if read_only {
            self.b.decorate(v, NonWritable, []);
        }
        self.interface.push(v);
        v
    }

    /// Converts alpha's or beta's push-constant bits to the result type's scalar `t_res`: f32 bits
    /// for f32 and f16 results (converted here), two's complement for i32, as is for u32.
    pub fn scalar_from_bits(&mut self, result_type: ComponentType, t_res: Word, bits: Word) -> BuildResult<Word> {
        Ok(match result_type {
            ComponentType::F32 => {
                let t = self.t_f32();
                self.b.bitcast(t, None, bits)?
            }
            ComponentType::F16 => {
                let t = self.t_f32();
                let f = self.b.bitcast(t, None, bits)?;
                self.b.f_convert(t_res, None, f)?
            }
            ComponentType::I32 => self.b.bitcast(t_res, None, bits)?,
            _ => bits,
        })
    }

    /// Decorates `target` unless it already carries `decoration` (types are deduplicated, so two
    /// buffers can share one struct type).
    pub fn decorate_once(&mut self, target: Word, decoration: spirv::Decoration, params: Vec<dr::Operand>) {
        if self.decorated.insert((target, decoration as u32)) {
            self.b.decorate(target, decoration, params);
        }
    }

    pub fn member_decorate_once(
        &mut self,
        target: Word,
        member: u32,
        decoration: spirv::Decoration,
        params: Vec<dr::Operand>,
    ) {
        // Members are keyed apart from whole-type decorations by the high bit.
        if self
            .decorated
            .insert((target, 0x8000_0000 | (member << 16) | decoration as u32))
        {
            self.b.member_decorate(target, member, decoration, params);
        }
    }

    /// Vector `idx` of `buf` (a storage buffer of 16-byte vectors) where `ok`, else `zero`. An
    /// out-of-range vector is read at `first` (the operand's first vector, always inside the
    /// binding) and dropped, so no access leaves the bound window and no branch is needed.
    pub fn load_vector_or_zero(
        &mut self,
        (buf, first): (Word, Word),
        idx: Word,
        ok: Word,
        zero: Word,
    ) -> BuildResult<Word> {
        let (t_u32, t_uvec4) = (self.t_u32(), self.t_uvec(4));
        let p_sb_uvec4 = self.ptr(StorageClass::StorageBuffer, t_uvec4);
        let c0 = self.c_u32(0);
        let safe = self.b.select(t_u32, None, ok, idx, first)?;
        let p = self.b.access_chain(p_sb_uvec4, None, buf, [c0, safe])?;
        let val = self.b.load(t_uvec4, None, p, None, [])?;
        self.b.select(t_uvec4, None, ok, val, zero)
    }

    /// Returns from the current block, ends function `f` and declares it the `main` compute
    /// entry point of `threads` x 1 x 1 invocations, every global variable in its interface.
    pub fn end_compute(&mut self, f: Word, threads: u32) -> BuildResult<()> {
        self.b.ret()?;
        self.b.end_function()?;
        let interface = std::mem::take(&mut self.interface);
        self.b
            .entry_point(spirv::ExecutionModel::GLCompute, f, "main", interface);
        self.b
            .execution_mode(f, spirv::ExecutionMode::LocalSize, [threads, 1, 1]);
        Ok(())
    }

    /// Finishes the module: header instructions, then the words.
    pub fn finish(mut self) -> Vec<u32> {
        for cap in std::mem::take(&mut self.capabilities) {
            self.b.capability(cap);
        }
        for ext in std::mem::take(&mut self.extensions) {
            self.b.extension(ext);
        }
        self.b
            .memory_model(spirv::AddressingModel::Logical, spirv::MemoryModel::Vulkan);
        use rspirv::binary::Assemble;
        self.b.module().assemble()
    }
}

impl ModuleBuilder {
    /// `a * b + c` on the matrix units, or `c` itself where the kernel is built with the
    /// injected fault ([`super::Probe::NoProducts`]): every GEMM kernel's multiply-adds go
    /// through here.
    pub fn mul_add(
        &mut self,
        t_acc: Word,
        (a, b, c): (Word, Word, Word),
        operands: Option<CooperativeMatrixOperands>,
    ) -> BuildResult<Word> {
        if self.drop_products {
            return Ok(c);
        }
        self.b.cooperative_matrix_mul_add_khr(t_acc, None, a, b, c, operands)
    }
}

/// The multiply-add operands that mark a config's signed integer matrices (none for floats and
/// unsigned integers).
pub(crate) fn mul_add_operands(config: &GPUSubgroupMatrixConfig) -> Option<CooperativeMatrixOperands> {
    let mut operands = CooperativeMatrixOperands::NONE_KHR;
    if config.component_type.is_signed_int() {
        operands |= CooperativeMatrixOperands::MATRIX_A_SIGNED_COMPONENTS_KHR
            | CooperativeMatrixOperands::MATRIX_B_SIGNED_COMPONENTS_KHR;
    }
    if config.result_type.is_signed_int() {
        operands |= CooperativeMatrixOperands::MATRIX_C_SIGNED_COMPONENTS_KHR
            | CooperativeMatrixOperands::MATRIX_RESULT_SIGNED_COMPONENTS_KHR;
    }
    (!operands.is_empty()).then_some(operands)
}
