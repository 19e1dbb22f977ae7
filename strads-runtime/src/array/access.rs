//! How a loop body reaches array elements.
//!
//! The macro turns a loop body into a method generic over these traits, so the same body
//! runs on a whole [`DistArray`](crate::DistArray) (serial replay), on a worker's view of
//! its partition (parallel execution), and later on a recorder (reconnaissance).

use std::ops::{Index, IndexMut};

/// Read access to an N-dimensional row-major array.
pub trait ArrayRef<T, const N: usize>: Index<[usize; N], Output = T> {
    /// The array's shape.
    fn shape(&self) -> [usize; N];

    /// Row `i`: every element whose first index is `i`, as a contiguous slice.
    fn row(&self, i: usize) -> &[T];

    /// The element at `idx`, or `None` when `idx` is outside the shape.
    fn get(&self, idx: [usize; N]) -> Option<&T>;

    /// Number of elements.
    fn len(&self) -> usize {
        self.shape().iter().product()
    }

    /// Whether the array has no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of elements in one row (the product of all dims but the first).
    fn row_len(&self) -> usize {
        self.shape()[1..].iter().product()
    }
}

/// Write access to an N-dimensional row-major array.
pub trait ArrayMut<T, const N: usize>: ArrayRef<T, N> + IndexMut<[usize; N]> {
    /// Row `i`, mutable.
    fn row_mut(&mut self, i: usize) -> &mut [T];

    /// The element at `idx`, mutable, or `None` when `idx` is outside the shape.
    fn get_mut(&mut self, idx: [usize; N]) -> Option<&mut T>;
}

/// Row-major offset of `idx` in `shape`, or `None` when out of bounds.
#[inline(always)]
pub(crate) fn offset<const N: usize>(shape: &[usize; N], idx: &[usize; N]) -> Option<usize> {
    let mut off = 0usize;
    for d in 0..N {
        if idx[d] >= shape[d] {
            return None;
        }
        off = off * shape[d] + idx[d];
    }
    Some(off)
}
