//! Serial code's reads of a sparse array's entries by value: on a cluster job's driver, an
//! array in parts on the ranks (loaded, generated or made in place) answers them with
//! copies of windows of its entries (`SpreadOps::window`) instead of coming home whole.

use super::SparseArray;
use crate::array::le;

/// The copies of windows a spread array keeps for reads by value: at most this many bytes
/// (the least recently read go first; one window when a window alone is larger).
const PEEKED_BYTES: usize = 4 << 20;

/// About the bytes of one window of entries (their indices and values) that
/// [`SparseArray::entry_value`] copies: a read at random pays for a window's transfer.
const WINDOW_BYTES: usize = 64 << 10;

/// About the bytes of one window of [`SparseArray::iter_values`]: reads in order pay for
/// each window's round trip.
const STREAM_BYTES: usize = 1 << 20;

/// A copy of entries `lo..lo + keys.len()` of a spread array, as its values were at
/// `version`.
pub(super) struct Window<T, const N: usize> {
    lo: usize,
    version: u64,
    keys: Vec<[u32; N]>,
    values: Vec<T>,
}

impl<T, const N: usize> Window<T, N> {
    fn holds(&self, n: usize) -> bool {
        (self.lo..self.lo + self.keys.len()).contains(&n)
    }

    fn entry(&self, n: usize) -> ([usize; N], T)
    where
        T: Copy,
    {
        let i = n - self.lo;
        (self.keys[i].map(|x| x as usize), self.values[i])
    }

    fn bytes(&self) -> usize {
        self.keys.len() * (4 * N + std::mem::size_of::<T>())
    }
}

impl<T: Copy + 'static, const N: usize> SparseArray<T, N> {
    /// Entry `n` (in storage order) by value: what [`entry`](Self::entry) gives. On a
    /// cluster job's driver an array whose entries are in parts on the ranks (loaded,
    /// generated or made in place, `is_spread`) answers with a copy of the window of
    /// entries around `n` (about 64 KiB), kept among the last 4 MiB of such copies, and
    /// stays in parts; `entry`, `iter` and `values` give references, which need the
    /// array here: it comes home whole. (Values an `iter_mut()` call left on the ranks,
    /// and values that are not numbers, bring the array home too.)
    ///
    /// ```
    /// use strads_runtime::SparseArray;
    /// let r = SparseArray::from_entries([2, 3], vec![([0, 2], 4.0f32), ([1, 0], 3.0)])?;
    /// assert_eq!(r.entry_value(1), ([1, 0], 3.0));
    /// # Ok::<(), strads_runtime::Error>(())
    /// ```
    ///
    /// # Panics
    /// When `n` is not below [`nnz`](Self::nnz).
    pub fn entry_value(&self, n: usize) -> ([usize; N], T) {
        assert!(
            n < self.nnz,
            "entry {n} of a sparse array of {} entries",
            self.nnz
        );
        // An array here is read where it is, without the lock.
        if let Some(e) = self.entries.get() {
            return (e.keys[n].map(|i| i as usize), e.values[n]);
        }
        // Under the copies' lock, which bringing the array home takes too: the parts stay
        // on the ranks while a window is fetched (asked again under it).
        let mut peeked = self.peeked.lock().unwrap_or_else(|e| e.into_inner());
        if self.by_windows() {
            peeked.retain(|w| w.version == self.values_version);
            if let Some(at) = peeked.iter().position(|w| w.holds(n)) {
                // The most recently read last.
                let w = peeked.remove(at);
                let e = w.entry(n);
                peeked.push(w);
                return e;
            }
            let len = self.window_len(WINDOW_BYTES);
            let w = self.window(n - n % len, len);
            let e = w.entry(n);
            peeked.push(w);
            let mut total: usize = peeked.iter().map(Window::bytes).sum();
            while total > PEEKED_BYTES && peeked.len() > 1 {
                total -= peeked.remove(0).bytes();
            }
            return e;
        }
        drop(peeked);
        let (k, &v) = self.entry(n);
        (k, v)
    }

    /// The entries in storage order, by value: what [`iter`](Self::iter) gives. An array
    /// in parts on a cluster job's ranks stays there: its entries come a window (about 1
    /// MiB) at a time, one window here at once, so serial code can sum or scan a data
    /// set larger than the driver holds (values an `iter_mut()` call left on the ranks,
    /// and values that are not numbers, bring the array home, as `iter` does).
    ///
    /// ```
    /// use strads_runtime::SparseArray;
    /// let r = SparseArray::from_entries([2, 3], vec![([0, 2], 4.0f32), ([1, 0], 3.0)])?;
    /// let sum: f32 = r.iter_values().map(|(_, v)| v).sum();
    /// assert_eq!(sum, 7.0);
    /// # Ok::<(), strads_runtime::Error>(())
    /// ```
    pub fn iter_values(&self) -> SparseValuesIter<'_, T, N> {
        SparseValuesIter {
            array: self,
            at: 0,
            window: None,
        }
    }

    /// Whether reads by value come from the ranks: the array is in parts there, its values
    /// in their parts, numbers.
    fn by_windows(&self) -> bool {
        self.entries.get().is_none()
            && self.values_away.is_none()
            && le::wire_size::<T>().is_some()
            && self
                .spread
                .as_ref()
                .is_some_and(|s| !s.ops.moved() && !s.ops.coded())
    }

    /// Entries in a window of about `bytes`.
    fn window_len(&self, bytes: usize) -> usize {
        (bytes / (4 * N + std::mem::size_of::<T>()).max(1)).max(1)
    }

    /// A copy of the window of `len` entries from `lo`, from the ranks that hold them.
    fn window(&self, lo: usize, len: usize) -> Window<T, N> {
        let spread = self.spread.as_ref().expect("a spread array's windows");
        let hi = (lo + len).min(self.nnz);
        let parts = spread.ops.window(lo as u64, hi as u64);
        match (spread.decode)(parts, &self.shape) {
            Ok((keys, values)) if keys.len() == hi - lo && values.len() == hi - lo => Window {
                lo,
                version: self.values_version,
                keys,
                values,
            },
            Ok((keys, values)) => spread.ops.fail(format!(
                "entries {lo}..{hi} of sparse array {} came as {} indices and {} values",
                self.id,
                keys.len(),
                values.len()
            )),
            Err(e) => spread.ops.fail(format!(
                "entries {lo}..{hi} of sparse array {} do not decode: {e}",
                self.id
            )),
        }
    }
}

/// The entries of a [`SparseArray`] by value ([`SparseArray::iter_values`]).
pub struct SparseValuesIter<'a, T, const N: usize> {
    array: &'a SparseArray<T, N>,
    at: usize,
    window: Option<Window<T, N>>,
}

impl<T: Copy + 'static, const N: usize> Iterator for SparseValuesIter<'_, T, N> {
    type Item = ([usize; N], T);

    fn next(&mut self) -> Option<Self::Item> {
        let a = self.array;
        if self.at >= a.nnz {
            return None;
        }
        let n = self.at;
        self.at += 1;
        if let Some(w) = &self.window
            && w.holds(n)
        {
            return Some(w.entry(n));
        }
        self.window = None;
        if let Some(e) = a.entries.get() {
            return Some((e.keys[n].map(|i| i as usize), e.values[n]));
        }
        let peeked = a.peeked.lock().unwrap_or_else(|e| e.into_inner());
        if a.by_windows() {
            let w = a.window(n, a.window_len(STREAM_BYTES));
            drop(peeked);
            let e = w.entry(n);
            self.window = Some(w);
            return Some(e);
        }
        drop(peeked);
        let (k, &v) = a.entry(n);
        Some((k, v))
    }

    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        self.at = self.at.saturating_add(n);
        self.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.array.nnz - self.at.min(self.array.nnz);
        (left, Some(left))
    }
}

impl<T: Copy + 'static, const N: usize> ExactSizeIterator for SparseValuesIter<'_, T, N> {}

impl<T: Copy + 'static, const N: usize> std::iter::FusedIterator for SparseValuesIter<'_, T, N> {}

impl<T, const N: usize> std::fmt::Debug for SparseValuesIter<'_, T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparseValuesIter")
            .field("at", &self.at)
            .field("of", &self.array.nnz)
            .finish()
    }
}
