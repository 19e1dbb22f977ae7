//! Iteration spaces: what a parallel loop runs over, split into blocks.
//!
//! A sparse space is bucketed once per partitioning: its entries are copied block by block
//! into one contiguous buffer (stable, so a block keeps the entries' original order), and the
//! buffer is cached inside the array for every later call. Dense spaces and ranges need no
//! copy: a block is a box of index ranges.

mod dense;
mod grid;
mod keys;
mod sparse;

pub(crate) use sparse::{Cursor, put_block_lens};

use std::sync::Arc;

use strads_analysis::Partition;

pub use dense::BoxBlocks;
pub use grid::{GridSpace, RangeDim, RangeSpace};
pub use keys::KeyBuckets;
pub use sparse::Buckets;
pub(crate) use sparse::{Filled, grid, owner};

/// What a `#[parallel_for]` loop can iterate over.
pub trait Space: Sync {
    /// What one iteration receives: `([usize; N], &T)` for arrays, `usize` for ranges.
    type Item<'a>
    where
        Self: 'a;
    /// The space split into blocks.
    type Blocks: Send + Sync + 'static;

    /// Number of iteration dims.
    fn n_dims(&self) -> usize;
    /// Number of iterations.
    fn len(&self) -> usize;
    /// Whether there is no iteration.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Upper bound (exclusive) of every dim's index.
    fn extents(&self) -> Vec<usize>;
    /// A key that identifies this space's contents while it lives, for plan caches.
    fn identity(&self) -> String;
    /// `p` partitions of `dim`, balanced by iteration count.
    fn partition(&self, dim: usize, p: usize) -> Partition;
    /// The blocks of the grid of `parts[k]` over `dims[k]`; block ids are row-major over
    /// the grid (`s * P + t` for 2D).
    fn blocks(&self, dims: &[usize], parts: &[Partition]) -> Arc<Self::Blocks>;
    /// Blocks chosen by `block_of(index)` (one of `n_blocks`), each keeping the serial
    /// order; `key` names the function for caches (same key, same function).
    fn blocks_by(
        &self,
        key: &str,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<Self::Blocks>;
    /// Runs `f` over block `block`'s iterations in order, pushing each iteration's id to
    /// `trace` when given.
    fn for_each_in<'a, F: FnMut(Self::Item<'a>)>(
        &'a self,
        blocks: &'a Self::Blocks,
        block: usize,
        trace: Option<&mut Vec<usize>>,
        f: F,
    );
    /// Iteration `id` (its position in the serial order).
    fn item(&self, id: usize) -> Self::Item<'_>;
    /// Whether a plan over it costs set-up in proportion to its size (a sparse space's
    /// entries are bucketed into blocks); boxes of dense spaces and ranges cost none.
    fn needs_setup(&self) -> bool {
        false
    }
    /// Bytes of its entries on other ranks of a cluster job (a spread array's parts, not
    /// brought home): what running the loop on this process alone would bring home.
    fn away_bytes(&self) -> u64 {
        0
    }
    /// Where an iteration comes in index order (row-major over [`extents`]): the same
    /// number on every rank, larger for a later index.
    ///
    /// [`extents`]: Space::extents
    fn position(&self, item: &Self::Item<'_>) -> u128;
    /// Number of iterations in block `block`.
    fn block_len(&self, blocks: &Self::Blocks, block: usize) -> usize;
    /// The keys of block `block`'s iterations in the order [`for_each_in`] visits them,
    /// flattened, and the number of components per key: what the runtime prefetches
    /// rows by. `None` where keys are not stored (dense spaces walk their boxes in order).
    ///
    /// [`for_each_in`]: Space::for_each_in
    fn block_keys<'s>(
        &'s self,
        _blocks: &'s Self::Blocks,
        _block: usize,
    ) -> Option<(&'s [u32], usize)> {
        None
    }
    /// Whether the serial order is the order of the indices (lexicographic), the order
    /// dependence vectors speak of.
    fn in_index_order(&self) -> bool {
        true
    }
    /// The entries of blocks `ids` (sorted) as bytes, when a worker rank may get only the
    /// blocks it runs instead of the whole space (a sparse space of numbers); `None`
    /// otherwise (the space crosses whole, or has no data). `with_ids`: the entries'
    /// positions in the serial order go too (a recorded call's workers trace them).
    fn blocks_bytes(
        &self,
        _blocks: &Self::Blocks,
        _ids: &[usize],
        _with_ids: bool,
    ) -> Option<Vec<u8>> {
        None
    }
    /// A worker's blocks: those of `ids` (sorted) hold the entries in `bytes`
    /// ([`blocks_bytes`](Space::blocks_bytes)), the others none, and every block keeps
    /// its length ([`block_len`](Space::block_len)); fewer than `at_least` blocks is an
    /// error. `None` where the space does not cross by blocks.
    fn blocks_from_bytes(
        &self,
        _at_least: usize,
        _ids: &[usize],
        _bytes: &[u8],
    ) -> Option<Result<Self::Blocks, String>> {
        None
    }
    /// On a cluster's driver, for a space whose entries live in parts on the ranks: trades
    /// the entries so that each rank holds the blocks its workers run (`workers` in all,
    /// `threads` a rank) and returns the key the ranks keep them under. `runs[b]` is the
    /// rank the schedule runs block `b` on: `None` when the blocks would not be where it
    /// runs them. `None` for any other space (its blocks cross from the driver, or it has
    /// none).
    fn spread_blocks(
        &self,
        _blocks: &Self::Blocks,
        _workers: usize,
        _threads: usize,
        _runs: &[Option<usize>],
    ) -> Option<u64> {
        None
    }
}

/// Index `idx` row-major over `shape`, in 128 bits (no product of extents overflows it).
pub(crate) fn linear(idx: &[usize], shape: &[usize]) -> u128 {
    idx.iter()
        .zip(shape)
        .fold(0u128, |acc, (&i, &n)| acc * n as u128 + i as u128)
}

#[cfg(test)]
mod tests {
    use super::*;
    /// Every block's indices (shared by the submodules' tests).
    pub(super) fn collect<S: Space>(s: &S, dims: &[usize], p: usize) -> Vec<Vec<usize>> {
        let parts: Vec<Partition> = dims.iter().map(|&d| s.partition(d, p)).collect();
        let blocks = s.blocks(dims, &parts);
        (0..p.pow(dims.len() as u32))
            .map(|b| {
                let mut ids = Vec::new();
                s.for_each_in(&blocks, b, Some(&mut ids), |_| {});
                ids
            })
            .collect()
    }
}
