//! Skewed data: permuting ids so popular rows spread over partitions.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;

/// A random permutation of `0..n` (`perm[old] = new`), the same for the same seed.
///
/// ```
/// let p = strads_runtime::skew::permutation(5, 1);
/// let mut sorted = p.clone();
/// sorted.sort();
/// assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
/// assert_eq!(p, strads_runtime::skew::permutation(5, 1));
/// ```
pub fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    p.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
    p
}
