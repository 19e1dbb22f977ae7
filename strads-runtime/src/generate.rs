//! Synthetic data sets, for tests and benchmarks at any size: rating matrices with a
//! known low-rank structure ([`low_rank_ratings`]), sparse binary classification
//! problems shaped like LIBSVM's a9a ([`libsvm_like`]), and the edges of a grid graph
//! ([`grid_edges`], a road network's shape).
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
use crate::error::{Error, Result};
use crate::load::{LibSvm, U64BuildHasher};

/// The most rows, columns or features a generator makes (indices are stored as `u32`).
pub const MAX_DIM: usize = u32::MAX as usize + 1;

/// [`Error::Setting`] for field `name` of a generator's parameters.
pub(crate) fn bad_parameter(name: &str, value: impl ToString, expected: &str) -> Error {
    Error::Setting {
        name: name.to_owned(),
        value: value.to_string(),
        expected: expected.to_owned(),
    }
}

/// Checks that about `bytes` (`None`: more than a `u64` holds) can be allocated for
/// `what`, by reserving them (untouched, so nothing is committed) and letting them go:
/// a request the system cannot meet becomes [`Error::Alloc`] instead of an abort.
pub(crate) fn check_memory(what: &str, bytes: Option<u64>) -> Result<()> {
    let fail = || Error::Alloc {
        what: what.to_owned(),
        bytes,
    };
    let n = bytes
        .and_then(|b| usize::try_from(b).ok())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(fail)?;
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(n).map_err(|_| fail())
}

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
/// When [`try_low_rank_ratings`] fails: `noise` is negative or not finite,
/// `zipf_exponent` is negative or not finite, `users` or `items` exceed [`MAX_DIM`], or
/// the data would not fit in memory.
///
/// ```
/// use strads_runtime::generate::{low_rank_ratings, LowRankConfig};
/// let cfg = LowRankConfig { users: 50, items: 40, ratings: 300, seed: 7, ..Default::default() };
/// let r = low_rank_ratings(&cfg);
/// assert_eq!((r.shape(), r.nnz()), ([50, 40], 300));
/// assert!(r.values().iter().all(|v| (1.0..=5.0).contains(v)));
/// ```
pub fn low_rank_ratings(cfg: &LowRankConfig) -> SparseArray<f32, 2> {
    try_low_rank_ratings(cfg).unwrap_or_else(|e| panic!("low_rank_ratings: {e}"))
}

/// [`low_rank_ratings`], with bad parameters as errors.
///
/// # Errors
/// [`Error::Setting`] naming the parameter when `noise` is negative or not finite,
/// `zipf_exponent` is negative or not finite, or `users` or `items` exceed [`MAX_DIM`];
/// [`Error::Alloc`] when the factors and ratings would not fit in memory.
///
/// ```
/// use strads_runtime::generate::{try_low_rank_ratings, LowRankConfig};
/// let e = try_low_rank_ratings(&LowRankConfig { noise: f32::NAN, ..Default::default() });
/// assert_eq!(
///     e.unwrap_err().to_string(),
///     "invalid setting LowRankConfig.noise=\"NaN\": a finite number, at least 0"
/// );
/// ```
pub fn try_low_rank_ratings(cfg: &LowRankConfig) -> Result<SparseArray<f32, 2>> {
    let LowRankConfig {
        users,
        items,
        ratings,
        rank,
        noise,
        zipf_exponent,
        seed,
    } = *cfg;
    if !(noise.is_finite() && noise >= 0.0) {
        return Err(bad_parameter(
            "LowRankConfig.noise",
            noise,
            "a finite number, at least 0",
        ));
    }
    if !(zipf_exponent.is_finite() && zipf_exponent >= 0.0) {
        return Err(bad_parameter(
            "LowRankConfig.zipf_exponent",
            zipf_exponent,
            "a finite number, at least 0",
        ));
    }
    for (name, n) in [
        ("LowRankConfig.users", users),
        ("LowRankConfig.items", items),
    ] {
        if n > MAX_DIM {
            return Err(bad_parameter(
                name,
                n,
                &format!("at most {MAX_DIM} (indices are u32)"),
            ));
        }
    }
    let shape = [users, items];
    let space = (users as u128 * items as u128) / 2;
    let target = usize::try_from(space).map_or(ratings, |space| ratings.min(space));
    // Factors and permutations, then the entries and the deduplication sets.
    let bytes = (users as u64)
        .checked_add(items as u64)
        .and_then(|n| n.checked_mul((rank as u64).checked_mul(4)?.checked_add(4)?))
        .and_then(|b| b.checked_add((target as u64).checked_mul(48)?));
    check_memory(
        &format!("{users} x {items} generated ratings of rank {rank} ({target} ratings)"),
        bytes,
    )?;

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
    Ok(SparseArray::from_entries(shape, entries).expect("generated indices lie within the shape"))
}

/// Logit of a sample whose features all have hidden weight 0 (about 24% positives, as
/// in a9a).
const LIBSVM_BIAS: f32 = -2.2;

/// Standard deviation of the hidden logit around [`LIBSVM_BIAS`]: with the bias, the best
/// possible accuracy is about 0.86, as for a linear model on a9a.
const LIBSVM_MARGIN_STD: f32 = 2.5;

/// Probability that a sample has no feature in a group (a missing attribute).
const LIBSVM_MISSING: f64 = 0.01;

/// Parameters of [`libsvm_like`].
///
/// The default has the shape of LIBSVM's a9a: 32 561 training and 16 281 test samples,
/// 123 binary features, 14 groups (about 13.9 active features per sample), Zipf exponent
/// 1.0 and seed 42.
///
/// ```
/// use strads_runtime::generate::LibSvmConfig;
/// let big = LibSvmConfig { train: 1_000_000, test: 100_000, features: 100_000, active: 20, ..Default::default() };
/// assert_eq!(big.zipf_exponent, 1.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LibSvmConfig {
    /// Training samples.
    pub train: usize,
    /// Test samples, drawn from the same hidden model.
    pub test: usize,
    /// Number of features (`n_features` of both sets).
    pub features: usize,
    /// Feature groups, each contributing one active feature to a sample (capped at
    /// `features`): the number of active features per sample, but for missing groups.
    pub active: usize,
    /// Exponent of the Zipf distribution of feature popularity within a group (0 =
    /// uniform).
    pub zipf_exponent: f64,
    /// Seed of the xoshiro256++ generator: the same config gives the same data.
    pub seed: u64,
}

impl Default for LibSvmConfig {
    fn default() -> Self {
        LibSvmConfig {
            train: 32_561,
            test: 16_281,
            features: 123,
            active: 14,
            zipf_exponent: 1.0,
            seed: 42,
        }
    }
}

/// A synthetic binary classification problem shaped like LIBSVM's a9a (one-hot encoded
/// categorical attributes): a training and a test set with `n_features = cfg.features`.
///
/// The features are cut into `cfg.active` groups of consecutive indices (one attribute
/// each). A sample draws one feature from each group, with Zipf-skewed popularity
/// (ranks `1..=group size`, exponent `cfg.zipf_exponent`, assigned to the group's
/// features by a random permutation), and skips a group with probability 1%; values are
/// 1. Features increase within a sample, as in a LIBSVM file.
///
/// Labels come from a hidden logistic model: every feature has a gaussian weight,
/// standardised within its group under the popularity distribution, so the logit
/// `z = -2.2 + sum of the sample's weights` has standard deviation about 2.5, and the
/// label is `+1` with probability `1 / (1 + exp(-z))`, else `-1`. About 24% of the
/// samples are positive and the best possible accuracy is about 0.86, close to what a
/// linear model reaches on a9a; the hidden model is linear in the features, so logistic
/// regression can approach it. Everything is deterministic for `cfg.seed`; the test set
/// is drawn after the training set from the same model.
///
/// # Panics
/// When [`try_libsvm_like`] fails: `zipf_exponent` is negative or not finite, `features`
/// exceeds [`MAX_DIM`], a set would have more than `u32::MAX` entries, or the data would
/// not fit in memory.
///
/// ```
/// use strads_runtime::generate::{libsvm_like, LibSvmConfig};
/// let (train, test) = libsvm_like(&LibSvmConfig { train: 1000, test: 500, ..Default::default() });
/// assert_eq!((train.samples(), test.samples()), (1000, 500));
/// assert_eq!((train.n_features, test.n_features), (123, 123));
/// let (y, features, values) = train.sample(0);
/// assert!(y == 1.0 || y == -1.0);
/// assert!(features.windows(2).all(|f| f[0] < f[1]) && values.iter().all(|&v| v == 1.0));
/// ```
pub fn libsvm_like(cfg: &LibSvmConfig) -> (LibSvm, LibSvm) {
    try_libsvm_like(cfg).unwrap_or_else(|e| panic!("libsvm_like: {e}"))
}

/// [`libsvm_like`], with bad parameters as errors.
///
/// # Errors
/// [`Error::Setting`] naming the parameter when `zipf_exponent` is negative or not
/// finite, `features` exceeds [`MAX_DIM`], or a set would have more than `u32::MAX`
/// entries; [`Error::Alloc`] when the data would not fit in memory.
///
/// ```
/// use strads_runtime::generate::{try_libsvm_like, LibSvmConfig};
/// let e = try_libsvm_like(&LibSvmConfig { features: 1 << 40, ..Default::default() });
/// assert_eq!(
///     e.unwrap_err().to_string(),
///     "invalid setting LibSvmConfig.features=\"1099511627776\": at most 4294967296 (indices \
///      are u32)"
/// );
/// ```
pub fn try_libsvm_like(cfg: &LibSvmConfig) -> Result<(LibSvm, LibSvm)> {
    let LibSvmConfig {
        train,
        test,
        features,
        active,
        zipf_exponent,
        seed,
    } = *cfg;
    if !(zipf_exponent.is_finite() && zipf_exponent >= 0.0) {
        return Err(bad_parameter(
            "LibSvmConfig.zipf_exponent",
            zipf_exponent,
            "a finite number, at least 0",
        ));
    }
    if features > MAX_DIM {
        return Err(bad_parameter(
            "LibSvmConfig.features",
            features,
            &format!("at most {MAX_DIM} (indices are u32)"),
        ));
    }
    let groups = active.min(features);
    for (name, n) in [("LibSvmConfig.train", train), ("LibSvmConfig.test", test)] {
        if (n as u128) * (groups as u128) > u128::from(u32::MAX) {
            return Err(bad_parameter(
                name,
                n,
                &format!(
                    "at most {} samples with {groups} active features (a set holds at most {} \
                     entries)",
                    u32::MAX as usize / groups,
                    u32::MAX
                ),
            ));
        }
    }
    // Weights, ranks and the group statistics per feature; labels, offsets and entries.
    let bytes = (features as u64).checked_mul(32).and_then(|b| {
        let samples = (train as u64).checked_add(test as u64)?;
        b.checked_add(samples.checked_mul((groups as u64).checked_mul(8)?.checked_add(8)?)?)
    });
    check_memory(
        &format!("{train} + {test} generated samples of {features} features"),
        bytes,
    )?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let scale = LIBSVM_MARGIN_STD / (groups.max(1) as f32).sqrt();
    let mut weights = vec![0f32; features];
    // Per group: its first feature, the feature (offset) of each popularity rank, and the
    // popularity distribution.
    let mut layout = Vec::with_capacity(groups);
    for g in 0..groups {
        let (start, end) = (g * features / groups, (g + 1) * features / groups);
        let size = end - start;
        let mut of_rank: Vec<u32> = (0..size as u32).collect();
        of_rank.shuffle(&mut rng);
        // Zipf probabilities of the ranks, to standardise the group's weights: the
        // group's contribution to the logit then has mean 0 and variance 1.
        let pmf: Vec<f64> = (1..=size)
            .map(|r| (r as f64).powf(-zipf_exponent))
            .collect();
        let total: f64 = pmf.iter().sum();
        let raw: Vec<f64> = (0..size)
            .map(|_| f64::from(rng.sample::<f32, _>(StandardNormal)))
            .collect();
        let mean: f64 = (0..size).map(|r| pmf[r] * raw[r]).sum::<f64>() / total;
        let var: f64 = (0..size)
            .map(|r| pmf[r] * (raw[r] - mean).powi(2))
            .sum::<f64>()
            / total;
        let sd = var.sqrt();
        for r in 0..size {
            let w = if sd > 0.0 { (raw[r] - mean) / sd } else { 0.0 };
            weights[start + of_rank[r] as usize] = w as f32 * scale;
        }
        let zipf = Zipf::new(size as f64, zipf_exponent).expect("valid Zipf parameters");
        layout.push((start as u32, of_rank, zipf));
    }

    let mut draw_set = |n: usize| -> LibSvm {
        let mut labels = Vec::with_capacity(n);
        let mut offsets = Vec::with_capacity(n + 1);
        let mut feats = Vec::with_capacity(n * groups);
        offsets.push(0u32);
        for _ in 0..n {
            let mut z = LIBSVM_BIAS;
            for (start, of_rank, zipf) in &layout {
                if rng.random::<f64>() < LIBSVM_MISSING {
                    continue;
                }
                // Zipf samples are floats in 1..=n; the clamp guards against rounding.
                let r = (zipf.sample(&mut rng) as usize).clamp(1, of_rank.len());
                let f = start + of_rank[r - 1];
                z += weights[f as usize];
                feats.push(f);
            }
            let p = 1.0 / (1.0 + (-z).exp());
            labels.push(if rng.random::<f32>() < p { 1.0 } else { -1.0 });
            let end = u32::try_from(feats.len())
                .unwrap_or_else(|_| panic!("libsvm_like: more than {} entries", u32::MAX));
            offsets.push(end);
        }
        let values = vec![1.0f32; feats.len()];
        LibSvm::from_checked(labels, offsets, feats, values, features)
    };
    let train_set = draw_set(train);
    let test_set = draw_set(test);
    Ok((train_set, test_set))
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

/// The edges of a `side` x `side` grid graph as `(sources, targets)`: nodes numbered row
/// by row, each node's edge to its right neighbour, then to the one below, node by node.
/// Consecutive edges share nodes, so a loop over them in this order is one long chain of
/// conflicts with only neighbours meeting: what splitting components is for.
///
/// ```
/// use strads_runtime::generate::grid_edges;
/// let (src, dst) = grid_edges(3);
/// assert_eq!(src.len(), 12); // 2 * 3 * (3 - 1)
/// assert_eq!((src[0], dst[0], src[1], dst[1]), (0, 1, 0, 3));
/// ```
pub fn grid_edges(side: usize) -> (Vec<u32>, Vec<u32>) {
    let mut src = Vec::with_capacity(2 * side * side);
    let mut dst = Vec::with_capacity(2 * side * side);
    for i in 0..side {
        for j in 0..side {
            let v = (i * side + j) as u32;
            if j + 1 < side {
                src.push(v);
                dst.push(v + 1);
            }
            if i + 1 < side {
                src.push(v);
                dst.push(v + side as u32);
            }
        }
    }
    (src, dst)
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

    fn small_svm() -> LibSvmConfig {
        LibSvmConfig {
            train: 4_000,
            test: 1_000,
            ..LibSvmConfig::default()
        }
    }

    #[test]
    fn libsvm_like_is_deterministic_for_a_seed() {
        let a = libsvm_like(&small_svm());
        let b = libsvm_like(&small_svm());
        let c = libsvm_like(&LibSvmConfig {
            seed: 43,
            ..small_svm()
        });
        assert_eq!(a, b);
        assert_ne!(a.0, c.0);
        assert_ne!(a.0, a.1);
    }

    #[test]
    fn libsvm_like_has_a9a_shape() {
        let (train, test) = libsvm_like(&LibSvmConfig::default());
        assert_eq!((train.samples(), test.samples()), (32_561, 16_281));
        assert_eq!((train.n_features, test.n_features), (123, 123));
        for set in [&train, &test] {
            let per_sample = set.nnz() as f64 / set.samples() as f64;
            assert!((13.7..14.0).contains(&per_sample), "{per_sample}");
            let positive = set.positives() as f64 / set.samples() as f64;
            assert!((0.18..0.30).contains(&positive), "{positive}");
            assert!(set.values.as_slice().iter().all(|&v| v == 1.0));
            assert!(set.features.as_slice().iter().all(|&f| f < 123));
            for s in 0..set.samples() {
                let (y, f, _) = set.sample(s);
                assert!(y == 1.0 || y == -1.0);
                assert!(f.windows(2).all(|w| w[0] < w[1]), "sample {s}: {f:?}");
            }
        }
        // The parts fit together as the loader's would.
        let again = LibSvm::from_parts(
            train.labels.as_slice().to_vec(),
            train.offsets.as_slice().to_vec(),
            train.features.as_slice().to_vec(),
            train.values.as_slice().to_vec(),
            train.n_features,
        )
        .unwrap();
        assert_eq!(again, train);
    }

    #[test]
    fn libsvm_like_popularity_is_skewed_and_labels_follow_features() {
        let (train, _) = libsvm_like(&LibSvmConfig {
            train: 20_000,
            test: 0,
            features: 1_000,
            active: 10,
            ..LibSvmConfig::default()
        });
        let mut count = vec![0usize; 1_000];
        let mut positive = vec![0usize; 1_000];
        for s in 0..train.samples() {
            let (y, f, _) = train.sample(s);
            for &f in f {
                count[f as usize] += 1;
                positive[f as usize] += usize::from(y > 0.0);
            }
        }
        // Group 0 is features 0..100: its most popular feature is far above the mean.
        let group = &count[..100];
        let max = *group.iter().max().unwrap();
        let mean = group.iter().sum::<usize>() as f64 / 100.0;
        assert!(max as f64 > 10.0 * mean, "max {max}, mean {mean}");
        // Popular features carry signal: their positive rates differ widely.
        let rates: Vec<f64> = (0..1_000)
            .filter(|&f| count[f] >= 500)
            .map(|f| positive[f] as f64 / count[f] as f64)
            .collect();
        let (lo, hi) = rates
            .iter()
            .fold((1.0f64, 0.0f64), |(lo, hi), &r| (lo.min(r), hi.max(r)));
        assert!(hi - lo > 0.2, "positive rates {lo}..{hi}");
    }

    #[test]
    fn bad_parameters_are_errors() {
        let e = |r: Result<SparseArray<f32, 2>>| r.unwrap_err().to_string();
        let cfg = LowRankConfig::default();
        assert_eq!(
            e(try_low_rank_ratings(&LowRankConfig {
                zipf_exponent: f64::INFINITY,
                ..cfg.clone()
            })),
            "invalid setting LowRankConfig.zipf_exponent=\"inf\": a finite number, at least 0"
        );
        assert_eq!(
            e(try_low_rank_ratings(&LowRankConfig {
                users: 10_000_000_000,
                ..cfg.clone()
            })),
            "invalid setting LowRankConfig.users=\"10000000000\": at most 4294967296 (indices \
             are u32)"
        );
        assert_eq!(
            e(try_low_rank_ratings(&LowRankConfig {
                rank: usize::MAX,
                ..cfg.clone()
            })),
            format!(
                "cannot allocate more than 2^64 bytes for 943 x 1682 generated ratings of rank \
                 {} (100000 ratings)",
                usize::MAX
            )
        );
        // Within the limits but beyond any machine: an error, not an abort.
        assert!(
            e(try_low_rank_ratings(&LowRankConfig {
                users: 1 << 32,
                items: 1 << 32,
                rank: 1 << 20,
                ..cfg.clone()
            }))
            .starts_with("cannot allocate 36028831383502336 bytes for 4294967296 x 4294967296")
        );
        let svm = |c: LibSvmConfig| try_libsvm_like(&c).unwrap_err().to_string();
        assert_eq!(
            svm(LibSvmConfig {
                zipf_exponent: -1.0,
                ..small_svm()
            }),
            "invalid setting LibSvmConfig.zipf_exponent=\"-1\": a finite number, at least 0"
        );
        assert_eq!(
            svm(LibSvmConfig {
                train: 1 << 30,
                ..small_svm()
            }),
            "invalid setting LibSvmConfig.train=\"1073741824\": at most 306783378 samples with \
             14 active features (a set holds at most 4294967295 entries)"
        );
    }

    #[test]
    fn libsvm_like_degenerate_configs() {
        let (train, test) = libsvm_like(&LibSvmConfig {
            train: 10,
            test: 0,
            features: 0,
            ..small_svm()
        });
        assert_eq!((train.samples(), train.nnz(), test.samples()), (10, 0, 0));
        assert_eq!(test.offsets.as_slice(), &[0]);
        // More groups than features: one feature per group, always the same.
        let (train, _) = libsvm_like(&LibSvmConfig {
            train: 100,
            test: 0,
            features: 3,
            active: 14,
            zipf_exponent: 0.0,
            ..small_svm()
        });
        assert!(train.nnz() <= 300 && train.nnz() >= 280);
    }
}
