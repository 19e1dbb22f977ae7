//! Reductions: an outer scalar a `#[parallel_for]` loop updates only with `+=`, `*=`,
//! `max` or `min`. Every block of a loop call accumulates into its own copy, starting from
//! the operator's identity; the parts are then combined in the order of the blocks' places
//! in the schedule (`Block::seq`), never in the order threads happen to finish. The result
//! is bit-identical between runs with the same thread count, and equal to the serial
//! replay of the recorded order, which folds the same parts in the same order.

use std::sync::Mutex;

/// A scalar type a reduction can accumulate: the identities of its four operators.
///
/// Implemented for `f32`, `f64` and every primitive integer.
///
/// ```
/// use strads_runtime::Reduce;
///
/// assert_eq!(<f64 as Reduce>::lowest(), f64::NEG_INFINITY);
/// assert_eq!(<u8 as Reduce>::highest(), u8::MAX);
/// assert_eq!(<i32 as Reduce>::one(), 1);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a reduction variable of a `#[parallel_for]` loop",
    label = "the loop updates this variable with `+=`, `*=`, `max` or `min`, so it is a reduction",
    note = "reductions accumulate `f32`, `f64` or a primitive integer; keep other values in a \
            `DistArray` indexed by the iteration"
)]
pub trait Reduce: Copy {
    /// The identity of `+`: `a + zero() == a`.
    fn zero() -> Self;
    /// The identity of `*`: `a * one() == a`.
    fn one() -> Self;
    /// The identity of `max`: the smallest value.
    fn lowest() -> Self;
    /// The identity of `min`: the largest value.
    fn highest() -> Self;
}

macro_rules! reduce_float {
    ($($t:ty),*) => {$(
        impl Reduce for $t {
            // `-0.0`, not `0.0`: `-0.0 + a == a` for every `a`, `-0.0` included, while
            // `0.0 + -0.0` is `0.0`. A block with no iterations then changes nothing.
            #[inline]
            fn zero() -> Self {
                -0.0
            }
            #[inline]
            fn one() -> Self {
                1.0
            }
            #[inline]
            fn lowest() -> Self {
                <$t>::NEG_INFINITY
            }
            #[inline]
            fn highest() -> Self {
                <$t>::INFINITY
            }
        }
    )*};
}

macro_rules! reduce_int {
    ($($t:ty),*) => {$(
        impl Reduce for $t {
            #[inline]
            fn zero() -> Self {
                0
            }
            #[inline]
            fn one() -> Self {
                1
            }
            #[inline]
            fn lowest() -> Self {
                <$t>::MIN
            }
            #[inline]
            fn highest() -> Self {
                <$t>::MAX
            }
        }
    )*};
}

reduce_float!(f32, f64);
reduce_int!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);

/// The per-block partial results of one loop call, collected from the workers and folded
/// in schedule order.
///
/// ```
/// use strads_runtime::Parts;
///
/// let parts = Parts::new();
/// parts.push((1, 0), 0.1f32);
/// parts.push((0, 1), 1e8f32);
/// parts.push((0, 0), -1e8f32);
/// // Folded as ((-1e8 + 1e8) + 0.1): the order of `seq`, not of `push`.
/// assert_eq!(parts.fold(-0.0, |a, b| *a += *b), 0.1);
/// ```
#[derive(Debug, Default)]
pub struct Parts<R> {
    parts: Mutex<Vec<((usize, usize), R)>>,
}

impl<R> Parts<R> {
    /// No parts yet.
    pub fn new() -> Self {
        Parts {
            parts: Mutex::new(Vec::new()),
        }
    }

    /// Adds the part of the block at `seq` (`Block::seq`, `ReplayBlock::seq`).
    pub fn push(&self, seq: (usize, usize), part: R) {
        self.parts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((seq, part));
    }

    /// Runs `f` on the parts pushed so far (the cluster sends them to the driver).
    pub(crate) fn with_all<X>(&self, f: impl FnOnce(&[((usize, usize), R)]) -> X) -> X {
        f(&self.parts.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Folds every part into `total` in `seq` order, each part given whole (what kept
    /// terms take without a copy), and returns it.
    pub fn fold_owned(self, mut total: R, mut f: impl FnMut(&mut R, R)) -> R {
        let mut parts = self.parts.into_inner().unwrap_or_else(|e| e.into_inner());
        parts.sort_by_key(|(seq, _)| *seq);
        for (_, part) in parts {
            f(&mut total, part);
        }
        total
    }

    /// Folds every part into `total` in `seq` order and returns it.
    pub fn fold(self, mut total: R, mut f: impl FnMut(&mut R, &R)) -> R {
        let mut parts = self.parts.into_inner().unwrap_or_else(|e| e.into_inner());
        // Stable: parts pushed with the same `seq` keep their push order.
        parts.sort_by_key(|(seq, _)| *seq);
        for (_, part) in &parts {
            f(&mut total, part);
        }
        total
    }
}

/// The terms an `ordered` loop adds to (or multiplies into) a float reduction, each with
/// its iteration's place in the serial order: the block's part of an exact reduction.
/// Folded by [`add_into`](Terms::add_into) or [`mul_into`](Terms::mul_into) after the
/// call, one term at a time in the serial order, onto the variable's value before the
/// loop: the serial loop's arithmetic, so its bits, whatever the plan.
///
/// ```
/// use strads_runtime::Terms;
///
/// let (mut a, mut b) = (Terms::<f32>::new(), Terms::<f32>::new());
/// b.at(1);
/// b += 0.1;
/// a.at(0);
/// a += 1e8;
/// a.at(2);
/// a += -1e8;
/// a.absorb(b);
/// // ((0.5 + 1e8) + 0.1) - 1e8, as the serial loop adds them.
/// assert_eq!(a.add_into(0.5), ((0.5f32 + 1e8) + 0.1) - 1e8);
/// ```
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Terms<T> {
    /// The current iteration's place (set before each iteration; not sent).
    #[serde(skip)]
    at: u128,
    /// Runs of terms, each in the serial order (a block's); blocks' runs interleave.
    runs: Vec<Vec<(u128, T)>>,
}

impl<T: Reduce> Default for Terms<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Reduce> Terms<T> {
    /// No terms.
    pub fn new() -> Self {
        Terms {
            at: 0,
            runs: Vec::new(),
        }
    }

    /// The terms that follow belong to the iteration at `position` in the serial order.
    #[inline(always)]
    pub fn at(&mut self, position: u128) {
        self.at = position;
    }

    /// Takes another block's terms.
    pub fn absorb(&mut self, part: Self) {
        self.runs
            .extend(part.runs.into_iter().filter(|r| !r.is_empty()));
    }

    /// Every term in the serial order, to `f`: the runs merged by position. A run is a
    /// block's, so it holds long stretches of consecutive places: each stretch is taken
    /// whole up to the next run's head (one heap operation per stretch, not per term).
    /// Terms of one iteration are in one run, in their order.
    fn for_each_in_order(mut self, mut f: impl FnMut(T)) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        for run in &mut self.runs {
            if !run.is_sorted_by_key(|(p, _)| *p) {
                run.sort_by_key(|(p, _)| *p);
            }
        }
        let mut heads: BinaryHeap<Reverse<(u128, usize)>> = self
            .runs
            .iter()
            .enumerate()
            .filter_map(|(k, r)| r.first().map(|t| Reverse((t.0, k))))
            .collect();
        let mut next = vec![0usize; self.runs.len()];
        while let Some(Reverse((_, k))) = heads.pop() {
            // Ties between runs (which no plan makes: an iteration is in one block) go to
            // the lower run, so the popped head is always taken: the merge ends.
            let bound = heads.peek().map(|Reverse(head)| *head);
            let run = &self.runs[k];
            let mut i = next[k];
            while i < run.len() && bound.is_none_or(|b| (run[i].0, k) < b) {
                f(run[i].1);
                i += 1;
            }
            next[k] = i;
            if let Some(t) = run.get(i) {
                heads.push(Reverse((t.0, k)));
            }
        }
    }

    /// The terms in the serial order, as [`add_into`](Terms::add_into) folds them.
    pub fn into_serial_order(self) -> Vec<T> {
        let mut out = Vec::new();
        self.for_each_in_order(|t| out.push(t));
        out
    }

    /// `acc`, with every term added in the serial order.
    pub fn add_into(self, acc: T) -> T
    where
        T: std::ops::Add<Output = T>,
    {
        let mut acc = acc;
        self.for_each_in_order(|t| acc = acc + t);
        acc
    }

    /// `acc`, multiplied by every term in the serial order.
    pub fn mul_into(self, acc: T) -> T
    where
        T: std::ops::Mul<Output = T>,
    {
        let mut acc = acc;
        self.for_each_in_order(|t| acc = acc * t);
        acc
    }

    #[inline(always)]
    fn push(&mut self, t: T) {
        match self.runs.last_mut() {
            Some(run) => run.push((self.at, t)),
            None => self.runs.push(vec![(self.at, t)]),
        }
    }
}

impl<T: Reduce> std::ops::AddAssign<T> for Terms<T> {
    #[inline(always)]
    fn add_assign(&mut self, t: T) {
        self.push(t);
    }
}

impl<T: Reduce> std::ops::MulAssign<T> for Terms<T> {
    #[inline(always)]
    fn mul_assign(&mut self, t: T) {
        self.push(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs that interleave in stretches (tiles of a row-major table) fold in the serial
    /// order, a run out of order is sorted first, and one iteration's terms keep theirs.
    #[test]
    fn terms_merge_runs_in_the_serial_order() {
        let run = |places: &[(u128, f64)]| {
            let mut t = Terms::<f64>::new();
            for &(p, v) in places {
                t.at(p);
                t += v;
            }
            t
        };
        let mut all = run(&[(0, 1.0), (1, 1e16), (4, 3.0), (5, -1e16)]);
        all.absorb(run(&[(3, 0.5), (2, 2.0), (2, -7.0)]));
        all.absorb(run(&[(6, 0.25), (7, 1e-3)]));
        let mut seen = Vec::new();
        all.clone().for_each_in_order(|t| seen.push(t));
        assert_eq!(
            seen,
            vec![1.0, 1e16, 2.0, -7.0, 0.5, 3.0, -1e16, 0.25, 1e-3]
        );
        let serial = seen.iter().fold(0.125, |a, t| a + t);
        assert_eq!(all.add_into(0.125).to_bits(), serial.to_bits());
        // Two runs that share a place end (the lower run first).
        let mut tied = run(&[(5, 1.0), (7, 2.0)]);
        tied.absorb(run(&[(7, 4.0), (9, 8.0)]));
        let mut seen = Vec::new();
        tied.for_each_in_order(|t| seen.push(t));
        assert_eq!(seen, vec![1.0, 2.0, 4.0, 8.0]);
    }

    #[test]
    fn identities() {
        for a in [0.0f32, -0.0, 1.5, -3.25, f32::MAX, f32::MIN_POSITIVE] {
            assert_eq!((f32::zero() + a).to_bits(), a.to_bits(), "{a}");
            assert_eq!((a * f32::one()).to_bits(), a.to_bits(), "{a}");
            assert_eq!(a.max(f32::lowest()).to_bits(), a.to_bits(), "{a}");
            assert_eq!(a.min(f32::highest()).to_bits(), a.to_bits(), "{a}");
        }
        for a in [i64::MIN, -1, 0, 7, i64::MAX] {
            assert_eq!(a + i64::zero(), a);
            assert_eq!(a * i64::one(), a);
            assert_eq!(a.max(i64::lowest()), a);
            assert_eq!(a.min(i64::highest()), a);
        }
        assert_eq!(u8::lowest(), 0);
        assert_eq!(f64::lowest(), f64::NEG_INFINITY);
    }

    #[test]
    fn folds_in_seq_order_whatever_the_push_order() {
        let values = [1e8f32, 0.5, -1e8, 0.25, 3.0, -7.5];
        let seqs = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)];
        let in_order = values.iter().fold(-0.0f32, |a, b| a + b);
        for rot in 0..values.len() {
            let parts = Parts::new();
            for k in 0..values.len() {
                let j = (k + rot) % values.len();
                parts.push(seqs[j], values[j]);
            }
            let total = parts.fold(f32::zero(), |a, b| *a += *b);
            assert_eq!(total.to_bits(), in_order.to_bits(), "rotation {rot}");
        }
    }

    #[test]
    fn empty_fold_is_the_start() {
        let parts: Parts<u32> = Parts::new();
        assert_eq!(parts.fold(5, |a, b| *a += *b), 5);
    }
}
