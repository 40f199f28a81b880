//! Matrices kept on the devices between multi-device GEMMs: [`DistMatrix`], each device holding
//! the block of it that its part of a [`Split`] needs.

use super::MultiContext;
use crate::api::{
    check_matrix, DeviceMatrix, Direct, DistMatrix, DistPart, Element, GemmOptions, MatMut, MatRef, Matmul,
    PinnedMatrix,
};
use crate::error::{Error, Result};
use crate::plan::Split;
use crate::tiling::Layout;
use crate::Ticket;
use std::ops::Range;

/// Which operand of `C = A * B` a [`DistMatrix`] is cut for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Each device holds its part's rows, every column.
    A,
    /// Each device holds its part's columns, every row.
    B,
    /// Each device holds its part's block.
    C,
}

/// The blocks of `role`'s matrix each part of `split` needs: (device, rows, cols).
fn role_blocks(split: &Split, role: Role) -> Vec<(usize, Range<usize>, Range<usize>)> {
    split
        .parts
        .iter()
        .map(|p| match role {
            Role::A => (p.device, p.rows.clone(), 0..split.k),
            Role::B => (p.device, 0..split.k, p.cols.clone()),
            Role::C => (p.device, p.rows.clone(), p.cols.clone()),
        })
        .collect()
}

impl MultiContext {
    /// Uploads the blocks of `m` that `role` needs under `split` to their devices, all devices
    /// at once (A's rows are sent to each device of a grid row, B's columns to each of a column).
    pub fn distribute<T: Element>(&self, m: MatRef<'_, T>, split: &Split, role: Role) -> Result<DistMatrix<T>> {
        self.distribute_with(m, split, role, None)
    }

    /// [`MultiContext::distribute`] from a pinned matrix: each device's copy engine reads its
    /// blocks in place where the matrix is imported on it (else they are staged).
    pub fn distribute_pinned<T: Element>(
        &self,
        m: &PinnedMatrix<T>,
        split: &Split,
        role: Role,
    ) -> Result<DistMatrix<T>> {
        self.distribute_with(m.as_ref(), split, role, Some(&m.direct()))
    }

    fn distribute_with<T: Element>(
        &self,
        m: MatRef<'_, T>,
        split: &Split,
        role: Role,
        direct: Option<&Direct>,
    ) -> Result<DistMatrix<T>> {
        check_matrix("matrix", &m)?;
        split.check((split.m, split.n, split.k), self.contexts.len())?;
        let want = match role {
            Role::A => (split.m, split.k),
            Role::B => (split.k, split.n),
            Role::C => (split.m, split.n),
        };
        if (m.rows, m.cols) != want {
            return Err(Error::ShapeMismatch(format!(
                "a {}x{} matrix as {role:?} of a {}x{}x{} split: {role:?} is {}x{}",
                m.rows, m.cols, split.m, split.n, split.k, want.0, want.1
            )));
        }
        let blocks = role_blocks(split, role);
        let items = blocks
            .iter()
            .map(|(d, rows, cols)| (*d, (rows.clone(), cols.clone())))
            .collect();
        let results = super::on_each(items, |d, (rows, cols)| {
            let ctx = &self.contexts[d];
            let block = m.block(rows, cols);
            match direct.and_then(|x| x.lines_of(&ctx.device, &block)) {
                Some(lines) => ctx.upload_in_place(&block, lines),
                None => ctx.upload(block),
            }
        });
        let matrices = self.first_error(results)?;
        Ok(DistMatrix {
            rows: m.rows,
            cols: m.cols,
            parts: blocks
                .into_iter()
                .zip(matrices)
                .map(|((device, rows, cols), matrix)| DistPart {
                    device,
                    rows,
                    cols,
                    matrix,
                })
                .collect(),
        })
    }

    /// A zero C for `split`, each device holding its block (row-major).
    pub fn zeros<T: Element>(&self, split: &Split) -> Result<DistMatrix<T>> {
        split.check((split.m, split.n, split.k), self.contexts.len())?;
        let mut parts = Vec::with_capacity(split.parts.len());
        for p in &split.parts {
            let matrix = self.contexts[p.device]
                .zeros::<T>(p.rows.len(), p.cols.len())
                .map_err(|e| self.on_device(p.device, e))?;
            parts.push(DistPart {
                device: p.device,
                rows: p.rows.clone(),
                cols: p.cols.clone(),
                matrix,
            });
        }
        Ok(DistMatrix {
            rows: split.m,
            cols: split.n,
            parts,
        })
    }

    /// `c = alpha * a * b + beta * c` where every operand stays on the devices: each device
    /// multiplies its blocks, all at once, and no data moves. Each block of C needs, on its
    /// device, A's block of the same rows and every column and B's of every row and the same
    /// columns (what [`MultiContext::distribute`] makes for one split). Returns when every
    /// device is done; an error names the device.
    pub(crate) fn gemm_distributed<TA: Element, TB: Element, TC: Element>(
        &self,
        a: &DistMatrix<TA>,
        b: &DistMatrix<TB>,
        c: &mut DistMatrix<TC>,
        options: &GemmOptions,
    ) -> Result<()> {
        crate::plan::check_shapes((a.rows, a.cols), (b.rows, b.cols), (c.rows, c.cols))?;
        c.check_devices(self.contexts.len())?;
        let mut work = Vec::with_capacity(c.parts.len());
        for cp in &mut c.parts {
            let missing = |what: &str, rows: &Range<usize>, cols: &Range<usize>| {
                Error::InvalidOperand(format!(
                    "C's block {:?} x {:?} on device {} needs {what}'s block {rows:?} x {cols:?} there; \
                     distribute {what} with the split C was made for",
                    cp.rows, cp.cols, cp.device
                ))
            };
            let (a_rows, a_cols) = (cp.rows.clone(), 0..a.cols);
            let (b_rows, b_cols) = (0..b.rows, cp.cols.clone());
            let ap = a
                .part(cp.device, &a_rows, &a_cols)
                .ok_or_else(|| missing("A", &a_rows, &a_cols))?;
            let bp = b
                .part(cp.device, &b_rows, &b_cols)
                .ok_or_else(|| missing("B", &b_rows, &b_cols))?;
            work.push((cp.device, &ap.matrix, &bp.matrix, &mut cp.matrix));
        }
        // Enqueue on every device first (each call validates), so nothing runs unless all can.
        let mut streams = Vec::with_capacity(work.len());
        for (d, am, bm, cm) in work {
            let mut s = self.contexts[d].stream().map_err(|e| self.on_device(d, e))?;
            s.run(&Matmul::with_options(options), am, bm, cm)
                .map_err(|e| self.on_device(d, e))?;
            streams.push((d, s));
        }
        let tickets: Vec<(usize, Result<Ticket>)> = streams.iter_mut().map(|(d, s)| (*d, s.submit())).collect();
        let waited = tickets
            .into_iter()
            .map(|(d, t)| (d, t.and_then(|t| t.wait())))
            .collect();
        self.first_error(waited).map(|_| ())
    }

    /// Copies a distributed matrix into a host matrix of its shape (either storage order). Its
    /// blocks must cover it exactly once, repeated blocks aside (a C always does).
    pub fn gather<T: Element>(&self, m: &DistMatrix<T>, out: MatMut<'_, T>) -> Result<()> {
        self.gather_with(m, out, None)
    }

    /// [`MultiContext::gather`] into a pinned matrix: each block stored in the matrix's order is
    /// written in place by its device's copy engine where the matrix is imported on it; the rest
    /// are copied through the host.
    pub fn gather_pinned<T: Element>(&self, m: &DistMatrix<T>, out: &mut PinnedMatrix<T>) -> Result<()> {
        let direct = out.direct();
        self.gather_with(m, out.as_mut(), Some(&direct))
    }

    fn gather_with<T: Element>(&self, m: &DistMatrix<T>, out: MatMut<'_, T>, direct: Option<&Direct>) -> Result<()> {
        check_matrix("gather target", &out.as_ref())?;
        m.check_devices(self.contexts.len())?;
        if (out.rows, out.cols) != (m.rows, m.cols) {
            return Err(Error::ShapeMismatch(format!(
                "gathering a {}x{} matrix into a {}x{} one",
                m.rows, m.cols, out.rows, out.cols
            )));
        }
        let mut unique: Vec<&DistPart<T>> = Vec::new();
        for p in &m.parts {
            if !unique.iter().any(|u| u.rows == p.rows && u.cols == p.cols) {
                unique.push(p);
            }
        }
        let as_split = Split {
            m: m.rows,
            n: m.cols,
            k: 1,
            grid: (1, 1),
            parts: unique
                .iter()
                .enumerate()
                .map(|(i, p)| super::SplitPart {
                    device: i,
                    rows: p.rows.clone(),
                    cols: p.cols.clone(),
                })
                .collect(),
        };
        as_split
            .check((m.rows, m.cols, 1), unique.len())
            .map_err(|e| Error::InvalidOperand(format!("the blocks do not tile the matrix: {e}")))?;
        // Blocks whose device writes them in place, found before any thread starts.
        let view = out.as_ref();
        let items = unique
            .iter()
            .map(|p| {
                let ctx = &self.contexts[p.device];
                let block = view.block(p.rows.clone(), p.cols.clone());
                let lines = direct
                    .filter(|_| p.matrix.layout() == view.layout)
                    .and_then(|x| x.lines_of(&ctx.device, &block));
                (p.device, (&p.matrix, lines))
            })
            .collect();
        let results = super::on_each(items, |d, (matrix, lines)| match lines {
            Some(lines) => self.contexts[d].download_in_place(matrix, lines).map(|()| None),
            None => download(&self.contexts[d], matrix).map(Some),
        });
        let blocks = self.first_error(results)?;
        for (p, data) in unique.iter().zip(blocks) {
            let Some(data) = data else { continue };
            let (r, c) = (p.rows.len(), p.cols.len());
            for i in 0..r {
                for j in 0..c {
                    let v = match p.matrix.layout() {
                        Layout::RowMajor => data[i * c + j],
                        Layout::ColMajor => data[j * r + i],
                    };
                    let (gi, gj) = (p.rows.start + i, p.cols.start + j);
                    let at = match out.layout {
                        Layout::RowMajor => gi * out.ld + gj,
                        Layout::ColMajor => gj * out.ld + gi,
                    };
                    out.data[at] = v;
                }
            }
        }
        Ok(())
    }
}

/// A device matrix's elements in its storage order, densely packed.
fn download<T: Element>(ctx: &crate::Context, m: &DeviceMatrix<T>) -> Result<Vec<T>> {
    let (outer, inner) = m.layout().outer_inner(m.rows(), m.cols());
    let mut data = vec![T::from_f64(0.0); outer * inner];
    ctx.download(m, MatMut::new(&mut data, outer, inner))?;
    Ok(data)
}
