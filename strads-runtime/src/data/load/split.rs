//! [`split`]: a sparse array's entries (ratings, a corpus's counts) into a training and a
//! test set, in one process or in place on the ranks that hold a spread array's parts.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::array::SparseArray;
use crate::cluster::spread::{self, Ctx, DATA_OPS, DataOp, Facts};

/// Knuth's selection sampling (algorithm S) over `n` entries: entry `k` goes to the test
/// set with probability (test entries still wanted) / (entries left), which picks a
/// uniformly random subset of exactly the wanted size in one pass. The choices depend only
/// on `n`, the wanted count and the seed, not on the entries: every rank can make them.
struct Selection {
    n: usize,
    k: usize,
    wanted: usize,
    rng: Xoshiro256PlusPlus,
}

impl Selection {
    fn new(n: usize, test_fraction: f64, seed: u64) -> Self {
        Selection {
            n,
            k: 0,
            wanted: ((n as f64) * test_fraction).round() as usize,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }
}

impl Iterator for Selection {
    type Item = bool;
    fn next(&mut self) -> Option<bool> {
        if self.k == self.n {
            return None;
        }
        let left = (self.n - self.k) as f64;
        let test = self.wanted > 0 && self.rng.random::<f64>() * left < self.wanted as f64;
        if test {
            self.wanted -= 1;
        }
        self.k += 1;
        Some(test)
    }
}

/// Splits a sparse array's entries (ratings, a corpus's counts) into a training and a test
/// set: exactly `round(test_fraction * nnz)` entries, chosen uniformly at random, go to the
/// test set, the others to the training set.
///
/// The choice is deterministic for a `seed` (xoshiro256++); both halves keep the
/// original shape and the entries' relative order. On a cluster job's driver, an array in
/// parts on the ranks (generated or loaded in place) is split in place: each rank splits
/// its part, and both halves stay in parts, with the entries one process would choose.
///
/// # Panics
/// When `test_fraction` is not within `[0, 1]`.
///
/// ```
/// use strads_runtime::SparseArray;
/// let entries = (0..100).map(|n| ([n / 10, n % 10], n as f32)).collect();
/// let all = SparseArray::from_entries([10, 10], entries).unwrap();
/// let (train, test) = strads_runtime::load::split(&all, 0.2, 42);
/// assert_eq!((train.nnz(), test.nnz()), (80, 20));
/// assert_eq!(test.shape(), [10, 10]);
/// ```
pub fn split<T, const N: usize>(
    data: &SparseArray<T, N>,
    test_fraction: f64,
    seed: u64,
) -> (SparseArray<T, N>, SparseArray<T, N>)
where
    T: Clone + Send + Sync + 'static,
{
    assert!(
        (0.0..=1.0).contains(&test_fraction),
        "split: test_fraction must be within [0, 1], got {test_fraction}"
    );
    let n = data.nnz();
    if let Some(s) = data.spread_values().and(crate::cluster::job::data_driver()) {
        return in_place(s, data, test_fraction, seed);
    }
    let choices = Selection::new(n, test_fraction, seed);
    let (mut train, mut test) = (
        Vec::with_capacity(n - choices.wanted),
        Vec::with_capacity(choices.wanted),
    );
    for ((idx, v), to_test) in data.iter().zip(choices) {
        if to_test {
            test.push((idx, v.clone()));
        } else {
            train.push((idx, v.clone()));
        }
    }
    let shape = data.shape();
    let build = |entries| {
        SparseArray::from_entries(shape, entries)
            .expect("entries of an array fit that array's shape")
    };
    (build(train), build(test))
}

/// Driver: `data`'s parts split on their ranks.
fn in_place<T, const N: usize>(
    s: &'static crate::cluster::session::Session,
    data: &SparseArray<T, N>,
    test_fraction: f64,
    seed: u64,
) -> (SparseArray<T, N>, SparseArray<T, N>)
where
    T: Clone + Send + Sync + 'static,
{
    let ids = [crate::array::fresh_id(), crate::array::fresh_id()];
    let args = (data.id(), ids, data.nnz(), test_fraction, seed);
    let made = spread::run(s, SPLIT.name, spread::postcard_args(&args))
        .and_then(|a| spread::decode_each::<(Facts, Facts)>(&a))
        .and_then(|facts| {
            let (train, test): (Vec<Facts>, Vec<Facts>) = facts.into_iter().unzip();
            Ok((
                spread::made(s, ids[0], data.shape(), &train)?,
                spread::made(s, ids[1], data.shape(), &test)?,
            ))
        });
    made.unwrap_or_else(|e| s.fail(format!("splitting a sparse array in place: {e}")))
}

#[linkme::distributed_slice(DATA_OPS)]
static SPLIT: DataOp = DataOp {
    name: "strads::split",
    run: split_part,
};

/// One rank's part of a split: the choices of every entry before its part are made and
/// dropped (they depend on nothing else), those of its part kept.
fn split_part(ctx: &mut Ctx, args: &[u8]) -> Result<Vec<u8>, String> {
    let (id, ids, n, test_fraction, seed): (u64, [u64; 2], usize, f64, u64) =
        postcard::from_bytes(args).map_err(|e| format!("split's arguments ({e})"))?;
    let count = spread::with_part(id, |p| p.facts().count)?;
    let counts = ctx.all_gather(count.to_le_bytes().to_vec());
    let offset: u64 = counts[..ctx.rank]
        .iter()
        .map(|b| u64::from_le_bytes(b.as_slice().try_into().unwrap_or([0; 8])))
        .sum();
    let mut choices = Selection::new(n, test_fraction, seed);
    let skipped = choices.by_ref().take(offset as usize).count();
    if skipped as u64 != offset {
        return Err(format!(
            "{n} entries, this rank's part starting at {offset}"
        ));
    }
    let to_test: Vec<bool> = choices.take(count as usize).collect();
    let [train, test] = spread::with_part(id, |p| {
        [p.select(&|k| !to_test[k]), p.select(&|k| to_test[k])]
    })?;
    let facts = (train.facts(), test.facts());
    spread::keep(ids[0], train);
    spread::keep(ids[1], test);
    Ok(spread::postcard_args(&facts))
}
