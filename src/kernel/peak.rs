//! The `peak` kernel: register-resident multiply-accumulate throughput for one config, the Vulkan
//! ceiling every GEMM figure is read against.
//!
//! Each subgroup keeps `CHAINS` independent accumulators, each fed by its own A fragment, and per
//! iteration reloads the B fragment from shared memory at an offset that alternates with the
//! iteration, so no product is loop-invariant (NVIDIA's compiler hoists invariant products). Every
//! element of every accumulator is stored at the end (it drops MMAs whose results are unused).

use super::builder::{mul_add_operands, BuildResult, ModuleBuilder};
use crate::config::GPUSubgroupMatrixConfig;
use rspirv::spirv::{BuiltIn, Capability, FunctionControl, MemoryAccess, Scope, StorageClass, Word};

/// Independent accumulator chains per subgroup.
pub const CHAINS: u32 = 8;
/// Subgroups per workgroup.
pub const SUBGROUPS: u32 = 4;

/// Generates the peak kernel. Bindings: 0 = input words (A fragments, then two B tiles), 2 = output
/// (`SUBGROUPS * CHAINS * m * n` result elements per workgroup). Push constant 0 = iterations.
pub fn emit(cfg: &GPUSubgroupMatrixConfig, subgroup_size: u32) -> BuildResult<Vec<u32>> {
    let es = cfg.component_type.size_bytes();
    let rs = cfg.result_type.size_bytes();
    let mut mb = ModuleBuilder::new();
    mb.need(Capability::CooperativeMatrixKHR);
    mb.need(Capability::GroupNonUniform);
    mb.extension("SPV_KHR_cooperative_matrix");
    let b = &mut mb;
    let t_void = b.t_void();
    let t_u32 = b.t_u32();
    let t_uvec3 = b.t_uvec(3);
    let (t_a, t_b, t_acc) = b.matrix_types(cfg, Scope::Subgroup, (cfg.m, cfg.n, cfg.k));
    let t_res = b.t_scalar(cfg.result_type);
    if rs == 2 {
        b.need(Capability::StorageBuffer16BitAccess);
    }
    let (u0, u1) = (b.c_u32(0), b.c_u32(1));

    let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_sg = b.builtin_input(t_u32, BuiltIn::SubgroupId);
    let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = b.push_constant_block(1);
    let v_in = b.storage_buffer(t_u32, 4, 0, true);
    let v_out = b.storage_buffer(t_res, rs, 2, false);
    // Two B tiles in shared memory, as words.
    let b_words = cfg.k * cfg.n * es / 4;
    let len = b.c_u32(2 * b_words);
    let t_sh = b.b.type_array(t_u32, len);
    let p_sh = b.ptr(StorageClass::Workgroup, t_sh);
    let v_sh = b.b.variable(p_sh, None, StorageClass::Workgroup, None);
    b.interface.push(v_sh);
    let k = Peak {
        cfg,
        b_words,
        a_words: cfg.m * cfg.k * es / 4,
        types: (t_a, t_b, t_acc, t_res),
        buffers: (v_in, v_out, v_sh),
        ptrs: (
            b.ptr(StorageClass::StorageBuffer, t_u32),
            b.ptr(StorageClass::StorageBuffer, t_res),
            b.ptr(StorageClass::Workgroup, t_u32),
        ),
    };
    let p_pc_u32 = b.ptr(StorageClass::PushConstant, t_u32);
    let p_fn_acc = b.ptr(StorageClass::Function, t_acc);
    let threads = SUBGROUPS * subgroup_size;

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let accs: Vec<_> = (0..CHAINS)
        .map(|_| b.b.variable(p_fn_acc, None, StorageClass::Function, None))
        .collect();
    let tid = b.b.load(t_u32, None, v_local, None, [])?;
    let sg = b.b.load(t_u32, None, v_sg, None, [])?;
    let wg = b.b.load(t_uvec3, None, v_wg, None, [])?;
    let wg_x = b.b.composite_extract(t_u32, None, wg, [0])?;
    let p_iters = b.b.access_chain(p_pc_u32, None, v_pc, [u0])?;
    let iters = b.b.load(t_u32, None, p_iters, None, [])?;
    k.stage_b_tiles(b, tid, threads)?;
    let a_frags = k.start_chains(b, &accs)?;
    b.counted_loop((u0, iters, 1), |b, i| {
        let parity = b.b.bitwise_and(t_u32, None, i, u1)?;
        k.step(b, parity, (&a_frags, &accs))
    })?;
    let sg_global = b.mul_u(wg_x, SUBGROUPS)?;
    let sg_global = b.b.i_add(t_u32, None, sg_global, sg)?;
    k.store_chains(b, sg_global, &accs)?;
    b.end_compute(f, threads)?;
    Ok(mb.finish())
}

/// What the kernel's stages share: the config, the words of a B tile and of an A fragment, the
/// matrix types (A, B, accumulator) and the result's, the input, output and shared buffers,
/// and the pointer types of input words, result elements and shared words.
struct Peak<'a> {
    cfg: &'a GPUSubgroupMatrixConfig,
    b_words: u32,
    a_words: u32,
    types: (Word, Word, Word, Word),
    buffers: (Word, Word, Word),
    ptrs: (Word, Word, Word),
}

impl Peak<'_> {
    /// Both B tiles (the words after the A fragments) staged into shared memory, `threads`
    /// invocations a word each per round, then a barrier.
    fn stage_b_tiles(&self, b: &mut ModuleBuilder, tid: Word, threads: u32) -> BuildResult<()> {
        let (t_bool, t_u32, u0) = (b.t_bool(), b.t_u32(), b.c_u32(0));
        let ((v_in, _, v_sh), (p_sb_u32, _, p_wg_u32)) = (self.buffers, self.ptrs);
        let np = Some(MemoryAccess::NON_PRIVATE_POINTER);
        for w in (0..2 * self.b_words).step_by(threads as usize) {
            let idx = b.add_u(tid, w)?;
            let c_total = b.c_u32(2 * self.b_words);
            let ok = b.b.u_less_than(t_bool, None, idx, c_total)?;
            b.if_then(ok, |b| {
                let src = b.add_u(idx, CHAINS * self.a_words)?;
                let p = b.b.access_chain(p_sb_u32, None, v_in, [u0, src])?;
                let x = b.b.load(t_u32, None, p, None, [])?;
                let q = b.b.access_chain(p_wg_u32, None, v_sh, [idx])?;
                b.b.store(q, x, np, [])?;
                Ok(())
            })?;
        }
        b.workgroup_barrier()
    }

    /// Each chain's A fragment, loaded once, and its accumulator zeroed.
    fn start_chains(&self, b: &mut ModuleBuilder, accs: &[Word]) -> BuildResult<Vec<Word>> {
        let ((t_a, _, t_acc, t_res), (v_in, _, _), (p_sb_u32, _, _)) = (self.types, self.buffers, self.ptrs);
        let u0 = b.c_u32(0);
        let a_stride = b.c_u32(self.cfg.k * self.cfg.component_type.size_bytes() / 4);
        let a_frags: Vec<_> = (0..CHAINS)
            .map(|c| {
                let off = b.c_u32(c * self.a_words);
                let p = b.b.access_chain(p_sb_u32, None, v_in, [u0, off])?;
                b.b.cooperative_matrix_load_khr(t_a, None, p, u0, Some(a_stride), None, [])
            })
            .collect::<BuildResult<_>>()?;
        let zero = b.c_bits(t_res, 0);
        let z = b.b.composite_construct(t_acc, None, [zero])?;
        for &v in accs {
            b.b.store(v, z, None, [])?;
        }
        Ok(a_frags)
    }

    /// One iteration: the B tile at `parity` (alternating, so no product is loop-invariant)
    /// times every chain's A fragment, into its accumulator.
    fn step(&self, b: &mut ModuleBuilder, parity: Word, (a_frags, accs): (&[Word], &[Word])) -> BuildResult<()> {
        let ((_, t_b, t_acc, _), (_, _, v_sh), (_, _, p_wg_u32)) = (self.types, self.buffers, self.ptrs);
        let u0 = b.c_u32(0);
        let b_stride = b.c_u32(self.cfg.n * self.cfg.component_type.size_bytes() / 4);
        let np = Some(MemoryAccess::NON_PRIVATE_POINTER);
        let ops = mul_add_operands(self.cfg);
        let off = b.mul_u(parity, self.b_words)?;
        let p = b.b.access_chain(p_wg_u32, None, v_sh, [off])?;
        let bf =
            b.b.cooperative_matrix_load_khr(t_b, None, p, u0, Some(b_stride), np, [])?;
        for (c, &v) in accs.iter().enumerate() {
            let acc = b.b.load(t_acc, None, v, None, [])?;
            let r =
                b.b.cooperative_matrix_mul_add_khr(t_acc, None, a_frags[c], bf, acc, ops)?;
            b.b.store(v, r, None, [])?;
        }
        Ok(())
    }

    /// Every accumulator element stored, subgroup `sg_global`'s chains one after another:
    /// nothing may be dead (NVIDIA's compiler drops MMAs whose results are unused).
    fn store_chains(&self, b: &mut ModuleBuilder, sg_global: Word, accs: &[Word]) -> BuildResult<()> {
        let ((_, _, t_acc, _), (_, v_out, _), (_, p_sb_res, _)) = (self.types, self.buffers, self.ptrs);
        let u0 = b.c_u32(0);
        let tile = self.cfg.m * self.cfg.n;
        let base = b.mul_u(sg_global, CHAINS * tile)?;
        for (c, &v) in accs.iter().enumerate() {
            let acc = b.b.load(t_acc, None, v, None, [])?;
            let at = b.add_u(base, c as u32 * tile)?;
            let p = b.b.access_chain(p_sb_res, None, v_out, [u0, at])?;
            let stride = b.c_u32(self.cfg.n);
            b.b.cooperative_matrix_store_khr(p, acc, u0, Some(stride), None, [])?;
        }
        Ok(())
    }
}
