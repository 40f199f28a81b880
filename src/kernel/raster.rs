//! Workgroup -> tile order, and where the workgroup's tile lies.

use super::builder::{BuildResult, ModuleBuilder};
use super::push::batch_offsets;
use rspirv::spirv::Word;

/// The tile (x along N, y along M) a workgroup computes. With `group` > 0, groups of that many
/// tile rows are walked column by column (a bijection on tiles), so consecutive workgroups share
/// A rows and B columns in L2.
pub(super) fn raster(
    b: &mut ModuleBuilder,
    (wg_x, wg_y): (Word, Word),
    (pm, pn): (Word, Word),
    (bm, bn): (u32, u32),
    group: u32,
) -> BuildResult<(Word, Word)> {
    if group == 0 {
        return Ok((wg_x, wg_y));
    }
    let (t_u32, t_bool) = (b.t_u32(), b.t_bool());
    let gx = b.add_u(pn, bn - 1)?;
    let gx = b.div_u(gx, bn)?;
    let gy = b.add_u(pm, bm - 1)?;
    let gy = b.div_u(gy, bm)?;
    let row_major_id = b.b.i_mul(t_u32, None, wg_y, gx)?;
    let linear = b.b.i_add(t_u32, None, row_major_id, wg_x)?;
    let per_group = b.mul_u(gx, group)?;
    let first = b.b.u_div(t_u32, None, linear, per_group)?;
    let first_row = b.mul_u(first, group)?;
    let rows_left = b.b.i_sub(t_u32, None, gy, first_row)?;
    let c_g = b.c_u32(group);
    let rows_lt = b.b.u_less_than(t_bool, None, rows_left, c_g)?;
    let rows = b.b.select(t_u32, None, rows_lt, rows_left, c_g)?;
    let in_group = b.b.u_mod(t_u32, None, linear, per_group)?;
    let ty = b.b.u_mod(t_u32, None, in_group, rows)?;
    let ty = b.b.i_add(t_u32, None, first_row, ty)?;
    let tx = b.b.u_div(t_u32, None, in_group, rows)?;
    Ok((tx, ty))
}

/// A grouped kernel's tile table ([`tile`]), declared at binding 3 (where the accurate split's
/// scale words go, which a grouped kernel never reads); `None` for other kernels.
pub(super) fn group_table(b: &mut ModuleBuilder, grouped: bool) -> Option<Word> {
    let t_u32 = b.t_u32();
    grouped.then(|| b.storage_buffer(t_u32, 4, 3, true))
}

/// Where a workgroup's tile lies: the offsets of its batch entry's (or group's) A and B (in
/// vectors) and C (in elements), the rows its problem ends at (M, or the group's end row),
/// the tile's first row and column, and a grouped kernel's group.
pub(super) struct Tile {
    pub offsets: [Word; 3],
    pub pm: Word,
    pub m0: Word,
    pub n0: Word,
    pub group: Option<Word>,
}

/// The tile of workgroup `wg` (its id) in a problem of `pm` x `pn` with `bm` x `bn` tiles. With
/// `groups` (a grouped kernel's tile table, three words per tile row: group, first row, the
/// group's end row), workgroup row y computes tile row y of the table: the group stands in for
/// the batch entry (A and C have no batch stride there, B one weight per group) and its end
/// row for M, so a tile never reads or writes past its group. The raster is row by row there.
pub(super) fn tile(
    b: &mut ModuleBuilder,
    (v_pc, wg): (Word, Word),
    (pm, pn): (Word, Word),
    (bm, bn): (u32, u32),
    raster_group: u32,
    groups: Option<Word>,
) -> BuildResult<Tile> {
    let t_u32 = b.t_u32();
    let wg_x = b.b.composite_extract(t_u32, None, wg, [0])?;
    let wg_y = b.b.composite_extract(t_u32, None, wg, [1])?;
    let Some(v_groups) = groups else {
        let z = b.b.composite_extract(t_u32, None, wg, [2])?;
        let offsets = batch_offsets(b, v_pc, z)?;
        let (tx, ty) = raster(b, (wg_x, wg_y), (pm, pn), (bm, bn), raster_group)?;
        return Ok(Tile {
            offsets,
            pm,
            m0: b.mul_u(ty, bm)?,
            n0: b.mul_u(tx, bn)?,
            group: None,
        });
    };
    let p_word = b.ptr(rspirv::spirv::StorageClass::StorageBuffer, t_u32);
    let c0 = b.c_u32(0);
    let first = b.mul_u(wg_y, 3)?;
    let word = |b: &mut ModuleBuilder, i: u32| -> BuildResult<Word> {
        let at = b.add_u(first, i)?;
        let p = b.b.access_chain(p_word, None, v_groups, [c0, at])?;
        b.b.load(t_u32, None, p, None, [])
    };
    let group = word(b, 0)?;
    let m0 = word(b, 1)?;
    let end = word(b, 2)?;
    Ok(Tile {
        offsets: batch_offsets(b, v_pc, group)?,
        pm: end,
        m0,
        n0: b.mul_u(wg_x, bn)?,
        group: Some(group),
    })
}

/// A grouped kernel's workgroup returns at once where its table row is empty (first row at or
/// past the group's end: the unused rows of a table built on the device,
/// [`super::group_table`]). Every value is the workgroup's, so the return is uniform. The block
/// after it is open when this returns; other kernels emit nothing.
pub(super) fn skip_empty(b: &mut ModuleBuilder, tile: &Tile) -> BuildResult<()> {
    if tile.group.is_none() {
        return Ok(());
    }
    let t_bool = b.t_bool();
    let empty = b.b.u_greater_than_equal(t_bool, None, tile.m0, tile.pm)?;
    b.return_if(empty)
}
