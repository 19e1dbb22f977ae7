//! The fetch of an array created in place on a cluster job's driver that no call has used
//! yet ([`MadeHere`]): serial code that reads it makes its elements here from the recipe,
//! a window around what it reads, or all of them; a write takes its window for good.

use super::away::{Fetcher, made_written};
use super::made::Recipe;
use super::spans::{Spans, window};

/// An array created in place of at most this many bytes is made here whole at serial
/// code's first access: window by window, every access of a loop that walks it would take
/// the slow path of an array still partly away.
const WHOLE_BELOW: usize = 4 << 20;

/// The fetch of an array created in place that no call has used yet: its elements are made
/// here from the recipe, all of them or those around what serial code reads.
pub(crate) struct MadeHere<T> {
    /// The array's elements (`len` of them): valid for writes while it lives, and it
    /// drops this fetch with it.
    pub(crate) ptr: usize,
    pub(crate) len: usize,
    /// The array's id, and the regions not made yet (serial code's writes took the rest).
    pub(crate) id: u64,
    pub(crate) left: Vec<(u64, u64)>,
    pub(crate) shape: Vec<usize>,
    pub(crate) recipe: Recipe,
    pub(crate) _elem: std::marker::PhantomData<fn() -> T>,
}

impl<T: 'static> MadeHere<T> {
    /// Makes `ranges` (inside the array, none referenced).
    fn make(&self, ranges: &[(u64, u64)]) {
        if self.recipe == Recipe::Zeros {
            // Zeros are here already (reserved zero pages): nothing to make.
            return;
        }
        for &(lo, hi) in ranges {
            let (lo, hi) = (lo as usize, (hi as usize).min(self.len));
            // SAFETY: elements `lo..hi` of the array (`ptr`, `len`), valid for writes
            // (see the field); they are away, and not among those serial code read, so
            // no reference to them exists (`array::away`).
            let d =
                unsafe { std::slice::from_raw_parts_mut((self.ptr as *mut T).add(lo), hi - lo) };
            if let Err(e) = self.recipe.make(&self.shape, lo, d) {
                panic!("strads: {e}");
            }
        }
    }
}

impl<T: 'static> MadeHere<T> {
    /// The regions not made yet within `a..b`.
    fn left_in(&self, a: usize, b: usize) -> Vec<(u64, u64)> {
        self.left
            .iter()
            .map(|&(lo, hi)| (lo.max(a as u64), hi.min(b as u64)))
            .filter(|&(lo, hi)| lo < hi)
            .collect()
    }

    /// The elements made or taken around `lo..hi`: a window of about 64 KiB, or the whole
    /// array when it holds at most [`WHOLE_BELOW`] bytes (serial code over a small array
    /// then takes it home at its first access, and every later one is a plain access).
    fn window(&self, lo: usize, hi: usize) -> (usize, usize) {
        if self.len.saturating_mul(std::mem::size_of::<T>()) <= WHOLE_BELOW {
            return (0, self.len);
        }
        window(&self.shape, std::mem::size_of::<T>(), lo, hi)
    }
}

impl<T: 'static> Fetcher for MadeHere<T> {
    fn all(self: Box<Self>, read: &Spans) {
        self.make(&read.outside(&self.left));
        if self.left != [(0, self.len as u64)] {
            // A write took a window first: the cluster's directory knows the array, which
            // is home now.
            made_written(self.id, 0, Some(Vec::new()));
        }
    }

    fn away_within(&self, lo: usize, hi: usize) -> bool {
        let (lo, hi) = (lo as u64, hi as u64);
        self.left.iter().any(|&(x, y)| x < hi && y > lo)
    }

    fn digest_away(&self, read: &Spans) -> Option<Vec<(u64, u64, crate::checkpoint::Poly)>> {
        read.outside(&self.left)
            .into_iter()
            .map(|(lo, hi)| Some((lo, hi, self.recipe.digest::<T>(&self.shape, lo, hi)?)))
            .collect()
    }

    fn around(&mut self, lo: usize, hi: usize, read: &Spans) -> Option<(usize, usize)> {
        let (a, b) = self.window(lo, hi);
        self.make(&read.outside(&self.left_in(a, b)));
        Some((a, b))
    }

    /// A copy of the window's elements not made yet, made from the recipe apart from the
    /// array (which stays unmade).
    fn peek(&self, lo: usize, hi: usize, read: &Spans) -> Option<super::away::Copied> {
        let (a, b) = self.window(lo, hi);
        let ranges = read.outside(&self.left_in(a, b));
        let bytes = self.recipe.copy::<T>(&self.shape, &ranges)?;
        Some(super::away::Copied {
            window: (a as u64, b as u64),
            ranges,
            bytes,
        })
    }

    fn take(&mut self, lo: usize, hi: usize, read: &Spans, version: u64) -> Option<(usize, usize)> {
        let (a, b) = self.window(lo, hi);
        let inside = self.left_in(a, b);
        if inside.is_empty() {
            // Written before: only the array's version moved on.
            made_written(self.id, version, None);
            return (!self.left.is_empty()).then_some((a, b));
        }
        self.make(&read.outside(&inside));
        let mut left = Vec::with_capacity(self.left.len() + 1);
        for &(lo, hi) in &self.left {
            if lo < a as u64 {
                left.push((lo, hi.min(a as u64)));
            }
            if hi > b as u64 {
                left.push((lo.max(b as u64), hi));
            }
        }
        self.left = left;
        made_written(self.id, version, Some(self.left.clone()));
        // Everything made or written here: the array is home (an empty fetch ends it).
        (!self.left.is_empty()).then_some((a, b))
    }
}
