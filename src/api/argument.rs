//! The operands every verb takes, of every residency, through one sealed pair of traits:
//! [`Input`] (A and B) and [`Output`] (C). Each names what it is once ([`In`], [`Out`]); the
//! verbs then check the combination and route it.

use super::batch::{BatchMut, BatchRef, DeviceBatch};
use super::dist::DistMatrix;
use super::matrix::{DeviceMatrix, Element, MatMut, MatRef};
use super::operand::BufferMatrix;
use super::pinned::PinnedMatrix;
use super::quant::{QuantMatrix, QuantRef, QuantView};
use half::f16;

impl<'a, T: Element> In<'a, T> {
    /// The same operand, borrowed for a shorter time (an ndarray view makes `In` invariant in
    /// its lifetime, so this is spelled out).
    #[cfg(feature = "ndarray")]
    pub(crate) fn shorten<'s>(self) -> In<'s, T>
    where
        'a: 's,
    {
        match self {
            In::Host(m) => In::Host(m),
            In::HostBatch(b) => In::HostBatch(b),
            In::Device(m) => In::Device(m),
            In::Buffer(m) => In::Buffer(m),
            In::DeviceBatch(b) => In::DeviceBatch(b),
            In::Pinned(m) => In::Pinned(m),
            In::Dist(m) => In::Dist(m),
            In::Quant(q) => In::Quant(q),
            In::Array(v) => In::Array(v.reborrow()),
        }
    }

    /// Where it lives, for messages.
    pub(crate) fn residency(&self) -> &'static str {
        match self {
            In::Host(_) => "a host matrix",
            In::HostBatch(_) => "a host batch",
            In::Device(_) => "a device matrix",
            In::Buffer(_) => "a buffer matrix",
            In::DeviceBatch(_) => "a device batch",
            In::Pinned(_) => "a pinned matrix",
            In::Dist(_) => "a distributed matrix",
            In::Quant(_) => "a quantized matrix",
            #[cfg(feature = "ndarray")]
            In::Array(_) => "an ndarray view",
        }
    }

    /// Whether it is held in a block format.
    pub(crate) fn is_quantized(&self) -> bool {
        matches!(self, In::Quant(_))
    }
}

impl<T: Element> Out<'_, T> {
    /// Where it lives, for messages.
    pub(crate) fn residency(&self) -> &'static str {
        match self {
            Out::Host(_) => "a host matrix",
            Out::HostBatch(_) => "a host batch",
            Out::Device(_) => "a device matrix",
            Out::Buffer(_) => "a buffer matrix",
            Out::DeviceBatch(_) => "a device batch",
            Out::Pinned(_) => "a pinned matrix",
            Out::Dist(_) => "a distributed matrix",
            #[cfg(feature = "ndarray")]
            Out::Array(_) => "an ndarray view",
        }
    }
}

mod private {
    use super::{
        BatchMut, BatchRef, BufferMatrix, DeviceBatch, DeviceMatrix, DistMatrix, Element, MatMut, MatRef, PinnedMatrix,
        QuantView,
    };

    /// What an input operand is.
    pub enum In<'a, T: Element> {
        Host(MatRef<'a, T>),
        HostBatch(BatchRef<'a, T>),
        Device(&'a DeviceMatrix<T>),
        Buffer(&'a BufferMatrix<T>),
        DeviceBatch(&'a DeviceBatch<T>),
        Pinned(&'a PinnedMatrix<T>),
        Dist(&'a DistMatrix<T>),
        /// Weights in a block format, read as their f16 or f32 values.
        Quant(QuantView<'a>),
        #[cfg(feature = "ndarray")]
        Array(ndarray::ArrayView2<'a, T>),
    }

    /// What an output operand is.
    pub enum Out<'a, T: Element> {
        Host(MatMut<'a, T>),
        HostBatch(BatchMut<'a, T>),
        Device(&'a mut DeviceMatrix<T>),
        Buffer(&'a mut BufferMatrix<T>),
        DeviceBatch(&'a mut DeviceBatch<T>),
        Pinned(&'a mut PinnedMatrix<T>),
        Dist(&'a mut DistMatrix<T>),
        #[cfg(feature = "ndarray")]
        Array(ndarray::ArrayViewMut2<'a, T>),
    }

    /// Seals [`super::Input`].
    pub trait SealedIn<'a, T: Element> {
        fn into_in(self) -> In<'a, T>;
    }

    /// Seals [`super::Output`].
    pub trait SealedOut<'a, T: Element> {
        fn into_out(self) -> Out<'a, T>;
    }
}

pub(crate) use private::{In, Out};

/// A or B of a [`Matmul`](crate::Matmul): a host [`MatRef`] or [`BatchRef`], a
/// `&`[`DeviceMatrix`], `&`[`BufferMatrix`] or `&`[`DeviceBatch`], a `&`[`PinnedMatrix`], a
/// `&`[`DistMatrix`] (several GPUs), an ndarray view (feature `ndarray`), or weights in a block
/// format (`&`[`QuantMatrix`] or its transpose [`QuantRef`], as f16 or f32). Sealed.
pub trait Input<'a, T: Element>: private::SealedIn<'a, T> {}

/// C of a [`Matmul`](crate::Matmul): a host [`MatMut`] or [`BatchMut`], a
/// `&mut` [`DeviceMatrix`], [`BufferMatrix`] or [`DeviceBatch`], a `&mut` [`PinnedMatrix`], a
/// `&mut` [`DistMatrix`] (several GPUs), or an ndarray view (feature `ndarray`). Sealed.
pub trait Output<'a, T: Element>: private::SealedOut<'a, T> {}

macro_rules! input {
    ($ty:ty, $variant:ident) => {
        impl<'a, T: Element> private::SealedIn<'a, T> for $ty {
            fn into_in(self) -> In<'a, T> {
                In::$variant(self)
            }
        }
        impl<'a, T: Element> Input<'a, T> for $ty {}
    };
}

/// A matrix the caller holds mutably reads as well (a C that a later GEMM takes as A).
macro_rules! input_from_mut {
    ($ty:ty, $variant:ident) => {
        impl<'a, T: Element> private::SealedIn<'a, T> for &'a mut $ty {
            fn into_in(self) -> In<'a, T> {
                In::$variant(self)
            }
        }
        impl<'a, T: Element> Input<'a, T> for &'a mut $ty {}
    };
}

macro_rules! output {
    ($ty:ty, $variant:ident) => {
        impl<'a, T: Element> private::SealedOut<'a, T> for $ty {
            fn into_out(self) -> Out<'a, T> {
                Out::$variant(self)
            }
        }
        impl<'a, T: Element> Output<'a, T> for $ty {}
    };
}

input!(MatRef<'a, T>, Host);
input!(BatchRef<'a, T>, HostBatch);
input!(&'a DeviceMatrix<T>, Device);
input!(&'a BufferMatrix<T>, Buffer);
input!(&'a DeviceBatch<T>, DeviceBatch);
input!(&'a PinnedMatrix<T>, Pinned);
input!(&'a DistMatrix<T>, Dist);
#[cfg(feature = "ndarray")]
input!(ndarray::ArrayView2<'a, T>, Array);
input_from_mut!(DeviceMatrix<T>, Device);
input_from_mut!(BufferMatrix<T>, Buffer);
input_from_mut!(DeviceBatch<T>, DeviceBatch);

/// Quantized weights read as f16 or f32 values.
macro_rules! quantized {
    ($t:ty) => {
        impl<'a> private::SealedIn<'a, $t> for QuantRef<'a, $t> {
            fn into_in(self) -> In<'a, $t> {
                In::Quant(self.view)
            }
        }
        impl<'a> Input<'a, $t> for QuantRef<'a, $t> {}
    };
}
quantized!(f16);
quantized!(f32);
impl<'a> private::SealedIn<'a, f16> for &'a QuantMatrix {
    fn into_in(self) -> In<'a, f16> {
        In::Quant(self.as_ref().view)
    }
}
impl<'a> Input<'a, f16> for &'a QuantMatrix {}

output!(MatMut<'a, T>, Host);
output!(BatchMut<'a, T>, HostBatch);
output!(&'a mut DeviceMatrix<T>, Device);
output!(&'a mut BufferMatrix<T>, Buffer);
output!(&'a mut DeviceBatch<T>, DeviceBatch);
output!(&'a mut PinnedMatrix<T>, Pinned);
output!(&'a mut DistMatrix<T>, Dist);
#[cfg(feature = "ndarray")]
output!(ndarray::ArrayViewMut2<'a, T>, Array);

/// The operand an input is.
pub(crate) fn input<'a, T: Element>(x: impl Input<'a, T>) -> In<'a, T> {
    private::SealedIn::into_in(x)
}

/// The operand an output is.
pub(crate) fn output<'a, T: Element>(x: impl Output<'a, T>) -> Out<'a, T> {
    private::SealedOut::into_out(x)
}
