//! Dense and sparse arrays: the data a parallel loop reads, writes and iterates, and the
//! ways a loop reaches them: access traits, workers' views, write-back buffers, captures,
//! reductions, per-iteration randomness and the small linear algebra the bodies use.

pub(crate) mod access;
pub(crate) mod away;
pub mod bridge;
pub(crate) mod buffer;
pub(crate) mod cache;
pub(crate) mod capture;
mod dense;
mod fresh;
pub(crate) mod huge;
pub(crate) mod inparts;
pub(crate) mod le;
pub(crate) mod linalg;
pub(crate) mod lists;
pub(crate) mod made;
pub(crate) mod pages;
pub(crate) mod reduce;
pub(crate) mod rng;
pub(crate) mod serial;
pub(crate) mod spans;
mod sparse;
pub(crate) mod spread;
pub(crate) mod view;

use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use dense::next_index;
pub use dense::{DenseIter, DistArray, RandomValue};
pub(crate) use sparse::{AwayValues, Lent, is_permutation, permute, unpermute};
pub use sparse::{SparseArray, SparseIter, SparseIterMut, SparseValuesIter};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A process-unique identity, so caches can tell arrays apart without comparing contents.
pub(crate) fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

#[cold]
#[inline(never)]
pub(crate) fn index_panic(idx: &[usize], shape: &[usize]) -> ! {
    panic!("index {idx:?} is outside the array's shape {shape:?}")
}

/// [`index_panic`] for an array a loop names: the message says which.
#[cold]
#[inline(never)]
pub(crate) fn index_panic_in(name: &str, idx: &[usize], shape: &[usize]) -> ! {
    panic!("strads: index {idx:?} of `{name}` is outside the array's shape {shape:?}")
}

/// The row-major offset of `idx` in an array of `shape` called `name`, or a panic naming
/// it.
#[inline(always)]
pub(crate) fn offset_in<const N: usize>(name: &str, shape: &[usize; N], idx: &[usize; N]) -> usize {
    match access::offset(shape, idx) {
        Some(o) => o,
        None => index_panic_in(name, idx, shape),
    }
}
