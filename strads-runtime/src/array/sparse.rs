//! [`SparseArray`]: the coordinate-list array most loops iterate.

use std::fmt;

use super::cache::PlanCache;
use super::fresh_id;
use crate::error::{Error, Result};

/// A sparse N-dimensional array in coordinate-list form: the iteration space of most
/// training loops (one entry per rating, per sample, per token).
///
/// Entries keep the order they were given in; iterating yields `([usize; N], &T)`.
///
/// ```
/// use strads_runtime::SparseArray;
/// let r = SparseArray::from_entries([2, 3], vec![([0, 2], 4.0f32), ([1, 0], 3.0)]).unwrap();
/// let keys: Vec<_> = r.iter().map(|(k, _)| k).collect();
/// assert_eq!(keys, vec![[0, 2], [1, 0]]);
/// ```
pub struct SparseArray<T, const N: usize> {
    shape: [usize; N],
    keys: Vec<[u32; N]>,
    values: Vec<T>,
    id: u64,
    /// Bumped whenever the values may change (`iter_mut`): with `id`, what a cluster
    /// worker's copy is cached under.
    values_version: u64,
    pub(crate) cache: PlanCache,
    /// Whether cluster workers hold a copy (dropped with this array).
    pub(crate) forget: crate::array::away::Forget,
    /// Whether the entries are in index order, found once (the keys never change).
    sorted: std::sync::OnceLock<bool>,
}

impl<T, const N: usize> SparseArray<T, N> {
    /// A sparse array of the given entries; fails when an index is outside `shape` or a
    /// dimension exceeds `u32::MAX + 1` (indices are stored as `u32`).
    pub fn from_entries(shape: [usize; N], entries: Vec<([usize; N], T)>) -> Result<Self> {
        if let Some(d) = shape.iter().find(|&&d| d > u32::MAX as usize + 1) {
            return Err(Error::Shape(format!(
                "sparse array dimension {d} exceeds the supported {}",
                u32::MAX as u64 + 1
            )));
        }
        let mut keys = Vec::with_capacity(entries.len());
        let mut values = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            if k.iter().zip(&shape).any(|(i, s)| i >= s) {
                return Err(Error::OutOfBounds {
                    context: format!("entry {}: ", keys.len()),
                    index: k.to_vec(),
                    shape: shape.to_vec(),
                });
            }
            keys.push(k.map(|i| i as u32));
            values.push(v);
        }
        Ok(SparseArray {
            shape,
            keys,
            values,
            id: fresh_id(),
            values_version: 0,
            cache: PlanCache::default(),
            forget: Default::default(),
            sorted: std::sync::OnceLock::new(),
        })
    }

    /// The array's shape (the bounds of every index).
    pub fn shape(&self) -> [usize; N] {
        self.shape
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.keys.len()
    }

    /// Number of stored entries (same as [`nnz`](Self::nnz)).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no entry is stored.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Entry `n` (in storage order).
    #[inline]
    pub fn entry(&self, n: usize) -> ([usize; N], &T) {
        (self.keys[n].map(|i| i as usize), &self.values[n])
    }

    /// Entry `n` (in storage order), its value mutable.
    #[inline]
    pub fn entry_mut(&mut self, n: usize) -> ([usize; N], &mut T) {
        (self.keys[n].map(|i| i as usize), &mut self.values[n])
    }

    /// The stored entries in order, values mutable (the indices are fixed). A
    /// `#[parallel_for]` loop over `a.iter_mut()` gives each iteration its own value.
    pub fn iter_mut(&mut self) -> SparseIterMut<'_, T, N> {
        self.values_version += 1;
        SparseIterMut {
            keys: self.keys.iter(),
            values: self.values.iter_mut(),
        }
    }

    /// Takes the values out (leaving none) and gives them back with
    /// [`restore_values`](Self::restore_values): how a loop lends them to its workers.
    pub(crate) fn take_values(&mut self) -> Vec<T> {
        self.values_version += 1;
        std::mem::take(&mut self.values)
    }

    pub(crate) fn restore_values(&mut self, values: Vec<T>) {
        debug_assert_eq!(values.len(), self.keys.len());
        self.values = values;
    }

    /// The stored entries in order.
    pub fn iter(&self) -> SparseIter<'_, T, N> {
        SparseIter {
            keys: self.keys.iter(),
            values: self.values.iter(),
        }
    }

    /// The same entries sorted by index (lexicographically, stable for equal indices).
    /// Ordered loops over a sparse array follow index order, so they need this.
    pub fn sorted(self) -> Self {
        let mut order: Vec<usize> = (0..self.keys.len()).collect();
        order.sort_by_key(|&i| self.keys[i]);
        let mut values: Vec<Option<T>> = self.values.into_iter().map(Some).collect();
        SparseArray {
            shape: self.shape,
            keys: order.iter().map(|&i| self.keys[i]).collect(),
            values: order
                .iter()
                .map(|&i| values[i].take().expect("each entry once"))
                .collect(),
            id: fresh_id(),
            values_version: 0,
            cache: PlanCache::default(),
            forget: Default::default(),
            sorted: std::sync::OnceLock::new(),
        }
    }

    /// Whether the entries are in index order.
    pub fn is_sorted(&self) -> bool {
        *self.sorted.get_or_init(|| self.keys.is_sorted())
    }

    /// The stored values in order.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Process-unique identity of this array (a clone gets a new one).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `(id, 0)`: a sparse array's entries never change.
    pub fn contents_key(&self) -> (u64, u64) {
        (self.id, 0)
    }

    /// `(id, version)` of the entries and values: changes whenever a value may have.
    pub(crate) fn wire_key(&self) -> (u64, u64) {
        (self.id, self.values_version)
    }

    /// An array of these raw entries (a cluster worker's copy).
    pub(crate) fn from_raw(shape: [usize; N], keys: Vec<[u32; N]>, values: Vec<T>) -> Self {
        SparseArray {
            shape,
            keys,
            values,
            id: fresh_id(),
            values_version: 0,
            cache: PlanCache::default(),
            forget: Default::default(),
            sorted: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn raw_keys(&self) -> &[[u32; N]] {
        &self.keys
    }
}

impl<T: Clone, const N: usize> Clone for SparseArray<T, N> {
    fn clone(&self) -> Self {
        SparseArray {
            shape: self.shape,
            keys: self.keys.clone(),
            values: self.values.clone(),
            id: fresh_id(),
            values_version: 0,
            cache: PlanCache::default(),
            forget: Default::default(),
            sorted: std::sync::OnceLock::new(),
        }
    }
}

impl<T, const N: usize> fmt::Debug for SparseArray<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SparseArray")
            .field("shape", &self.shape)
            .field("nnz", &self.keys.len())
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Iterator over a [`SparseArray`]'s entries with mutable values.
#[derive(Debug)]
pub struct SparseIterMut<'a, T, const N: usize> {
    keys: std::slice::Iter<'a, [u32; N]>,
    values: std::slice::IterMut<'a, T>,
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
    keys: std::slice::Iter<'a, [u32; N]>,
    values: std::slice::Iter<'a, T>,
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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sparse_rejects_out_of_bounds_entries() {
        let err = SparseArray::from_entries([2, 2], vec![([0, 1], 1.0f32), ([2, 0], 1.0)])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "entry 1: index [2, 0] is outside the array's shape [2, 2]"
        );
    }
}
