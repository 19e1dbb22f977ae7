//! Rating matrices with a known low-rank structure ([`low_rank_ratings`]).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::array::SparseArray;
use crate::error::Result;

use super::in_place::{first_occurrences, range};
use super::{Dedupe, MAX_DIM, bad_parameter, check_memory};
use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, Facts};
use crate::error::Error;

/// The mean rating around which the synthetic ratings spread.
pub(super) const MEAN_RATING: f32 = 3.5;

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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
        seed: _,
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
    if let Some(s) = crate::cluster::job::data_driver() {
        return in_place(s, cfg, target);
    }
    // Factors and permutations, then the entries and the deduplication sets.
    check_memory(
        &format!("{users} x {items} generated ratings of rank {rank} ({target} ratings)"),
        bytes_needed(cfg, target, 1),
    )?;
    let mut dedupe = Dedupe::new(target);
    let entries = draw(cfg, target, 0..target, |chunk| {
        dedupe.first_occurrences(chunk).to_vec()
    });
    drop(dedupe);
    Ok(SparseArray::from_entries(shape, entries).expect("generated indices lie within the shape"))
}

/// Bytes the factors, the permutations and a `1 / ranks` share of the entries and their
/// deduplication sets take.
pub(super) fn bytes_needed(cfg: &LowRankConfig, target: usize, ranks: usize) -> Option<u64> {
    (cfg.users as u64)
        .checked_add(cfg.items as u64)
        .and_then(|n| n.checked_mul((cfg.rank as u64).checked_mul(4)?.checked_add(4)?))
        .and_then(|b| b.checked_add((target as u64).checked_mul(48)? / ranks.max(1) as u64))
}

/// The ratings of positions `keep` of the `target` distinct pairs of `cfg`'s draw sequence,
/// each with its value: `fresh(chunk)` says which draws of a chunk are first occurrences
/// (in that chunk and every earlier one). Every process that draws with the same `fresh`
/// answers gets the same ratings at the same positions: one process keeps them all, each
/// rank of a cluster its range.
pub(super) fn draw(
    cfg: &LowRankConfig,
    target: usize,
    keep: std::ops::Range<usize>,
    mut fresh: impl FnMut(&[u64]) -> Vec<bool>,
) -> Vec<([usize; 2], f32)> {
    let LowRankConfig {
        users,
        items,
        rank,
        noise,
        zipf_exponent,
        seed,
        ..
    } = *cfg;
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

    let mut entries = Vec::with_capacity(keep.len());
    // Distinct pairs found so far (kept here or not).
    let mut found = 0;
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
        let mut chunk = Vec::new();
        while found < target {
            // Pairs are drawn in chunks and deduplicated chunk by chunk; the result is
            // the first `target` distinct pairs of the draw sequence, as with one set.
            let len = ((target - found) * 2).clamp(1 << 10, 1 << 18);
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
            let first = fresh(&chunk);
            for (&key, _) in chunk.iter().zip(first).filter(|&(_, f)| f) {
                if found == target {
                    break;
                }
                // Every process draws every pair's noise, to keep the stream in step.
                let eps = noise_rng.sample::<f32, _>(StandardNormal) * noise;
                if keep.contains(&found) {
                    let (u, i) = ((key >> 32) as usize, (key & u64::from(u32::MAX)) as usize);
                    let uf = &user_factors[u * rank..(u + 1) * rank];
                    let vf = &item_factors[i * rank..(i + 1) * rank];
                    let dot: f32 = uf.iter().zip(vf).map(|(a, b)| a * b).sum();
                    entries.push(([u, i], (MEAN_RATING + dot + eps).clamp(1.0, 5.0)));
                }
                found += 1;
            }
        }
    }
    entries
}

/// The arguments of a generated rating set made in place: the array's id, the config
/// and the number of ratings.
type RatingArgs = (u64, LowRankConfig, usize);

/// Driver: `cfg`'s `target` ratings made in place on the job's ranks.
fn in_place(
    s: &'static Session,
    cfg: &LowRankConfig,
    target: usize,
) -> Result<SparseArray<f32, 2>> {
    let id = crate::array::fresh_id();
    let args: RatingArgs = (id, cfg.clone(), target);
    let answers =
        spread::run(s, RATINGS.name, spread::postcard_args(&args)).map_err(Error::Rank)?;
    let facts: Vec<Facts> = spread::decode_each(&answers).map_err(Error::Rank)?;
    spread::made(s, id, [cfg.users, cfg.items], &facts).map_err(Error::Rank)
}

#[linkme::distributed_slice(DATA_OPS)]
static RATINGS: DataOp = DataOp {
    name: "strads::low_rank_ratings",
    run: ratings_part,
};

/// One rank's part of a generated rating set.
fn ratings_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (id, cfg, target): RatingArgs =
        postcard::from_bytes(args).map_err(|e| format!("ratings' arguments ({e})"))?;
    let (me, size) = (ctx.rank, ctx.size);
    let fits = check_memory(
        &format!(
            "1/{size} of {} x {} generated ratings ({target} ratings)",
            cfg.users, cfg.items
        ),
        bytes_needed(&cfg, target, size),
    );
    ctx.agree(fits.map_err(|e| e.to_string()))?;
    let mut dedupe = Dedupe::new(target / size + 1);
    let entries = draw(&cfg, target, range(target, me, size), |chunk| {
        first_occurrences(ctx, &mut dedupe, chunk)
    });
    drop(dedupe);
    let (keys, values): (Vec<[u32; 2]>, Vec<f32>) = entries
        .into_iter()
        .map(|([u, i], v)| ([u as u32, i as u32], v))
        .unzip();
    let facts = spread::keep_new(id, keys, values);
    Ok(spread::postcard_args(&facts))
}
