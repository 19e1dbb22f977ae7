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

#[cfg(test)]
mod tests {
    use super::*;

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
