//! Merge functions for `#[parallel_for(sync = "..", merge = f)]`: how the replicas'
//! differences, summed in the workers' tree order (`tree.rs`), become the array's new value
//! at a merge point.
//! A merge function is any `fn(value: T, summed_differences: T, replicas: usize) -> T`.
//!
//! ```
//! use strads_runtime::{Buffered, DistArray, merge};
//! let mut w = DistArray::<f32, 1>::from_fn([2], |_| 1.0);
//! let buf = Buffered::new(&mut w, 2).merged(merge::sum);
//! buf.with(0, |c| c[0] += 0.5);
//! buf.with(1, |c| c[0] += 0.25);
//! buf.finish();
//! assert_eq!(w.as_slice(), &[1.75, 1.0]); // averaged, it would be 1.375
//! ```

use std::ops::Add;

use super::Average;

/// The default: the mean difference, `value + summed / replicas` (model averaging).
pub fn average<T: Average + Add<Output = T>>(value: T, summed: T, replicas: usize) -> T {
    value + summed.divide(replicas)
}

/// Every replica's difference added, `value + summed`: each worker's updates count in
/// full, as on one worker (delta accumulation; with sparse updates such as word vectors,
/// what a lock-free shared model would reach, at fixed points). Integers wrap, as the
/// differences they add do (a count a worker decremented comes back right).
pub fn sum<T: Copy + Add<Output = T> + 'static>(value: T, summed: T, _replicas: usize) -> T {
    super::wrap::add(value, summed)
}
