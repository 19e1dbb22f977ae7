//! Walking a [`DistArray`]'s elements in row-major order, with their indices.

use super::DistArray;

/// The index after `idx` in row-major order over `shape` (back to zeros after the last).
pub(crate) fn next_index<const N: usize>(idx: &mut [usize; N], shape: &[usize; N]) {
    for d in (0..N).rev() {
        idx[d] += 1;
        if idx[d] < shape[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// Iterator over a [`DistArray`]'s elements with their indices.
#[derive(Debug)]
pub struct DenseIter<'a, T, const N: usize> {
    /// The elements, home (checked once, when the iterator was made).
    pub(super) data: &'a [T],
    pub(super) shape: [usize; N],
    pub(super) pos: usize,
    pub(super) idx: [usize; N],
}

impl<'a, T, const N: usize> Iterator for DenseIter<'a, T, N> {
    type Item = ([usize; N], &'a T);
    fn next(&mut self) -> Option<Self::Item> {
        let v = self.data.get(self.pos)?;
        let idx = self.idx;
        self.pos += 1;
        next_index(&mut self.idx, &self.shape);
        Some((idx, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.data.len() - self.pos;
        (n, Some(n))
    }
}

impl<T, const N: usize> ExactSizeIterator for DenseIter<'_, T, N> {}

impl<'a, T, const N: usize> IntoIterator for &'a DistArray<T, N> {
    type Item = ([usize; N], &'a T);
    type IntoIter = DenseIter<'a, T, N>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
