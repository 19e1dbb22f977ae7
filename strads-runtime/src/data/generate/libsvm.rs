//! Sparse binary classification problems shaped like LIBSVM's a9a ([`libsvm_like`]).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal, Zipf};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::error::Result;
use crate::load::LibSvm;

use super::{MAX_DIM, bad_parameter, check_memory};

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
