//! An operand copied into the other storage order in a pass of its own, into scratch memory the
//! GEMM then reads in that order: a 16-bit operand as it is, an f32 operand rounded to f16 or
//! bf16 on the way, or split into the accurate mode's f16 `hi` and `lo` planes (the converting
//! passes of [`super::narrow`], transposed). On NVIDIA's
//! workgroup-scope kernel the layout with A column-major and B row-major (each operand
//! contiguous along M or N) runs 5-11% faster than the others (docs/perf/JOURNAL.md), which
//! repays a copy of an operand where the GEMM is large against it.
//!
//! An 8-bit integer operand is copied as it is too, into the order NVIDIA's int8 kernel reads
//! fastest, which is the other one: A row-major, B column-major (4096^3 i8 on the H200: 534
//! TOPS there, 155-298 in the other layouts).
//!
//! Each invocation transposes a square block in its registers: it reads the block's source rows
//! (16-byte vectors) and writes its columns as the copy's rows (one 16-byte vector each). A
//! block is 8 x 8 for 16-bit copies and 16 x 16 for 8-bit ones, so that a copy row's part is
//! one vector either way. A workgroup's 256 invocations cover 32 blocks of source rows by 8 of
//! elements, eight invocations along each source row so that every load instruction reads whole
//! 128-byte lines, and it walks such tiles in a grid-stride loop. No shared memory and no
//! barrier: each invocation keeps eight (16-bit), sixteen (f32 or 8-bit) loads in flight, where
//! the shared-memory transpose this replaced kept two and capped the pass at 2.1-2.8 TB/s on the
//! H200 (docs/perf/JOURNAL.md). Source rows past the last are read as zero, so a copy
//! row's padding up to its leading dimension is zero (the GEMM's K may run along it); copy rows
//! past the source's row length (its padding) are not written.
//!
//! Bindings: 0 = the source (16-byte vectors), 2 = the copy (16-byte vectors), 3 = the scale
//! words (planes only). Push constants reuse [`super::PushConstants`]: `m` and `n` = the
//! source's rows and elements per row in storage order, `ldc` = the copy's rows (at least `n`;
//! those past it are zero), `lda_vec` and `a_off_vec` = the source's leading dimension and
//! first vector, `ldb_vec` and `c_off` = the copy's, in vectors; `k` = workgroups dispatched;
//! planes: `b_off_vec` = how far the `lo` plane lies after the `hi` plane, in vectors, and
//! `col0` = the scale word.

use super::builder::{BuildResult, ModuleBuilder};
use super::convert::{plane_scale, store_converted};
use super::push::{copy_windows, Pc};
use crate::config::ComponentType;
use rspirv::spirv::{BuiltIn, FunctionControl, StorageClass, Word};

/// Invocations per workgroup.
pub const THREADS: u32 = 256;
/// Invocations along a source row: each load instruction reads whole 128-byte lines (eight
/// 16-byte vectors; two lines for f32 sources).
const ACROSS: u32 = 8;
/// Most workgroups per dispatch: enough to keep a large GPU's memory busy.
pub const MAX_GROUPS: u32 = 8192;
/// Bytes per vector, loaded and stored.
const VEC_BYTES: u32 = 16;

/// The block one invocation transposes, in elements on a side, for a copy of `copy_bytes`-byte
/// elements (1, else 2): one 16-byte vector of a copy row.
const fn block(copy_bytes: u32) -> u32 {
    if copy_bytes == 1 {
        VEC_BYTES
    } else {
        VEC_BYTES / 2
    }
}

/// A workgroup's tile for a copy of `copy_bytes`-byte elements (1, else 2): source rows (copy
/// elements per row), then source elements per row (copy rows).
pub const fn tile(copy_bytes: u32) -> (u32, u32) {
    (THREADS / ACROSS * block(copy_bytes), ACROSS * block(copy_bytes))
}

/// What the pass writes.
#[derive(Copy, Clone, Debug)]
pub(super) enum Output {
    /// A 16-bit source, bit for bit.
    Copy16,
    /// An 8-bit source, bit for bit.
    Copy8,
    /// An f32 source rounded to this type (f16 or bf16).
    Rounded(ComponentType),
    /// An f32 source split into the accurate mode's scaled f16 `hi` and `lo` planes.
    Planes,
}

impl Output {
    /// Bytes per source element.
    fn source_bytes(self) -> u32 {
        match self {
            Output::Copy16 => 2,
            Output::Copy8 => 1,
            Output::Rounded(_) | Output::Planes => 4,
        }
    }

    /// Bytes per copy element.
    fn copy_bytes(self) -> u32 {
        match self {
            Output::Copy8 => 1,
            _ => 2,
        }
    }
}

/// Emits the pass writing `output`.
pub(super) fn emit(output: Output) -> BuildResult<Vec<u32>> {
    let (tile_rows, tile_cols) = tile(output.copy_bytes());
    let mut mb = ModuleBuilder::new();
    let b = &mut mb;
    let t_void = b.t_void();
    let t_u32 = b.t_u32();
    let t_uvec3 = b.t_uvec(3);
    let t_uvec4 = b.t_uvec(4);
    let v_local = b.builtin_input(t_u32, BuiltIn::LocalInvocationIndex);
    let v_wg = b.builtin_input(t_uvec3, BuiltIn::WorkgroupId);
    let v_pc = b.push_constant_block(super::push::PC_MEMBERS);
    let v_src = b.storage_buffer(t_uvec4, 16, 0, true);
    let v_dst = b.storage_buffer(t_uvec4, 16, 2, false);
    let v_scale = matches!(output, Output::Planes).then(|| b.storage_buffer(t_u32, 4, 3, true));
    let p_sb_uvec4 = b.ptr(StorageClass::StorageBuffer, t_uvec4);
    let u0 = b.c_u32(0);
    let zero4 = b.b.constant_null(t_uvec4);

    let t_fn = b.b.type_function(t_void, []);
    let f = b.b.begin_function(t_void, None, FunctionControl::NONE, t_fn)?;
    b.b.begin_block(None)?;
    let pc = |b: &mut ModuleBuilder, i: Pc| b.push_constant(v_pc, i as u32);
    let (outer, inner, rows_out, groups) = (pc(b, Pc::M)?, pc(b, Pc::N)?, pc(b, Pc::Ldc)?, pc(b, Pc::K)?);
    let [src_ld, src_off, dst_ld, dst_off] = copy_windows(b, v_pc)?;
    let pass = Pass {
        output,
        side: block(output.copy_bytes()),
        per_vec: VEC_BYTES / output.source_bytes(),
        src: (v_src, src_ld, src_off),
        dst: (v_dst, dst_ld, dst_off, p_sb_uvec4),
        sizes: (outer, inner, rows_out),
        planes: plane_scale(b, v_pc, v_scale)?,
        consts: (u0, zero4),
    };
    let lid = b.b.load(t_u32, None, v_local, None, [])?;
    let wg = b.b.load(t_uvec3, None, v_wg, None, [])?;
    let first = b.b.composite_extract(t_u32, None, wg, [0])?;
    // This invocation's block within the tile: column block `across`, row block `down`.
    let across = b.mod_u(lid, ACROSS)?;
    let down = b.div_u(lid, ACROSS)?;
    let block_col = b.mul_u(across, pass.side)?;
    let block_row = b.mul_u(down, pass.side)?;
    // Tiles cover the copy's rows, the source's columns and any zero rows after them.
    let tiles_x = b.add_u(rows_out, tile_cols - 1)?;
    let tiles_x = b.div_u(tiles_x, tile_cols)?;
    let tiles_y = b.add_u(outer, tile_rows - 1)?;
    let tiles_y = b.div_u(tiles_y, tile_rows)?;
    let tiles = b.b.i_mul(t_u32, None, tiles_x, tiles_y)?;
    b.counted_loop_by((first, tiles, groups), |b, t| {
        let ty = b.b.u_div(t_u32, None, t, tiles_x)?;
        let tx = b.b.u_mod(t_u32, None, t, tiles_x)?;
        let r0 = b.mul_u(ty, tile_rows)?;
        let r0 = b.b.i_add(t_u32, None, r0, block_row)?;
        let c0 = b.mul_u(tx, tile_cols)?;
        let c0 = b.b.i_add(t_u32, None, c0, block_col)?;
        let rows = pass.load_block(b, (r0, c0))?;
        pass.store_block(b, &rows, (r0, c0))
    })?;
    b.end_compute(f, THREADS)?;
    Ok(mb.finish())
}

/// What the pass's stages share: the output, a block's side in elements and the source's
/// elements per vector; the source (binding, leading dimension and first vector) and the copy
/// (the same and the pointer type of its vectors); the source's rows and elements per row and
/// the copy's rows; the planes' scale where it splits; the constants 0 and the zero vector.
struct Pass {
    output: Output,
    side: u32,
    per_vec: u32,
    src: (Word, Word, Word),
    dst: (Word, Word, Word, Word),
    sizes: (Word, Word, Word),
    planes: Option<(Word, Word)>,
    consts: (Word, Word),
}

impl Pass {
    /// The block at source row `r0` and element `c0`: its rows, each as `side / per_vec`
    /// vectors, every load issued first; zero past the source's rows and row length.
    fn load_block(&self, b: &mut ModuleBuilder, (r0, c0): (Word, Word)) -> BuildResult<Vec<Vec<Word>>> {
        let (t_bool, t_u32) = (b.t_bool(), b.t_u32());
        let ((v_src, src_ld, src_off), (outer, inner, _)) = (self.src, self.sizes);
        let c0_vec = b.div_u(c0, self.per_vec)?;
        let src_base = b.b.i_add(t_u32, None, src_off, c0_vec)?;
        let mut rows = Vec::with_capacity(self.side as usize);
        for i in 0..self.side {
            let r = b.add_u(r0, i)?;
            let r_ok = b.b.u_less_than(t_bool, None, r, outer)?;
            let at = b.b.i_mul(t_u32, None, r, src_ld)?;
            let at = b.b.i_add(t_u32, None, at, src_base)?;
            let mut vecs = Vec::new();
            for v in 0..self.side / self.per_vec {
                let c = b.add_u(c0, v * self.per_vec)?;
                let c_ok = b.b.u_less_than(t_bool, None, c, inner)?;
                let ok = b.b.logical_and(t_bool, None, r_ok, c_ok)?;
                let idx = b.add_u(at, v)?;
                vecs.push(b.load_vector_or_zero((v_src, src_off), idx, ok, self.consts.1)?);
            }
            rows.push(vecs);
        }
        Ok(rows)
    }

    /// Element `j` of block row `i` (of `rows`), in a u32 (a 16- or 8-bit one in its low bits).
    fn element(&self, b: &mut ModuleBuilder, rows: &[Vec<Word>], (i, j): (usize, u32)) -> BuildResult<Word> {
        let (t_u32, per_vec) = (b.t_u32(), self.per_vec);
        let per_word = per_vec / 4;
        let w =
            b.b.composite_extract(t_u32, None, rows[i][(j / per_vec) as usize], [j % per_vec / per_word])?;
        let width = 32 / per_word;
        let bits = width * (j % per_word);
        let w = if bits == 0 {
            w
        } else {
            let shift = b.c_u32(bits);
            b.b.shift_right_logical(t_u32, None, w, shift)?
        };
        // Masked unless it was the word's top field.
        if bits + width < 32 {
            let mask = b.c_u32((1 << width) - 1);
            b.b.bitwise_and(t_u32, None, w, mask)
        } else {
            Ok(w)
        }
    }

    /// The block's columns as copy rows `c0 + j`, one 16-byte vector of each, where the copy
    /// has that row and the source row `r0`.
    fn store_block(&self, b: &mut ModuleBuilder, rows: &[Vec<Word>], (r0, c0): (Word, Word)) -> BuildResult<()> {
        let (t_bool, t_u32) = (b.t_bool(), b.t_u32());
        let ((_, _, dst_off, _), (outer, _, rows_out)) = (self.dst, self.sizes);
        // The block's first row is the first element of a copy vector.
        let r0_vec = b.div_u(r0, self.side)?;
        let dst_base = b.b.i_add(t_u32, None, dst_off, r0_vec)?;
        let col_ok = b.b.u_less_than(t_bool, None, r0, outer)?;
        for j in 0..self.side {
            let row = b.add_u(c0, j)?;
            let row_ok = b.b.u_less_than(t_bool, None, row, rows_out)?;
            let ok = b.b.logical_and(t_bool, None, row_ok, col_ok)?;
            b.if_then(ok, |b| {
                let mut w = vec![0; self.side as usize];
                for (i, w) in w.iter_mut().enumerate() {
                    *w = self.element(b, rows, (i, j))?;
                }
                self.store_row(b, &w, (row, dst_base))?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// Copy row `row`'s vector from `dst_base` holding the elements `w` (one a u32): packed
    /// back as the source had them, or converted.
    fn store_row(&self, b: &mut ModuleBuilder, w: &[Word], (row, dst_base): (Word, Word)) -> BuildResult<()> {
        let (t_u32, t_uvec4) = (b.t_u32(), b.t_uvec(4));
        let (v_dst, dst_ld, _, p_sb_uvec4) = self.dst;
        let quad = |b: &mut ModuleBuilder, w: &[u32]| b.b.composite_construct(t_uvec4, None, w.iter().copied());
        let at = b.b.i_mul(t_u32, None, row, dst_ld)?;
        let at = b.b.i_add(t_u32, None, at, dst_base)?;
        match self.output {
            Output::Copy16 | Output::Copy8 => {
                // The elements packed back into words, lowest first, as the source had them.
                let per_word = 4 / self.output.copy_bytes() as usize;
                let mut words = [0; 4];
                for (k, word) in words.iter_mut().enumerate() {
                    let mut acc = w[per_word * k];
                    for e in 1..per_word {
                        let shift = b.c_u32((32 / per_word * e) as u32);
                        let high = b.b.shift_left_logical(t_u32, None, w[per_word * k + e], shift)?;
                        acc = b.b.bitwise_or(t_u32, None, acc, high)?;
                    }
                    *word = acc;
                }
                let packed = quad(b, &words)?;
                let p = b.b.access_chain(p_sb_uvec4, None, v_dst, [self.consts.0, at])?;
                b.b.store(p, packed, None, [])
            }
            Output::Rounded(to) => {
                let halves = (quad(b, &w[..4])?, quad(b, &w[4..])?);
                store_converted(b, (v_dst, at), halves, to, None)
            }
            Output::Planes => {
                // The planes are f16 (the type is not used: they are split, not rounded).
                let halves = (quad(b, &w[..4])?, quad(b, &w[4..])?);
                store_converted(b, (v_dst, at), halves, ComponentType::F16, self.planes)
            }
        }
    }
}
