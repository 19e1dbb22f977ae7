//! What strads' own tests and benches kept writing again: bit patterns to compare results
//! exactly ([`bits`]), the "record, replay, compare bits" check at several thread counts
//! ([`assert_replay_equal`]), and the median of timings ([`median`]).

use crate::DistArray;
use crate::pool::with_threads;

use super::{Trace, record, replay};

/// A value with an exact bit pattern: floats by their IEEE bits (so `-0.0 != 0.0` and a
/// NaN equals itself), integers by their two's complement bits.
pub trait Element: Copy {
    /// The bit pattern, widened to 64 bits (distinct values give distinct patterns).
    fn bit_pattern(self) -> u64;
}

impl Element for f32 {
    fn bit_pattern(self) -> u64 {
        u64::from(self.to_bits())
    }
}

impl Element for f64 {
    fn bit_pattern(self) -> u64 {
        self.to_bits()
    }
}

macro_rules! element_int {
    ($($t:ty),*) => {$(
        impl Element for $t {
            fn bit_pattern(self) -> u64 {
                // Sign-extends signed values: still one pattern per value.
                self as u64
            }
        }
    )*};
}
element_int!(u8, u16, u32, u64, usize, i8, i16, i32, i64, isize);

/// Values compared by bit pattern: a slice or a [`DistArray`] of [`Element`]s, a `Vec` of
/// them, and pairs and triples of such (their patterns one after the other).
pub trait Bits {
    /// The bit patterns of the values, in order.
    fn bits(&self) -> Vec<u64>;
}

impl<T: Element> Bits for [T] {
    fn bits(&self) -> Vec<u64> {
        self.iter().map(|&x| x.bit_pattern()).collect()
    }
}

impl<T: Element> Bits for Vec<T> {
    fn bits(&self) -> Vec<u64> {
        self.as_slice().bits()
    }
}

impl<T: Element, const N: usize> Bits for DistArray<T, N> {
    fn bits(&self) -> Vec<u64> {
        self.as_slice().bits()
    }
}

impl<A: Bits, B: Bits> Bits for (A, B) {
    fn bits(&self) -> Vec<u64> {
        let mut v = self.0.bits();
        v.extend(self.1.bits());
        v
    }
}

impl<A: Bits, B: Bits, C: Bits> Bits for (A, B, C) {
    fn bits(&self) -> Vec<u64> {
        let mut v = (&self.0, &self.1).bits();
        v.extend(self.2.bits());
        v
    }
}

impl<B: Bits + ?Sized> Bits for &B {
    fn bits(&self) -> Vec<u64> {
        (**self).bits()
    }
}

/// The bit patterns of `x`: `assert_eq!(bits(&a), bits(&b))` asserts that two results are
/// identical, bit for bit.
///
/// ```
/// use strads_runtime::DistArray;
/// use strads_runtime::testing::bits;
/// let a = DistArray::from_fn([2], |[i]| i as f32 - 0.5);
/// assert_eq!(bits(&a), bits(&[-0.5f32, 0.5][..]));
/// assert_ne!(bits(&[0.0f64][..]), bits(&[-0.0f64][..]));
/// ```
pub fn bits<B: Bits + ?Sized>(x: &B) -> Vec<u64> {
    x.bits()
}

/// The median of `v` (the upper one for an even length), sorting `v` in place by
/// [`f64::total_cmp`].
///
/// # Panics
/// When `v` is empty.
///
/// ```
/// assert_eq!(strads_runtime::testing::median(&mut [3.0, 1.0, 2.0, 9.0]), 3.0);
/// ```
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// strads' correctness check at each of `threads`: runs `run` on a fresh state from `init`
/// with that many workers under [`record`], replays the recording on another fresh state,
/// and asserts that both states (and the values `run` returned) are equal bit for bit.
/// Returns, per thread count, the parallel run's state, its value and its recording, for
/// further checks.
///
/// # Panics
/// When a parallel run differs from the replay of its recording (the message names the
/// thread count).
///
/// ```
/// use strads_runtime::DistArray;
/// use strads_runtime::testing::assert_replay_equal;
/// let runs = assert_replay_equal(1..=2, || DistArray::<f32, 1>::zeros([4]), |w| {
///     w.as_mut_slice()[0] += 1.0; // no annotated loop: nothing recorded
/// });
/// assert_eq!(runs.len(), 2);
/// assert!(runs[0].2.runs.is_empty());
/// ```
pub fn assert_replay_equal<S: Bits, R: Bits>(
    threads: impl IntoIterator<Item = usize>,
    init: impl Fn() -> S,
    run: impl Fn(&mut S) -> R,
) -> Vec<(S, R, Trace)> {
    threads
        .into_iter()
        .map(|t| {
            let mut parallel = init();
            let (value, trace) = with_threads(t, || record(|| run(&mut parallel)));
            let mut replayed = init();
            let replayed_value = replay(&trace, || run(&mut replayed));
            assert!(
                bits(&parallel) == bits(&replayed),
                "{t} threads: the parallel run differs from the replay of its recording"
            );
            assert!(
                bits(&value) == bits(&replayed_value),
                "{t} threads: the value of the parallel run differs from the replay's"
            );
            (parallel, value, trace)
        })
        .collect()
}

impl Bits for () {
    fn bits(&self) -> Vec<u64> {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_patterns_are_exact() {
        assert_eq!(bits(&[1.5f32][..]), vec![u64::from(1.5f32.to_bits())]);
        assert_eq!(bits(&vec![-1i32, 2]), vec![u64::MAX, 2]);
        assert_eq!(bits(&[f64::NAN][..]), bits(&[f64::NAN][..]));
        assert_ne!(bits(&[0.0f32][..]), bits(&[-0.0f32][..]));
        let a = DistArray::from_fn([2, 2], |[i, j]| (i * 2 + j) as u32);
        assert_eq!(bits(&a), vec![0, 1, 2, 3]);
        assert_eq!(bits(&(a.clone(), vec![7u8])), vec![0, 1, 2, 3, 7]);
        assert_eq!(bits(&(vec![1u8], vec![2u8], vec![3u8])), vec![1, 2, 3]);
        assert_eq!(bits(&()), Vec::<u64>::new());
    }

    #[test]
    fn median_is_the_upper_middle() {
        assert_eq!(median(&mut [5.0]), 5.0);
        assert_eq!(median(&mut [4.0, 1.0]), 4.0);
        assert_eq!(median(&mut [2.0, f64::NAN, 1.0]), 2.0);
    }

    #[test]
    #[should_panic(expected = "2 threads: the parallel run differs from the replay")]
    fn a_run_that_differs_from_its_replay_fails() {
        let calls = std::cell::Cell::new(0.0f32);
        assert_replay_equal(
            [2],
            || vec![0.0f32],
            |v| {
                calls.set(calls.get() + 1.0);
                v[0] = calls.get();
            },
        );
    }
}
