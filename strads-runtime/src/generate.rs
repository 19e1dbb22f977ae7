//! Synthetic data sets: rating matrices with a known low-rank structure, for tests and
//! benchmarks at any size.
//!
//! ```
//! use strads_runtime::generate::{low_rank_ratings, LowRankConfig};
//! let r = low_rank_ratings(&LowRankConfig { ratings: 5_000, ..LowRankConfig::default() });
//! assert_eq!(r.shape(), [943, 1682]);
//! assert_eq!(r.nnz(), 5_000);
//! ```

use std::collections::HashSet;

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::array::SparseArray;
use crate::load::U64BuildHasher;

/// The mean rating around which the synthetic ratings spread.
const MEAN_RATING: f32 = 3.5;

/// Skewed draws per requested rating before falling back to uniform draws.
const SKEWED_DRAWS_PER_RATING: usize = 8;

/// Parameters of [`low_rank_ratings`].
///
/// The default has the shape of MovieLens 100k: 943 users, 1682 items, 100 000 ratings,
/// with rank 10, noise 0.5, Zipf exponent 1.0 and seed 42.
///
/// ```
/// use strads_runtime::generate::LowRankConfig;
/// let big = LowRankConfig { users: 100_000, items: 20_000, ratings: 10_000_000, ..Default::default() };
/// assert_eq!(big.rank, 10);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LowRankConfig {
    /// Number of users (rows).
    pub users: usize,
    /// Number of items (columns).
    pub items: usize,
    /// Number of ratings (distinct `(user, item)` pairs); capped at `users * items / 2`.
    pub ratings: usize,
    /// Rank of the hidden user and item factor matrices.
    pub rank: usize,
    /// Standard deviation of the gaussian noise added to each rating.
    pub noise: f32,
    /// Exponent of the Zipf distribution of user and item popularity (0 = uniform).
    pub zipf_exponent: f64,
    /// Seed of the xoshiro256++ generator: the same config gives the same ratings.
    pub seed: u64,
}

impl Default for LowRankConfig {
    fn default() -> Self {
        LowRankConfig {
            users: 943,
            items: 1682,
            ratings: 100_000,
            rank: 10,
            noise: 0.5,
            zipf_exponent: 1.0,
            seed: 42,
        }
    }
}

/// A synthetic `[users, items]` rating matrix with a hidden low-rank structure.
///
/// Hidden user and item factors of the given rank are drawn from a normal distribution
/// scaled so that their dot product has standard deviation 1; each rating is
/// `clamp(3.5 + dot(user, item) + noise, 1, 5)` with gaussian noise of standard
/// deviation `cfg.noise`, kept continuous (no rounding).
///
/// Users and items are drawn with Zipf-skewed popularity (`rand_distr::Zipf` over ranks
/// `1..=n` with `cfg.zipf_exponent`); which id has which popularity rank is a random
/// permutation, so popular ids are scattered. `(user, item)` pairs are unique, and the
/// entries come in random order, like a real rating log. Everything is deterministic
/// for `cfg.seed` (xoshiro256++).
///
/// The number of ratings is capped at `users * items / 2`, so that distinct pairs stay
/// cheap to find. With a strong skew on a small, dense matrix the popular pairs run out;
/// after `8 * ratings` draws the remaining pairs are drawn uniformly instead.
///
/// # Panics
/// When `noise` is negative or not finite, `zipf_exponent` is negative or NaN, or
/// `users` or `items` exceed `2^32`.
///
/// ```
/// use strads_runtime::generate::{low_rank_ratings, LowRankConfig};
/// let cfg = LowRankConfig { users: 50, items: 40, ratings: 300, seed: 7, ..Default::default() };
/// let r = low_rank_ratings(&cfg);
/// assert_eq!((r.shape(), r.nnz()), ([50, 40], 300));
/// assert!(r.values().iter().all(|v| (1.0..=5.0).contains(v)));
/// ```
pub fn low_rank_ratings(cfg: &LowRankConfig) -> SparseArray<f32, 2> {
    let LowRankConfig {
        users,
        items,
        ratings,
        rank,
        noise,
        zipf_exponent,
        seed,
    } = *cfg;
    assert!(
        noise.is_finite() && noise >= 0.0,
        "low_rank_ratings: noise must be finite and non-negative, got {noise}"
    );
    assert!(
        zipf_exponent >= 0.0,
        "low_rank_ratings: zipf_exponent must be non-negative, got {zipf_exponent}"
    );
    let max_dim = u32::MAX as usize + 1;
    assert!(
        users <= max_dim && items <= max_dim,
        "low_rank_ratings: at most {max_dim} users and items, got {users} x {items}"
    );
    let shape = [users, items];
    let space = (users as u128 * items as u128) / 2;
    let target = usize::try_from(space).map_or(ratings, |space| ratings.min(space));

    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    // Entries ~ N(0, rank^-1/2): the dot product of a user and an item has variance 1.
    let scale = (rank.max(1) as f32).powf(-0.25);
    let mut factors = |n: usize| -> Vec<f32> {
        (0..n * rank)
            .map(|_| rng.sample::<f32, _>(StandardNormal) * scale)
            .collect()
    };
    let user_factors = factors(users);
    let item_factors = factors(items);
    let mut permutation = |n: usize| -> Vec<u32> {
        let mut ids: Vec<u32> = (0..n).map(|i| i as u32).collect();
        ids.shuffle(&mut rng);
        ids
    };
    let user_of_rank = permutation(users);
    let item_of_rank = permutation(items);

    let mut entries = Vec::with_capacity(target);
    if target > 0 {
        let user_zipf = Zipf::new(users as f64, zipf_exponent).expect("valid Zipf parameters");
        let item_zipf = Zipf::new(items as f64, zipf_exponent).expect("valid Zipf parameters");
        // Zipf samples are floats in 1..=n; the clamp guards against rounding.
        let draw = |zipf: &Zipf<f64>, of_rank: &[u32], rng: &mut Xoshiro256PlusPlus| {
            let r = (zipf.sample(rng) as usize).clamp(1, of_rank.len());
            u64::from(of_rank[r - 1])
        };
        // The noise comes from its own stream, so the pairs do not depend on it.
        let mut noise_rng = rng.clone();
        noise_rng.jump();
        let mut skewed_draws = target.saturating_mul(SKEWED_DRAWS_PER_RATING);
        let mut dedupe = Dedupe::new(target);
        let mut chunk = Vec::new();
        while entries.len() < target {
            // Pairs are drawn in chunks and deduplicated chunk by chunk; the result is
            // the first `target` distinct pairs of the draw sequence, as with one set.
            let len = ((target - entries.len()) * 2).clamp(1 << 10, 1 << 18);
            chunk.clear();
            chunk.extend((0..len).map(|_| {
                let (u, i) = if skewed_draws > 0 {
                    skewed_draws -= 1;
                    let u = draw(&user_zipf, &user_of_rank, &mut rng);
                    (u, draw(&item_zipf, &item_of_rank, &mut rng))
                } else {
                    let u = rng.random_range(0..users as u64);
                    (u, rng.random_range(0..items as u64))
                };
                (u << 32) | i
            }));
            let fresh = dedupe.first_occurrences(&chunk);
            for (&key, _) in chunk.iter().zip(fresh).filter(|&(_, &f)| f) {
                if entries.len() == target {
                    break;
                }
                let (u, i) = ((key >> 32) as usize, (key & u64::from(u32::MAX)) as usize);
                let uf = &user_factors[u * rank..(u + 1) * rank];
                let vf = &item_factors[i * rank..(i + 1) * rank];
                let dot: f32 = uf.iter().zip(vf).map(|(a, b)| a * b).sum();
                let eps = noise_rng.sample::<f32, _>(StandardNormal) * noise;
                entries.push(([u, i], (MEAN_RATING + dot + eps).clamp(1.0, 5.0)));
            }
        }
    }
    SparseArray::from_entries(shape, entries).expect("generated indices lie within the shape")
}

/// Remembers the `u64` keys seen so far and picks out the first occurrences in a chunk.
///
/// One big hash set would cost a cache miss per draw; instead keys are spread over
/// shards by a hash, and a chunk is processed shard by shard, each shard's set small
/// enough to stay in cache. A key always lands in the same shard, and the keys of a
/// shard are visited in draw order, so the outcome is that of one sequential set.
struct Dedupe {
    /// log2 of the number of shards.
    bits: u32,
    sets: Vec<HashSet<u64, U64BuildHasher>>,
    /// Scratch: start of each shard's run in `scattered`.
    starts: Vec<usize>,
    /// Scratch: `(position in chunk, key)` grouped by shard.
    scattered: Vec<(u32, u64)>,
    /// Scratch: whether each position of the chunk holds a first occurrence.
    fresh: Vec<bool>,
}

impl Dedupe {
    /// Keys per shard: a shard's set (8 bytes a key) then fits in L1/L2.
    const KEYS_PER_SHARD: usize = 2048;

    fn new(expected: usize) -> Self {
        let shards = (expected / Self::KEYS_PER_SHARD)
            .next_power_of_two()
            .min(1 << 12);
        let per_shard = expected / shards + expected / shards / 8 + 16;
        Dedupe {
            bits: shards.trailing_zeros(),
            sets: (0..shards)
                .map(|_| HashSet::with_capacity_and_hasher(per_shard, U64BuildHasher::default()))
                .collect(),
            starts: vec![0; shards + 1],
            scattered: Vec::new(),
            fresh: Vec::new(),
        }
    }

    /// The shard of `key`: Fibonacci hashing, independent of the sets' own hash (whose
    /// top bits hashbrown uses as tags, so they must still vary within a shard).
    #[inline]
    fn shard(bits: u32, key: u64) -> usize {
        if bits == 0 {
            0
        } else {
            (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
        }
    }

    /// For each key of `chunk`: whether it occurs for the first time (in this chunk and
    /// every earlier one).
    fn first_occurrences(&mut self, chunk: &[u64]) -> &[bool] {
        assert!(chunk.len() <= u32::MAX as usize);
        // Counting sort of the chunk by shard, stable so draw order is kept per shard.
        self.starts.fill(0);
        for &key in chunk {
            self.starts[Self::shard(self.bits, key) + 1] += 1;
        }
        for s in 1..self.starts.len() {
            self.starts[s] += self.starts[s - 1];
        }
        self.scattered.clear();
        self.scattered.resize(chunk.len(), (0, 0));
        let mut next = self.starts.clone();
        for (pos, &key) in chunk.iter().enumerate() {
            let slot = &mut next[Self::shard(self.bits, key)];
            self.scattered[*slot] = (pos as u32, key);
            *slot += 1;
        }
        self.fresh.clear();
        self.fresh.resize(chunk.len(), false);
        for (s, set) in self.sets.iter_mut().enumerate() {
            for &(pos, key) in &self.scattered[self.starts[s]..self.starts[s + 1]] {
                self.fresh[pos as usize] = set.insert(key);
            }
        }
        &self.fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> LowRankConfig {
        LowRankConfig {
            users: 200,
            items: 300,
            ratings: 5_000,
            ..LowRankConfig::default()
        }
    }

    fn entries(a: &SparseArray<f32, 2>) -> Vec<([usize; 2], f32)> {
        a.iter().map(|(k, &v)| (k, v)).collect()
    }

    #[test]
    fn deterministic_for_a_seed() {
        let a = low_rank_ratings(&small());
        let b = low_rank_ratings(&small());
        let c = low_rank_ratings(&LowRankConfig {
            seed: 43,
            ..small()
        });
        assert_eq!(entries(&a), entries(&b));
        assert_ne!(entries(&a), entries(&c));
    }

    #[test]
    fn default_has_movielens_shape_and_count() {
        let r = low_rank_ratings(&LowRankConfig::default());
        assert_eq!(r.shape(), [943, 1682]);
        assert_eq!(r.nnz(), 100_000);
    }

    #[test]
    fn pairs_are_unique_and_values_in_range() {
        let r = low_rank_ratings(&small());
        let mut keys: Vec<_> = r.iter().map(|(k, _)| k).collect();
        assert!(keys.iter().all(|&[u, i]| u < 200 && i < 300));
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 5_000);
        assert!(r.values().iter().all(|v| (1.0..=5.0).contains(v)));
        // Continuous ratings spread over the range, centred near 3.5.
        let mean = r.values().iter().sum::<f32>() / r.nnz() as f32;
        assert!((3.0..4.0).contains(&mean), "mean {mean}");
        assert!(r.values().iter().any(|&v| v < 2.0));
        assert!(r.values().iter().any(|&v| v > 4.9));
        assert!(r.values().iter().any(|&v| v.fract() != 0.0));
    }

    #[test]
    fn popularity_is_skewed_and_scattered() {
        let cfg = LowRankConfig::default();
        let r = low_rank_ratings(&cfg);
        let mut per_user = vec![0usize; cfg.users];
        for ([u, _], _) in &r {
            per_user[u] += 1;
        }
        let mean = r.nnz() as f64 / cfg.users as f64;
        let (top, &max) = per_user
            .iter()
            .enumerate()
            .max_by_key(|&(_, c)| *c)
            .unwrap();
        assert!(max as f64 > 5.0 * mean, "max {max}, mean {mean}");
        // The permutation scatters popularity: the top user is rarely user 0, and the ten
        // most popular users are not the ten smallest ids.
        let mut order: Vec<usize> = (0..cfg.users).collect();
        order.sort_by_key(|&u| std::cmp::Reverse(per_user[u]));
        assert_ne!(&order[..10], &(0..10).collect::<Vec<_>>()[..], "top {top}");
        // Entries are not sorted by user.
        let users: Vec<usize> = r.iter().map(|([u, _], _)| u).collect();
        assert!(users.windows(2).any(|w| w[0] > w[1]));
    }

    #[test]
    fn sharded_dedupe_matches_one_set() {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        let keys: Vec<u64> = (0..200_000).map(|_| rng.random_range(0..150_000)).collect();
        let mut seen = HashSet::new();
        let expected: Vec<bool> = keys.iter().map(|&k| seen.insert(k)).collect();
        let mut dedupe = Dedupe::new(100_000);
        assert!(dedupe.sets.len() > 1);
        let mut got = Vec::new();
        for chunk in keys.chunks(30_000) {
            got.extend_from_slice(dedupe.first_occurrences(chunk));
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn dense_request_is_capped_at_half() {
        let cfg = LowRankConfig {
            users: 20,
            items: 10,
            ratings: 1_000,
            zipf_exponent: 2.0,
            ..LowRankConfig::default()
        };
        let r = low_rank_ratings(&cfg);
        assert_eq!(r.nnz(), 100);
        let mut keys: Vec<_> = r.iter().map(|(k, _)| k).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 100);
    }

    #[test]
    fn degenerate_configs() {
        let empty = low_rank_ratings(&LowRankConfig {
            users: 0,
            ..small()
        });
        assert_eq!((empty.shape(), empty.nnz()), ([0, 300], 0));
        let uniform = low_rank_ratings(&LowRankConfig {
            rank: 0,
            noise: 0.0,
            zipf_exponent: 0.0,
            ..small()
        });
        assert_eq!(uniform.nnz(), 5_000);
        assert!(uniform.values().iter().all(|&v| v == MEAN_RATING));
    }
}
