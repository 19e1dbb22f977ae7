//! [`Named`]: an array a loop only reads, with its name for index messages.

use std::fmt;
use std::ops::Index;

use crate::array::access::{ArrayRef, offset};
use crate::array::{DistArray, index_panic_in};

/// An array a loop only reads, as the parallel body reaches it: the array itself, with its
/// name for the message when an index falls outside it.
pub struct Named<'a, T, const N: usize> {
    data: &'a [T],
    shape: [usize; N],
    row_len: usize,
    name: &'static str,
}

impl<T, const N: usize> fmt::Debug for Named<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Named")
            .field("array", &self.name)
            .field("shape", &self.shape)
            .finish()
    }
}

impl<'a, T, const N: usize> Named<'a, T, N> {
    /// `array`, called `name` in the loop.
    pub fn new(array: &'a DistArray<T, N>, name: &'static str) -> Self {
        let shape = array.shape();
        Named {
            data: array.as_slice(),
            shape,
            row_len: shape[1..].iter().product(),
            name,
        }
    }
}

impl<T, const N: usize> Index<[usize; N]> for Named<'_, T, N> {
    type Output = T;
    #[inline(always)]
    fn index(&self, idx: [usize; N]) -> &T {
        match offset(&self.shape, &idx) {
            Some(o) => &self.data[o],
            None => index_panic_in(self.name, &idx, &self.shape),
        }
    }
}

impl<T> Index<usize> for Named<'_, T, 1> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        match self.data.get(i) {
            Some(x) => x,
            None => index_panic_in(self.name, &[i], &self.shape),
        }
    }
}

impl<T, const N: usize> ArrayRef<T, N> for Named<'_, T, N> {
    #[inline(always)]
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    #[inline(always)]
    fn row(&self, i: usize) -> &[T] {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        &self.data[i * self.row_len..(i + 1) * self.row_len]
    }
    #[inline(always)]
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx).map(|o| &self.data[o])
    }
}
