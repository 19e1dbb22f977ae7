//! Permuting ids so the popular rows of skewed data spread over partitions (Orion sect. 3.4.4).
//!
//! A parallel loop over a sparse array splits each partitioned dim into consecutive id
//! ranges. strads places the boundaries by a histogram of the iterations per id, so each
//! range holds about the same number of iterations. Two things histograms cannot fix:
//!
//! - a single id heavier than `1/P` of the iterations (its range cannot be split), and
//! - correlated skew in 2D: when the popular users rate the popular items, the block
//!   (popular users × popular items) is far larger than the others even though every row
//!   range and every column range is balanced, and a step of the rotation waits for its
//!   largest block.
//!
//! [`randomize`] relabels the ids of some dims by a random permutation (Orion's
//! `randomize`), which spreads popular ids evenly over every range and breaks the
//! correlation. The model rows then live in the new id space: move them there with
//! [`permute_rows`] and back with [`unpermute_rows`], or map single ids with
//! [`Randomized::original`] and [`Randomized::new_id`].
//!
//! ```
//! use strads_runtime::{DistArray, SparseArray};
//! use strads_runtime::permute::{permute_rows, randomize, unpermute_rows};
//!
//! let ratings = SparseArray::from_entries(
//!     [3, 2],
//!     vec![([0, 1], 4.0f32), ([0, 0], 3.0), ([2, 1], 5.0)],
//! ).unwrap();
//! let r = randomize(&ratings, &[0], 7);               // permute user ids only
//! let users = r.perms[0].as_ref().unwrap();           // users[old] = new
//! for ((old, _), (new, _)) in ratings.iter().zip(r.array.iter()) {
//!     assert_eq!(new, [users[old[0]] as usize, old[1]]); // same entries, same order
//!     assert_eq!(r.original(0, new[0]), old[0]);
//! }
//!
//! // Train in the new id space, then bring the user factors back.
//! let w = DistArray::<f32, 2>::random([3, 4], 1);
//! let w_new = permute_rows(&w, users);
//! assert_eq!(w_new.row(users[2] as usize), w.row(2));
//! assert_eq!(unpermute_rows(&w_new, users), w);
//! ```

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::array::{DistArray, SparseArray};

/// A random permutation of `0..n` (`perm[old] = new`), the same for the same seed.
///
/// ```
/// let p = strads_runtime::permute::permutation(5, 1);
/// let mut sorted = p.clone();
/// sorted.sort();
/// assert_eq!(sorted, vec![0, 1, 2, 3, 4]);
/// assert_eq!(p, strads_runtime::permute::permutation(5, 1));
/// ```
pub fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    p.shuffle(&mut Xoshiro256PlusPlus::seed_from_u64(seed));
    p
}

/// The inverse of a permutation: `inverse(perm)[perm[old]] == old`.
///
/// # Panics
/// When `perm` is not a permutation of `0..perm.len()`.
///
/// ```
/// let p = vec![2, 0, 1];
/// assert_eq!(strads_runtime::permute::inverse(&p), vec![1, 2, 0]);
/// ```
pub fn inverse(perm: &[u32]) -> Vec<u32> {
    check_permutation(perm, "inverse");
    let mut inv = vec![0u32; perm.len()];
    for (old, &new) in perm.iter().enumerate() {
        inv[new as usize] = old as u32;
    }
    inv
}

/// Panics unless `perm` is a permutation of `0..perm.len()`.
fn check_permutation(perm: &[u32], what: &str) {
    let mut seen = vec![false; perm.len()];
    for (old, &new) in perm.iter().enumerate() {
        let slot = seen.get_mut(new as usize).unwrap_or_else(|| {
            panic!(
                "strads::permute::{what}: perm[{old}] = {new} is out of range for a permutation \
                 of 0..{}",
                perm.len()
            )
        });
        assert!(
            !*slot,
            "strads::permute::{what}: {new} appears twice in the permutation (at {old} and before)"
        );
        *slot = true;
    }
}

/// A sparse array whose ids along some dims were relabelled, with the permutations used.
///
/// `perms[d]` is `Some(perm)` for every relabelled dim `d`, with `perm[old] = new`, and
/// `None` for dims left alone. `array` holds the same entries as the original, in the same
/// order, with index `d` of every entry replaced by `perm[index]`.
#[derive(Debug, Clone)]
pub struct Randomized<T, const N: usize> {
    /// The relabelled array.
    pub array: SparseArray<T, N>,
    /// Per dim, the permutation applied (`perm[old] = new`), or `None`.
    pub perms: Vec<Option<Vec<u32>>>,
}

impl<T, const N: usize> Randomized<T, N> {
    /// The original id of the id `new_id` of dim `dim` (itself when `dim` was not
    /// relabelled).
    ///
    /// This searches the permutation (linear time); to map many ids, compute
    /// [`inverse`]`(perm)` once, or move whole model arrays with [`unpermute_rows`].
    ///
    /// # Panics
    /// When `dim >= N` or `new_id` is outside the dim.
    pub fn original(&self, dim: usize, new_id: usize) -> usize {
        let extent = self.array.shape()[dim];
        assert!(
            new_id < extent,
            "Randomized::original: id {new_id} is outside dim {dim} (extent {extent})"
        );
        match &self.perms[dim] {
            None => new_id,
            Some(p) => p
                .iter()
                .position(|&n| n as usize == new_id)
                .expect("perms hold permutations"),
        }
    }

    /// The new id of the original id `old_id` of dim `dim` (itself when `dim` was not
    /// relabelled).
    ///
    /// # Panics
    /// When `dim >= N` or `old_id` is outside the dim.
    pub fn new_id(&self, dim: usize, old_id: usize) -> usize {
        match &self.perms[dim] {
            None => {
                let extent = self.array.shape()[dim];
                assert!(
                    old_id < extent,
                    "Randomized::new_id: id {old_id} is outside dim {dim} (extent {extent})"
                );
                old_id
            }
            Some(p) => p[old_id] as usize,
        }
    }
}

/// Relabels the ids of the dims given a permutation: `perms[d] = Some(perm)` maps old id
/// `i` of dim `d` to `perm[i]`; entries keep their order.
///
/// [`randomize`] and [`sort_by_count`] are this with a random and a popularity order.
///
/// # Panics
/// When `perms.len() != N`, or a permutation's length is not its dim's extent or it is
/// not a permutation.
///
/// ```
/// use strads_runtime::SparseArray;
/// let a = SparseArray::from_entries([2, 2], vec![([0, 1], 1u8), ([1, 1], 2)]).unwrap();
/// let r = strads_runtime::permute::relabel(&a, vec![Some(vec![1, 0]), None]);
/// assert_eq!(r.array.iter().map(|(k, _)| k).collect::<Vec<_>>(), vec![[1, 1], [0, 1]]);
/// ```
pub fn relabel<T: Clone + 'static, const N: usize>(
    a: &SparseArray<T, N>,
    perms: Vec<Option<Vec<u32>>>,
) -> Randomized<T, N> {
    assert_eq!(
        perms.len(),
        N,
        "strads::permute::relabel: one entry per dim ({N}) expected, got {}",
        perms.len()
    );
    let shape = a.shape();
    for (d, p) in perms.iter().enumerate() {
        if let Some(p) = p {
            assert_eq!(
                p.len(),
                shape[d],
                "strads::permute::relabel: the permutation of dim {d} has {} ids, the dim {}",
                p.len(),
                shape[d]
            );
            check_permutation(p, "relabel");
        }
    }
    let entries = a
        .raw_keys()
        .iter()
        .zip(a.values())
        .map(|(k, v)| {
            let mut idx = k.map(|i| i as usize);
            for (d, p) in perms.iter().enumerate() {
                if let Some(p) = p {
                    idx[d] = p[idx[d]] as usize;
                }
            }
            (idx, v.clone())
        })
        .collect();
    let array = SparseArray::from_entries(shape, entries)
        .expect("a permutation keeps every index inside its dim");
    Randomized { array, perms }
}

/// The seed of dim `d`'s permutation: different dims get unrelated permutations.
fn dim_seed(seed: u64, d: usize) -> u64 {
    seed ^ (d as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Permutes the ids of the dims `dims` of `a` at random (Orion's `randomize`): entry
/// `([u, i], r)` becomes `([perm_u[u], i], r)` for `dims = [0]`, and so on. Entries keep
/// their order, so a loop over the result runs the same iterations in the same order, only
/// with other ids. The same seed gives the same permutations.
///
/// Use it when the popular ids of a dim are clustered (for example numbered by popularity
/// or by date): equal-range partitions then hold very different numbers of iterations, and
/// in 2D the block of popular rows × popular columns dominates a step even when the
/// partitions are histogram-balanced. After randomizing, every range holds a fair share of
/// popular ids. The model rows indexed by a relabelled dim must be moved to the new ids
/// ([`permute_rows`]) before training and back ([`unpermute_rows`]) after.
///
/// The result is no longer sorted by index: an `ordered` loop needs
/// [`SparseArray::sorted`] on it (which changes the serial order).
///
/// # Panics
/// When a dim in `dims` is `>= N` or listed twice.
///
/// ```
/// use strads_runtime::SparseArray;
/// use strads_runtime::permute::randomize;
/// let a = SparseArray::from_entries([4, 3], vec![([0, 2], 1.0f32), ([3, 1], 2.0)]).unwrap();
/// let r = randomize(&a, &[0, 1], 42);
/// assert_eq!(r.array.values(), a.values());
/// assert!(r.perms.iter().all(|p| p.is_some()));
/// let [u, i] = r.array.entry(1).0;
/// assert_eq!((r.original(0, u), r.original(1, i)), (3, 1));
/// ```
pub fn randomize<T: Clone + 'static, const N: usize>(
    a: &SparseArray<T, N>,
    dims: &[usize],
    seed: u64,
) -> Randomized<T, N> {
    let mut perms: Vec<Option<Vec<u32>>> = vec![None; N];
    for &d in dims {
        assert!(
            d < N,
            "strads::permute::randomize: dim {d} is out of range for a {N}-dim array"
        );
        assert!(
            perms[d].is_none(),
            "strads::permute::randomize: dim {d} is listed twice"
        );
        perms[d] = Some(permutation(a.shape()[d], dim_seed(seed, d)));
    }
    relabel(a, perms)
}

/// Relabels the ids of the dims `dims` by decreasing number of entries: the most frequent
/// id becomes 0 (ties keep their id order). This is the worst case for equal-range
/// partitions, and a layout that keeps the popular model rows together in memory; mostly
/// useful to build skewed test data and to study what [`randomize`] undoes.
///
/// # Panics
/// When a dim in `dims` is `>= N`.
///
/// ```
/// use strads_runtime::SparseArray;
/// let a = SparseArray::from_entries([3, 1], vec![([2, 0], 1u8), ([1, 0], 2), ([2, 0], 3)])
///     .unwrap();
/// let r = strads_runtime::permute::sort_by_count(&a, &[0]);
/// assert_eq!(r.perms[0], Some(vec![2, 1, 0])); // id 2 (twice) first, then 1, then 0
/// ```
pub fn sort_by_count<T: Clone + 'static, const N: usize>(
    a: &SparseArray<T, N>,
    dims: &[usize],
) -> Randomized<T, N> {
    let mut perms: Vec<Option<Vec<u32>>> = vec![None; N];
    for &d in dims {
        assert!(
            d < N,
            "strads::permute::sort_by_count: dim {d} is out of range for a {N}-dim array"
        );
        let mut count = vec![0u32; a.shape()[d]];
        for k in a.raw_keys() {
            let c = &mut count[k[d] as usize];
            *c = c
                .checked_add(1)
                .expect("strads::permute::sort_by_count: an id has more than u32::MAX entries");
        }
        // Ids by decreasing count, ties by id: a stable counting sort on `max - count`.
        let max = count.iter().copied().max().unwrap_or(0);
        let keys: Vec<u32> = count.iter().map(|&c| max - c).collect();
        let (by_rank, _) = crate::bucket::bucket_order(&keys, max as usize + 1);
        perms[d] = Some(inverse(&by_rank));
    }
    relabel(a, perms)
}

/// Checks that `perm` fits the first dim of an array of shape `shape`.
fn check_rows(shape: &[usize], perm: &[u32], what: &str) {
    let rows = shape.first().copied().unwrap_or(0);
    assert_eq!(
        perm.len(),
        rows,
        "strads::permute::{what}: the permutation has {} ids, the array {rows} rows",
        perm.len()
    );
    check_permutation(perm, what);
}

/// Moves the rows of `a` (indexed by original ids) to the new ids: row `perm[old]` of the
/// result is row `old` of `a`. Use it on model arrays indexed by a dim that
/// [`randomize`] relabelled, before training on the randomized array.
///
/// # Panics
/// When `perm` is not a permutation of `a`'s rows.
///
/// ```
/// use strads_runtime::DistArray;
/// let a = DistArray::from_fn([3, 2], |[i, j]| (i * 10 + j) as u8);
/// let b = strads_runtime::permute::permute_rows(&a, &[2, 0, 1]);
/// assert_eq!(b.as_slice(), &[10, 11, 20, 21, 0, 1]);
/// ```
pub fn permute_rows<T: Clone, const N: usize>(
    a: &DistArray<T, N>,
    perm: &[u32],
) -> DistArray<T, N> {
    check_rows(&a.shape(), perm, "permute_rows");
    gather_rows(a, &inverse(perm))
}

/// Moves the rows of `a` (indexed by new ids) back to the original ids: row `old` of the
/// result is row `perm[old]` of `a`. The inverse of [`permute_rows`] with the same `perm`.
///
/// # Panics
/// When `perm` is not a permutation of `a`'s rows.
///
/// ```
/// use strads_runtime::DistArray;
/// use strads_runtime::permute::{permute_rows, unpermute_rows};
/// let a = DistArray::from_fn([3, 2], |[i, j]| (i * 10 + j) as u8);
/// let p = [2, 0, 1];
/// assert_eq!(unpermute_rows(&permute_rows(&a, &p), &p), a);
/// ```
pub fn unpermute_rows<T: Clone, const N: usize>(
    a: &DistArray<T, N>,
    perm: &[u32],
) -> DistArray<T, N> {
    check_rows(&a.shape(), perm, "unpermute_rows");
    gather_rows(a, perm)
}

/// Row `r` of the result is row `from[r]` of `a`.
fn gather_rows<T: Clone, const N: usize>(a: &DistArray<T, N>, from: &[u32]) -> DistArray<T, N> {
    let n = a.row_len();
    let data = a.as_slice();
    let mut out = Vec::with_capacity(data.len());
    for &src in from {
        let src = src as usize;
        out.extend_from_slice(&data[src * n..(src + 1) * n]);
    }
    DistArray::from_vec(a.shape(), out).expect("same shape, same number of elements")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use strads_analysis::Partition;

    fn sample(shape: [usize; 2], n: usize, seed: u64) -> SparseArray<u32, 2> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let entries = (0..n as u32)
            .map(|v| {
                let k = [rng.random_range(0..shape[0]), rng.random_range(0..shape[1])];
                (k, v)
            })
            .collect();
        SparseArray::from_entries(shape, entries).unwrap()
    }

    #[test]
    fn randomize_round_trips_and_keeps_order() {
        let a = sample([50, 30], 400, 1);
        let r = randomize(&a, &[0, 1], 9);
        assert_eq!(r.array.shape(), a.shape());
        assert_eq!(r.array.values(), a.values(), "entries keep their order");
        for ((old, _), (new, _)) in a.iter().zip(r.array.iter()) {
            for d in 0..2 {
                assert_eq!(r.original(d, new[d]), old[d]);
                assert_eq!(r.new_id(d, old[d]), new[d]);
            }
        }
        // Undo with the inverse permutations: the original array.
        let inv: Vec<Option<Vec<u32>>> =
            r.perms.iter().map(|p| p.as_deref().map(inverse)).collect();
        let back = relabel(&r.array, inv);
        assert_eq!(
            back.array.iter().collect::<Vec<_>>(),
            a.iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn unlisted_dims_stay() {
        let a = sample([20, 10], 100, 2);
        let r = randomize(&a, &[1], 3);
        assert!(r.perms[0].is_none());
        for ((old, _), (new, _)) in a.iter().zip(r.array.iter()) {
            assert_eq!(old[0], new[0]);
            assert_eq!(r.original(0, new[0]), old[0]);
        }
        let none = randomize(&a, &[], 3);
        assert_eq!(
            none.array.iter().collect::<Vec<_>>(),
            a.iter().collect::<Vec<_>>()
        );
    }

    #[test]
    fn randomize_is_deterministic() {
        let a = sample([40, 40], 300, 4);
        let (x, y) = (randomize(&a, &[0, 1], 5), randomize(&a, &[0, 1], 5));
        assert_eq!(x.perms, y.perms);
        assert_eq!(
            x.array.iter().collect::<Vec<_>>(),
            y.array.iter().collect::<Vec<_>>()
        );
        let z = randomize(&a, &[0, 1], 6);
        assert_ne!(x.perms, z.perms);
        // Two dims of the same extent get different permutations.
        assert_ne!(x.perms[0], x.perms[1]);
    }

    #[test]
    fn rows_round_trip() {
        let a = DistArray::<f32, 2>::random([17, 3], 1);
        let p = permutation(17, 8);
        let b = permute_rows(&a, &p);
        for (old, &new) in p.iter().enumerate() {
            assert_eq!(b.row(new as usize), a.row(old));
        }
        assert_eq!(unpermute_rows(&b, &p), a);
        assert_eq!(permute_rows(&unpermute_rows(&a, &p), &p), a);
        let v = DistArray::from_fn([5], |[i]| i as u8);
        assert_eq!(
            permute_rows(&v, &[4, 3, 2, 1, 0]).as_slice(),
            &[4, 3, 2, 1, 0]
        );
    }

    #[test]
    #[should_panic(expected = "appears twice")]
    fn not_a_permutation_panics() {
        let a = DistArray::<u8, 2>::zeros([3, 2]);
        permute_rows(&a, &[0, 1, 1]);
    }

    #[test]
    #[should_panic(expected = "the permutation has 2 ids, the array 3 rows")]
    fn wrong_length_panics() {
        let a = DistArray::<u8, 2>::zeros([3, 2]);
        unpermute_rows(&a, &[0, 1]);
    }

    #[test]
    #[should_panic(expected = "dim 2 is out of range")]
    fn bad_dim_panics() {
        randomize(&sample([3, 3], 3, 1), &[2], 1);
    }

    #[test]
    fn sort_by_count_puts_popular_ids_first() {
        let a = sample([30, 5], 500, 7);
        let r = sort_by_count(&a, &[0]);
        let mut count = vec![0usize; 30];
        for ([u, _], _) in r.array.iter() {
            count[u] += 1;
        }
        assert!(count.windows(2).all(|w| w[0] >= w[1]), "{count:?}");
    }

    #[test]
    fn sort_by_count_breaks_ties_by_id() {
        // Counts of ids 0..5: 1, 3, 1, 3, 0.
        let rows = [1, 3, 0, 1, 3, 2, 1, 3];
        let a = SparseArray::from_entries(
            [5, 8],
            rows.iter()
                .enumerate()
                .map(|(j, &u)| ([u, j], 1u8))
                .collect(),
        )
        .unwrap();
        let r = sort_by_count(&a, &[0]);
        assert_eq!(r.perms[0], Some(vec![2, 0, 3, 1, 4]));
        assert_eq!(r.perms[1], None);
    }

    /// Iterations per partition of `dim` under `part`, max over mean.
    fn imbalance<T>(a: &SparseArray<T, 2>, dim: usize, part: &Partition) -> f64 {
        let mut load = vec![0usize; part.len()];
        for (k, _) in a.iter() {
            load[part.part_of(k[dim])] += 1;
        }
        let max = *load.iter().max().unwrap() as f64;
        max / (a.nnz() as f64 / part.len() as f64)
    }

    /// The histogram-balanced partition of `dim` (what the runtime uses for sparse spaces).
    fn balanced<T>(a: &SparseArray<T, 2>, dim: usize, p: usize) -> Partition {
        let mut hist = vec![0u64; a.shape()[dim]];
        for (k, _) in a.iter() {
            hist[k[dim]] += 1;
        }
        Partition::balanced(&hist, p)
    }

    /// The largest 2D block of histogram-balanced partitions, over the mean block.
    fn largest_block<T>(a: &SparseArray<T, 2>, p: usize) -> f64 {
        let (pu, pi) = (balanced(a, 0, p), balanced(a, 1, p));
        let mut blocks = vec![0usize; p * p];
        for ([u, i], _) in a.iter() {
            blocks[pu.part_of(u) * p + pi.part_of(i)] += 1;
        }
        *blocks.iter().max().unwrap() as f64 / (a.nnz() as f64 / (p * p) as f64)
    }

    #[test]
    fn zipf_skew_with_popular_ids_first_gets_balanced() {
        // Zipf-skewed users and items (exponent 1), relabelled so the popular ids are the
        // smallest: the case `randomize` exists for.
        let a = crate::generate::low_rank_ratings(&crate::generate::LowRankConfig {
            users: 3000,
            items: 1000,
            ratings: 30_000,
            ..Default::default()
        });
        let sorted = sort_by_count(&a, &[0, 1]).array;
        let r = randomize(&sorted, &[0, 1], 1).array;
        let uniform = Partition::uniform(3000, 2);
        // Equal ranges: the first half of the user ids holds most of the iterations.
        let before = imbalance(&sorted, 0, &uniform);
        assert!(before > 1.6, "equal ranges on sorted Zipf ids: {before}");
        // Randomized ids: equal ranges hold about the same counts (not exactly: the few
        // heaviest ids land where they land) ...
        let after = imbalance(&r, 0, &uniform);
        assert!(after < 1.1, "equal ranges after randomize: {after}");
        // ... and histogram boundaries balance both.
        for (what, x) in [("sorted", &sorted), ("randomized", &r)] {
            let b = imbalance(x, 0, &balanced(x, 0, 2));
            assert!(b < 1.02, "histogram partitions, {what}: {b}");
        }
        // In 2D, histogram partitions balance each dim's ranges, not the blocks: with
        // sorted ids the popular users x popular items block differs from the others
        // (here: smaller, since each pair is rated once); randomized ids even them out.
        let (s, x) = (largest_block(&sorted, 4), largest_block(&r, 4));
        assert!(
            s > 1.3 && x < 1.1,
            "largest block over the mean: sorted ids {s}, randomized {x}"
        );
    }
}
