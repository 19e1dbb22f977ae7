use super::ratings::MEAN_RATING;
use super::*;
use crate::array::SparseArray;
use crate::load::LibSvm;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

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

/// The generators' sequences, pinned: a change of the order of their draws changes every
/// program's data and is seen here (the in-place forms are checked against these).
#[test]
fn the_text_and_graph_generators_draw_what_they_drew() {
    let digest = |xs: &mut dyn Iterator<Item = u64>| {
        xs.fold(0u64, |s, x| s.wrapping_mul(1_000_003).wrapping_add(x))
    };
    let w = super::words_like(&super::WordsConfig {
        words: 20_000,
        types: 3000,
        ..Default::default()
    })
    .unwrap();
    let words = digest(&mut w.tokens.iter().map(|&t| u64::from(t)));
    let kg = super::kg_like(&super::KgConfig {
        entities: 500,
        relations: 10,
        train: 5_000,
        valid: 200,
        test: 200,
        ..Default::default()
    });
    let triples = digest(
        &mut kg
            .train
            .iter()
            .chain(&kg.valid)
            .chain(&kg.test)
            .flatten()
            .map(|&x| u64::from(x)),
    );
    assert_eq!(
        (
            w.vocab.len(),
            w.tokens.len(),
            w.sentences.len(),
            words,
            triples
        ),
        (822, 16147, 3, 6363745511239401579, 1125947278708991635)
    );
}
