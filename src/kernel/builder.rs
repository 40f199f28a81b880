//! A thin wrapper over `rspirv::dr::Builder`: caches constants, records capabilities and extensions
//! as they are used, decorates deduplicated types once, and writes the module header at the end.

use crate::config::ComponentType;
use rspirv::dr;
use rspirv::spirv::{self, Capability, StorageClass, Word};
use std::collections::{HashMap, HashSet};

pub(crate) type BuildResult<T> = Result<T, dr::Error>;

pub(crate) struct ModuleBuilder {
    pub b: dr::Builder,
    capabilities: Vec<Capability>,
    extensions: Vec<&'static str>,
    constants: HashMap<(Word, u32), Word>,
    decorated: HashSet<(Word, u32)>,
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
            decorated: HashSet::new(),
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
