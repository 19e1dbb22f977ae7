//! The iterators over a [`SparseArray`]'s stored entries.

use super::SparseArray;

/// Iterator over a [`SparseArray`]'s entries with mutable values.
#[derive(Debug)]
pub struct SparseIterMut<'a, T, const N: usize> {
    pub(super) keys: std::slice::Iter<'a, [u32; N]>,
    pub(super) values: std::slice::IterMut<'a, T>,
}

impl<'a, T, const N: usize> Iterator for SparseIterMut<'a, T, N> {
    type Item = ([usize; N], &'a mut T);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let k = self.keys.next()?;
        let v = self.values.next()?;
        Some((k.map(|i| i as usize), v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.keys.size_hint()
    }
}

impl<T, const N: usize> ExactSizeIterator for SparseIterMut<'_, T, N> {}

impl<'a, T, const N: usize> IntoIterator for &'a mut SparseArray<T, N> {
    type Item = ([usize; N], &'a mut T);
    type IntoIter = SparseIterMut<'a, T, N>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// Iterator over a [`SparseArray`]'s entries.
#[derive(Debug)]
pub struct SparseIter<'a, T, const N: usize> {
    pub(super) keys: std::slice::Iter<'a, [u32; N]>,
    pub(super) values: std::slice::Iter<'a, T>,
}

impl<'a, T, const N: usize> Iterator for SparseIter<'a, T, N> {
    type Item = ([usize; N], &'a T);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let k = self.keys.next()?;
        let v = self.values.next()?;
        Some((k.map(|i| i as usize), v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.keys.size_hint()
    }
}

impl<T, const N: usize> ExactSizeIterator for SparseIter<'_, T, N> {}

impl<'a, T, const N: usize> IntoIterator for &'a SparseArray<T, N> {
    type Item = ([usize; N], &'a T);
    type IntoIter = SparseIter<'a, T, N>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
