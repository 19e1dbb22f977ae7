//! strads' runtime: arrays, data loaders, plans and the executors that run
//! `#[strads::parallel_for]` loops. Users reach it through the `strads` facade crate.

mod access;
mod array;
mod cache;
mod error;

pub use access::{ArrayMut, ArrayRef};
pub use array::{DenseIter, DistArray, RandomValue, SparseArray, SparseIter};
pub use error::{Error, Result};
