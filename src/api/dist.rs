//! [`DistMatrix`]: a matrix kept on several devices between multi-device GEMMs, each device
//! holding the block of it that its part of a [`Split`](crate::Split) needs. The data type
//! only; [`MultiContext`](crate::MultiContext) makes, multiplies and gathers them.

use super::matrix::{DeviceMatrix, Element};
use crate::error::{Error, Result};
use std::ops::Range;

/// A matrix held across the devices of a [`MultiContext`](crate::MultiContext), each device its block: made by
/// [`MultiContext::distribute`](crate::MultiContext::distribute) or [`MultiContext::zeros`](crate::MultiContext::zeros), multiplied by
/// [`MultiContext::run`](crate::MultiContext::run), read back by [`MultiContext::gather`](crate::MultiContext::gather). A C cut by rows is
/// the A of a next GEMM cut the same way, with no transfer.
pub struct DistMatrix<T: Element> {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) parts: Vec<DistPart<T>>,
}

/// One device's block of a [`DistMatrix`].
pub(crate) struct DistPart<T: Element> {
    pub(crate) device: usize,
    pub(crate) rows: Range<usize>,
    pub(crate) cols: Range<usize>,
    pub(crate) matrix: DeviceMatrix<T>,
}

impl<T: Element> DistMatrix<T> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Each block: its device and which rows and columns of the matrix it holds.
    pub fn blocks(&self) -> Vec<(usize, Range<usize>, Range<usize>)> {
        self.parts
            .iter()
            .map(|p| (p.device, p.rows.clone(), p.cols.clone()))
            .collect()
    }

    /// An error unless every block is on one of `devices` devices (a matrix of a larger
    /// [`MultiContext`](crate::MultiContext) names devices this one lacks).
    pub(crate) fn check_devices(&self, devices: usize) -> Result<()> {
        match self.parts.iter().find(|p| p.device >= devices) {
            Some(p) => Err(Error::InvalidOperand(format!(
                "a block on device {}; this MultiContext has {devices} devices",
                p.device
            ))),
            None => Ok(()),
        }
    }

    /// The part on `device` holding exactly these rows and columns.
    pub(crate) fn part(&self, device: usize, rows: &Range<usize>, cols: &Range<usize>) -> Option<&DistPart<T>> {
        self.parts
            .iter()
            .find(|p| p.device == device && p.rows == *rows && p.cols == *cols)
    }
}

impl<T: Element> std::fmt::Debug for DistMatrix<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DistMatrix<{}>({}x{}, {:?})",
            T::TYPE,
            self.rows,
            self.cols,
            self.blocks()
        )
    }
}
