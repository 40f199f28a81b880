//! Workgroup -> tile order.

use super::builder::{BuildResult, ModuleBuilder};
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
