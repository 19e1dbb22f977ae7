//! Write-back buffers (Orion sect. 3.3.4): an array a loop updates by `+=` and `-=` without
//! the updates taking part in the dependence analysis. Each worker updates its own copy of
//! the array, taken when the loop starts; when the loop is done the copies are merged into
//! the array: worker 0's copy, plus every other worker's difference from the start, in
//! worker order. A worker sees its own updates at once and the others' after the loop.
//! The merge order is fixed, so results are bit-reproducible for a worker count, and one
//! worker gives exactly the serial loop's result.

use std::fmt;
use std::ops::{Add, Sub};
use std::sync::Mutex;

use crate::array::DistArray;

/// One worker's copy, on cache lines of its own: two workers updating their copies'
/// headers (the version counter) side by side would otherwise slow each other down.
#[repr(align(128))]
struct Slot<T, const N: usize>(Mutex<Option<DistArray<T, N>>>);

/// An array lent to a loop through per-worker write-back buffers.
///
/// `#[parallel_for(buffer(h))]` uses it for you; it also works on its own, with any
/// threads:
///
/// ```
/// use strads_runtime::{Buffered, DistArray};
/// let mut counts = DistArray::<u64, 1>::zeros([4]);
/// let buf = Buffered::new(&mut counts, 2);
/// std::thread::scope(|s| {
///     for w in 0..2 {
///         let buf = &buf;
///         s.spawn(move || buf.with(w, |c| c[w + 1] += 10));
///     }
/// });
/// buf.finish(); // worker 0's copy, then worker 1's difference
/// assert_eq!(counts.as_slice(), &[0, 10, 10, 0]);
/// ```
pub struct Buffered<'a, T, const N: usize> {
    array: &'a mut DistArray<T, N>,
    copies: Vec<Slot<T, N>>,
}

impl<T, const N: usize> fmt::Debug for Buffered<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffered")
            .field("shape", &self.array.shape())
            .field("workers", &self.copies.len())
            .finish()
    }
}

impl<'a, T, const N: usize> Buffered<'a, T, N>
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Send + Sync,
{
    /// Lends `array` to a loop with up to `max_workers` workers.
    pub fn new(array: &'a mut DistArray<T, N>, max_workers: usize) -> Self {
        Buffered {
            array,
            copies: (0..max_workers.max(1))
                .map(|_| Slot(Mutex::new(None)))
                .collect(),
        }
    }

    /// The array as it was when the loop started (unchanged until [`finish`](Self::finish)).
    pub fn original(&self) -> &DistArray<T, N> {
        self.array
    }

    /// Runs `f` on worker `worker`'s copy (made from the original on first use).
    pub fn with<R>(&self, worker: usize, f: impl FnOnce(&mut DistArray<T, N>) -> R) -> R {
        let mut slot = self.copies[worker]
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let copy = slot.get_or_insert_with(|| self.array.clone());
        f(copy)
    }

    /// Instead of merging into the array: calls `apply(element, update)` for every element
    /// whose merged update (the workers' differences from the start, summed in worker
    /// order) is not zero, and leaves the array as it was. How `buffer(g, apply = f(..))`
    /// hands accumulated updates (gradients, say) to a user's rule (AdaGrad, say).
    pub fn finish_apply(self, mut apply: impl FnMut(usize, T))
    where
        T: PartialEq + Default,
    {
        let mut copies = self
            .copies
            .into_iter()
            .filter_map(|m| m.0.into_inner().unwrap_or_else(|e| e.into_inner()));
        let Some(first) = copies.next() else {
            return;
        };
        let orig = self.array.as_slice();
        let mut update: Vec<T> = first
            .as_slice()
            .iter()
            .zip(orig)
            .map(|(&c, &o)| c - o)
            .collect();
        for copy in copies {
            for ((u, &c), &o) in update.iter_mut().zip(copy.as_slice()).zip(orig) {
                *u = *u + (c - o);
            }
        }
        for (e, u) in update.into_iter().enumerate() {
            if u != T::default() {
                apply(e, u);
            }
        }
    }

    /// The serial loop's counterpart of [`finish_apply`](Self::finish_apply): `array` was
    /// updated in place starting from `before`; calls `apply` with every non-zero
    /// difference and puts `before` back.
    pub fn apply_serial(
        array: &mut DistArray<T, N>,
        before: DistArray<T, N>,
        mut apply: impl FnMut(usize, T),
    ) where
        T: PartialEq + Default,
    {
        for (e, (&a, &b)) in array.as_slice().iter().zip(before.as_slice()).enumerate() {
            let u = a - b;
            if u != T::default() {
                apply(e, u);
            }
        }
        array.as_mut_slice().copy_from_slice(before.as_slice());
    }

    /// Merges the workers' copies into the array, in worker order.
    pub fn finish(self) {
        let mut copies = self
            .copies
            .into_iter()
            .map(|m| m.0.into_inner().unwrap_or_else(|e| e.into_inner()));
        let Some(first) = copies.by_ref().find_map(|c| c) else {
            return; // no worker ran
        };
        let orig = std::mem::replace(self.array, first);
        for copy in copies.flatten() {
            for ((x, &c), &o) in self
                .array
                .as_mut_slice()
                .iter_mut()
                .zip(copy.as_slice())
                .zip(orig.as_slice())
            {
                *x = *x + (c - o);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_each_workers_difference_in_order() {
        let mut a = DistArray::<i64, 1>::from_fn([3], |[i]| i as i64 * 10);
        let b = Buffered::new(&mut a, 3);
        b.with(0, |c| c[0] += 1);
        b.with(2, |c| {
            c[0] += 5;
            c[2] -= 3;
        });
        assert_eq!(b.original().as_slice(), &[0, 10, 20]);
        b.finish();
        assert_eq!(a.as_slice(), &[6, 10, 17]);
    }

    #[test]
    fn apply_sees_merged_updates_and_leaves_the_buffer() {
        let mut g = DistArray::<f32, 1>::zeros([3]);
        let b = Buffered::new(&mut g, 2);
        b.with(0, |c| c[1] += 2.0);
        b.with(1, |c| {
            c[1] += 0.5;
            c[2] -= 1.0;
        });
        let mut seen = Vec::new();
        b.finish_apply(|e, u| seen.push((e, u)));
        assert_eq!(seen, vec![(1, 2.5), (2, -1.0)]);
        assert_eq!(g.as_slice(), &[0.0; 3]);
        let before = g.clone();
        g[0] += 4.0;
        let mut seen = Vec::new();
        Buffered::apply_serial(&mut g, before, |e, u| seen.push((e, u)));
        assert_eq!(seen, vec![(0, 4.0)]);
        assert_eq!(g.as_slice(), &[0.0; 3]);
    }

    #[test]
    fn one_worker_keeps_its_copy_exactly() {
        let mut a = DistArray::<f32, 1>::from_fn([2], |_| 0.1);
        let b = Buffered::new(&mut a, 2);
        b.with(0, |c| c[0] += 0.2);
        b.finish();
        assert_eq!(a[0], 0.1f32 + 0.2);
    }
}
