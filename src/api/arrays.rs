//! ndarray interop (feature `ndarray`): [`Context::run`] on [`ArrayView2`] / [`ArrayViewMut2`], upload and
//! download of device matrices from and to arrays.
//!
//! A view in standard (row-major) or Fortran (column-major) layout is used in place, whatever its
//! leading dimension, when its memory is one contiguous run; any other view (rows with gaps
//! between them, a non-unit inner stride, negative strides) is copied once into a standard array
//! first. C is written in place when its memory is contiguous in either order, else through a
//! row-major copy that is assigned back.

use super::argument::{In, Out};
use super::context::Context;
use super::matmul::Matmul;
use super::matrix::{DeviceMatrix, Element, MatMut, MatRef};
use crate::error::Result;
use crate::tiling::Layout;
use ndarray::{Array2, ArrayView2, ShapeBuilder};

/// A host matrix view of `a`, in place when its memory is contiguous in either order, else of a
/// standard-layout copy kept in `copy`.
fn host_view<'a, T: Element>(a: &'a ArrayView2<'_, T>, copy: &'a mut Option<Array2<T>>) -> MatRef<'a, T> {
    let (rows, cols) = a.dim();
    if let Some(s) = a.as_slice() {
        return MatRef::new(s, rows, cols);
    }
    if a.t().is_standard_layout() {
        if let Some(s) = a.as_slice_memory_order() {
            return MatRef::col_major(s, rows, cols);
        }
    }
    let owned = copy.insert(a.as_standard_layout().into_owned());
    MatRef::new(owned.as_slice().expect("standard layout"), rows, cols)
}

/// [`Context::run`] with ndarray views among the operands (see the module docs for which are
/// used in place and which are copied); the others pass through as they are.
pub(crate) fn run_arrays<TA: Element, TB: Element, TC: Element>(
    ctx: &Context,
    op: &Matmul<'_>,
    a: In<'_, TA>,
    b: In<'_, TB>,
    c: Out<'_, TC>,
) -> Result<()> {
    let (va, vb, mut ca, mut cb);
    let a: In<'_, TA> = match a {
        In::Array(v) => {
            va = v;
            ca = None;
            In::Host(host_view(&va, &mut ca))
        }
        a => a.shorten(),
    };
    let b: In<'_, TB> = match b {
        In::Array(v) => {
            vb = v;
            cb = None;
            In::Host(host_view(&vb, &mut cb))
        }
        b => b.shorten(),
    };
    let Out::Array(mut c) = c else {
        return ctx.run_operands(op, a, b, c);
    };
    let (rows, cols) = c.dim();
    if let Some(s) = c.as_slice_mut() {
        return ctx.run_operands(op, a, b, Out::Host(MatMut::new(s, rows, cols)));
    }
    if c.t().is_standard_layout() {
        if let Some(s) = c.as_slice_memory_order_mut() {
            return ctx.run_operands(op, a, b, Out::Host(MatMut::col_major(s, rows, cols)));
        }
    }
    let mut tmp = c.as_standard_layout().into_owned();
    let out = tmp.as_slice_mut().expect("standard layout");
    ctx.run_operands(op, a, b, Out::Host(MatMut::new(out, rows, cols)))?;
    c.assign(&tmp);
    Ok(())
}

impl Context {
    /// Uploads an array (its storage order is kept: a Fortran-layout array becomes a
    /// column-major device matrix).
    pub fn upload_array<T: Element>(&self, a: ArrayView2<'_, T>) -> Result<DeviceMatrix<T>> {
        let mut copy = None;
        self.upload(host_view(&a, &mut copy))
    }

    /// Downloads a device matrix into a new array of its shape (Fortran layout for a column-major
    /// device matrix).
    pub fn download_array<T: Element>(&self, m: &DeviceMatrix<T>) -> Result<Array2<T>> {
        let (outer, inner) = m.layout().outer_inner(m.rows(), m.cols());
        let mut data = vec![T::from_f64(0.0); outer * inner];
        self.download(m, MatMut::new(&mut data, outer, inner))?;
        let shape = (m.rows(), m.cols());
        let array = match m.layout() {
            Layout::RowMajor => Array2::from_shape_vec(shape, data),
            Layout::ColMajor => Array2::from_shape_vec(shape.f(), data),
        };
        Ok(array.expect("the shape matches the data"))
    }
}
