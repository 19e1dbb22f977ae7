//! Write-back buffers with an apply function (`buffer(g, apply = f(..))`): the workers'
//! summed differences handed to a user's rule element by element instead of merged.

use std::ops::{Add, Sub};

use super::Buffered;
use super::MERGE_CHUNK;
use super::slot::Copies;
use crate::array::DistArray;
use crate::sync::Parked;

impl<T, const N: usize> Buffered<'_, T, N>
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Send + Sync + 'static,
{
    /// Instead of merging: calls `f(element, update)` for every element whose update (the
    /// workers' differences from the array, summed in worker order) is not zero; every copy
    /// starts again from the array, which stays as it was. How `buffer(g, apply = f(..))`
    /// hands accumulated updates (gradients, say) to a user's rule (AdaGrad, say).
    pub fn apply_with(&self, parked: &Parked<'_>, f: impl FnMut(usize, T))
    where
        T: PartialEq + Default,
    {
        self.serve(parked.call());
        assert!(
            parked.phase() == crate::sync::Phase::Merge,
            "strads: the buffer `{}` with an apply function was given an `ssp` phase (please \
             report it)",
            self.name
        );
        self.gather(parked);
        self.apply_with_parked(f);
    }

    /// [`apply_with`](Self::apply_with), the caller having checked that the copies' views
    /// wait.
    fn apply_with_parked(&self, mut f: impl FnMut(usize, T))
    where
        T: PartialEq + Default,
    {
        let _no_with = self.no_with();
        let received = Copies::by_worker(
            std::mem::take(&mut *self.received.lock().unwrap_or_else(|e| e.into_inner())),
            self.copies.len(),
        );
        let base = self.base.get(self.len);
        let mut copies: Vec<Option<&mut [T]>> =
            (0..self.copies.len()).map(|w| self.made_copy(w)).collect();
        // The differences from the array, summed in worker order (a copy received from
        // another process, made here, or never made: the array itself), a chunk at a time;
        // every copy made starts again from the array, and `f` takes the chunk's updates.
        let mut update: Vec<T> = Vec::with_capacity(MERGE_CHUNK.min(self.len));
        for start in (0..self.len).step_by(MERGE_CHUNK) {
            let end = (start + MERGE_CHUNK).min(self.len);
            let values = &base[start..end];
            {
                let copy =
                    |w: usize| Copies::part(&received, &copies, w, start..end).unwrap_or(values);
                update.clear();
                update.extend(
                    copy(0)
                        .iter()
                        .zip(values)
                        .map(|(&c, &b)| super::wrap::sub(c, b)),
                );
                for w in 1..self.copies.len() {
                    for ((u, &c), &b) in update.iter_mut().zip(copy(w)).zip(values) {
                        *u = super::wrap::add(*u, super::wrap::sub(c, b));
                    }
                }
            }
            for c in copies.iter_mut().flatten() {
                c[start..end].copy_from_slice(values);
            }
            for (e, &u) in (start..end).zip(&update) {
                if u != T::default() {
                    f(e, u);
                }
            }
        }
    }

    /// Ends the loop: applies the buffer ([`apply_with`](Self::apply_with)) a last time.
    pub fn finish_apply(self, f: impl FnMut(usize, T))
    where
        T: PartialEq + Default,
    {
        // `self` by value: no view of it is alive.
        self.apply_with_parked(f);
    }

    /// The serial loop's counterpart of [`apply_with`](Self::apply_with): `array` was
    /// updated in place since it equalled `before`; calls `f` with every non-zero
    /// difference and puts `before` back.
    pub fn apply_serial(
        array: &mut DistArray<T, N>,
        before: &DistArray<T, N>,
        mut f: impl FnMut(usize, T),
    ) where
        T: PartialEq + Default,
    {
        for (e, (&a, &b)) in array.as_slice().iter().zip(before.as_slice()).enumerate() {
            let u = super::wrap::sub(a, b);
            if u != T::default() {
                f(e, u);
            }
        }
        array.as_mut_slice().copy_from_slice(before.as_slice());
    }
}
