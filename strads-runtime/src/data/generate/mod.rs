//! Synthetic data sets, for tests and benchmarks at any size: rating matrices with a
//! known low-rank structure ([`low_rank_ratings`]), sparse binary classification
//! problems shaped like LIBSVM's a9a ([`libsvm_like`]), a text8-shaped corpus
//! ([`words_like`], [`words_like_arrays`]), an FB15k-237-shaped knowledge graph
//! ([`kg_like`], [`kg_like_arrays`]), and the edges of a grid graph ([`grid_edges`], a road
//! network's shape).
//!
//! ```
//! use strads_runtime::generate::{low_rank_ratings, LowRankConfig};
//! let r = low_rank_ratings(&LowRankConfig { ratings: 5_000, ..LowRankConfig::default() });
//! assert_eq!(r.shape(), [943, 1682]);
//! assert_eq!(r.nnz(), 5_000);
//! ```

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::load::U64BuildHasher;

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
    /// Scratch: the shard of each key of the chunk.
    shards: Vec<u32>,
    /// Scratch: start of each shard's run in `order`.
    starts: Vec<usize>,
    /// Scratch: positions in the chunk grouped by shard.
    order: Vec<u32>,
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
            shards: Vec::new(),
            starts: vec![0; shards + 1],
            order: Vec::new(),
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
        self.shards.clear();
        self.shards
            .extend(chunk.iter().map(|&key| Self::shard(self.bits, key) as u32));
        crate::bucket::bucket_order_into(
            &self.shards,
            self.sets.len(),
            &mut self.order,
            &mut self.starts,
        );
        self.fresh.clear();
        self.fresh.resize(chunk.len(), false);
        for (s, set) in self.sets.iter_mut().enumerate() {
            for &pos in &self.order[self.starts[s]..self.starts[s + 1]] {
                self.fresh[pos as usize] = set.insert(chunk[pos as usize]);
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

mod in_place;
use in_place::first_occurrences;
pub(crate) use in_place::range as in_place_range;
mod kg;
mod libsvm;
mod ratings;
mod words;

pub use kg::{KgConfig, kg_like, kg_like_arrays, try_kg_like};
pub use libsvm::{LibSvmConfig, libsvm_like, try_libsvm_like};
pub use ratings::{LowRankConfig, low_rank_ratings, try_low_rank_ratings};
pub use words::{WordsConfig, words_like, words_like_arrays};
#[cfg(test)]
mod tests;
