//! Randomness that does not depend on the schedule: a generator seeded by the iteration's
//! own key, so every iteration draws the same numbers in a serial run, a parallel run on
//! any number of workers, and a replay.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A random generator for one iteration, seeded by a run-wide `seed` and the iteration's
/// key (its indices, an epoch, a token number...).
///
/// ```
/// use strads_runtime::IterRng;
/// let mut a = IterRng::new(7, &[3, 14]);
/// let mut b = IterRng::new(7, &[3, 14]);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(IterRng::new(7, &[3, 15]).below(10) < 10);
/// ```
#[derive(Clone, Debug)]
pub struct IterRng(Xoshiro256PlusPlus);

/// SplitMix64's finaliser: spreads nearby keys over the whole seed space.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl IterRng {
    /// The generator of the iteration `key` in a run seeded `seed`.
    pub fn new(seed: u64, key: &[u64]) -> Self {
        let mut h = mix(seed ^ 0x9e37_79b9_7f4a_7c15);
        for &k in key {
            h = mix(h ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        IterRng(Xoshiro256PlusPlus::seed_from_u64(h))
    }

    /// A uniform `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.0.random()
    }

    /// A uniform `f64` in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        self.0.random()
    }

    /// A uniform `f32` in `[0, 1)`.
    pub fn next_f32(&mut self) -> f32 {
        self.0.random()
    }

    /// The generator itself (for `RandomValue::draw`).
    pub(crate) fn xoshiro(&mut self) -> &mut Xoshiro256PlusPlus {
        &mut self.0
    }

    /// A uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_give_independent_streams() {
        let draws = |key: &[u64]| {
            let mut r = IterRng::new(1, key);
            (0..4).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draws(&[1, 2]), draws(&[1, 2]));
        assert_ne!(draws(&[1, 2]), draws(&[2, 1]));
        assert_ne!(draws(&[1, 2]), draws(&[1, 2, 0]));
        let mut r = IterRng::new(9, &[5]);
        let mean: f64 = (0..10_000).map(|_| r.next_f64()).sum::<f64>() / 10_000.0;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }
}
