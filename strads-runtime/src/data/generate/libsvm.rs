//! Sparse binary classification problems shaped like LIBSVM's a9a ([`libsvm_like`]).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

use serde::{Deserialize, Serialize};

use crate::cluster::session::Session;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp};
use crate::data::load::libsvm_in_place::{self, Layout};
use crate::error::{Error, Result};
use crate::load::LibSvm;

use super::{MAX_DIM, bad_parameter, check_memory, in_place_range};

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
/// [`Error::Setting`](crate::Error::Setting) naming the parameter when `zipf_exponent` is negative or not
/// finite, `features` exceeds [`MAX_DIM`], or a set would have more than `u32::MAX`
/// entries; [`Error::Alloc`](crate::Error::Alloc) when the data would not fit in memory.
/// On a cluster job's driver the problem is drawn in place (every rank draws the sequence
/// one process draws and keeps its range of each set's samples; see
/// [`LibSvm::gather`](crate::load::LibSvm::gather)): `Error::Alloc` for the driver's share,
/// [`Error::Rank`](crate::Error::Rank) when another rank's share would not fit.
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
    let p = Params {
        train,
        test,
        features,
        groups,
        zipf_exponent,
        seed,
    };
    if let Some(s) = crate::cluster::job::data_driver() {
        let [train, test] = in_place(s, p)?;
        return Ok((train, test));
    }
    p.check_memory(1)?;
    let [train_set, test_set] = draw(&p, 1, 0);
    let set = |d: Drawn| {
        let values = vec![1.0f32; d.features.len()];
        LibSvm::from_checked(d.labels, d.offsets, d.features, values, features)
    };
    Ok((set(train_set), set(test_set)))
}

/// A generated problem's parameters, checked ([`try_libsvm_like`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Params {
    train: usize,
    test: usize,
    features: usize,
    /// Feature groups: active features per sample, at most `features`.
    groups: usize,
    zipf_exponent: f64,
    seed: u64,
}

impl Params {
    /// Whether the memory the drawing takes is there: weights, ranks and the group
    /// statistics per feature, then labels, offsets and entries of `1 / ranks` of the
    /// samples.
    fn check_memory(&self, ranks: usize) -> Result<()> {
        let Params {
            train,
            test,
            features,
            groups,
            ..
        } = *self;
        let bytes = (features as u64).checked_mul(32).and_then(|b| {
            let samples = (train as u64)
                .checked_add(test as u64)?
                .div_ceil(ranks.max(1) as u64);
            b.checked_add(samples.checked_mul((groups as u64).checked_mul(8)?.checked_add(8)?)?)
        });
        let part = if ranks > 1 {
            format!("1/{ranks} of ")
        } else {
            String::new()
        };
        check_memory(
            &format!("{part}{train} + {test} generated samples of {features} features"),
            bytes,
        )
    }
}

/// The samples of one set rank `me` of `ranks` keeps (all of them for one rank), with
/// where every rank's are.
struct Drawn {
    labels: Vec<f32>,
    /// From 0 at the rank's first sample.
    offsets: Vec<u32>,
    features: Vec<u32>,
    layout: Layout,
}

/// The training and test sets of `p`, of which rank `me` of `ranks` keeps its range of the
/// samples (`in_place_range`): the whole sequence is drawn, so every range gets the samples
/// one process draws.
fn draw(p: &Params, ranks: usize, me: usize) -> [Drawn; 2] {
    let Params {
        train,
        test,
        features,
        groups,
        zipf_exponent,
        seed,
    } = *p;
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

    let mut draw_set = |n: usize| -> Drawn {
        // Each rank's first sample, then the end.
        let mut starts: Vec<usize> = (0..ranks)
            .map(|r| in_place_range(n, r, ranks).start)
            .collect();
        starts.push(n);
        let keep = in_place_range(n, me, ranks);
        let mut drawn = Drawn {
            labels: Vec::with_capacity(keep.len()),
            offsets: Vec::with_capacity(keep.len() + 1),
            features: Vec::with_capacity(keep.len() * groups),
            layout: Layout {
                samples: starts.clone(),
                entries: Vec::with_capacity(ranks + 1),
            },
        };
        drawn.offsets.push(0u32);
        let mut feats = Vec::with_capacity(groups);
        // Entries of every sample so far; each rank's first sample's recorded on the way.
        let mut entries = 0u64;
        let mut next = 0;
        for s in 0..n {
            while next < starts.len() && starts[next] == s {
                drawn.layout.entries.push(entries);
                next += 1;
            }
            feats.clear();
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
            let label = if rng.random::<f32>() < p { 1.0 } else { -1.0 };
            entries += feats.len() as u64;
            if keep.contains(&s) {
                drawn.labels.push(label);
                drawn.features.extend_from_slice(&feats);
                // From this rank's first entry; at most `u32::MAX` in a set (checked above).
                drawn
                    .offsets
                    .push((entries - drawn.layout.entries[me]) as u32);
            }
        }
        while drawn.layout.entries.len() < starts.len() {
            drawn.layout.entries.push(entries);
        }
        drawn
    };
    let train_set = draw_set(train);
    let test_set = draw_set(test);
    [train_set, test_set]
}

/// The arguments of a problem generated in place: the arrays' ids (labels, offsets,
/// features, values of each set) and the parameters.
type DrawArgs = ([[u64; 4]; 2], Params);

/// Driver: the problem of `p` drawn in place (this process's share of the memory checked
/// here first, an [`Error::Alloc`]; the others' on their ranks).
fn in_place(s: &'static Session, p: Params) -> Result<[LibSvm; 2]> {
    p.check_memory(s.size())?;
    let ids: [[u64; 4]; 2] =
        std::array::from_fn(|_| std::array::from_fn(|_| crate::array::fresh_id()));
    let features = p.features;
    let args: DrawArgs = (ids, p);
    let answers = spread::run(s, DRAW.name, spread::postcard_args(&args));
    let layouts: Vec<Vec<Layout>> = answers
        .and_then(|a| spread::decode_each(&a))
        .map_err(|e| libsvm_in_place::abandon(&ids, Error::Rank(e)))?;
    let sets = libsvm_in_place::made(s, &ids, &layouts[0], features)
        .map_err(|e| libsvm_in_place::abandon(&ids, Error::Rank(e)))?;
    Ok(sets.try_into().unwrap_or_else(|_| unreachable!("two sets")))
}

#[linkme::distributed_slice(DATA_OPS)]
static DRAW: DataOp = DataOp {
    name: "strads::libsvm_like",
    run: draw_part,
};

/// One rank's part of a generated problem: every rank draws the whole sequence one process
/// draws and keeps its range of each set's samples.
fn draw_part(ctx: &mut Ctx, args: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let (ids, p): DrawArgs =
        postcard::from_bytes(args).map_err(|e| format!("libsvm_like's arguments ({e})"))?;
    let fits = p.check_memory(ctx.size);
    ctx.agree(fits.map_err(|e| e.to_string()))?;
    let mut layouts = Vec::with_capacity(2);
    for (ids, d) in ids.into_iter().zip(draw(&p, ctx.size, ctx.rank)) {
        let values = vec![1.0f32; d.features.len()];
        libsvm_in_place::keep_parts(
            ids, &d.layout, ctx.rank, d.labels, d.offsets, d.features, values,
        )?;
        layouts.push(d.layout);
    }
    Ok(spread::postcard_args(&layouts))
}
