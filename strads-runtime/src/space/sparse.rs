//! Sparse spaces: a [`SparseArray`]'s entries bucketed block by block.

use std::sync::Arc;

use strads_analysis::Partition;

use super::Space;
use crate::array::SparseArray;
use crate::config::Partitioning;

/// Entries of a sparse space copied block by block.
#[derive(Debug)]
pub struct Buckets<T, const N: usize> {
    keys: Vec<[u32; N]>,
    values: Vec<T>,
    ids: Vec<u32>,
    offsets: Vec<usize>,
}

impl<T, const N: usize> Buckets<T, N> {
    /// Number of iterations in each block.
    pub fn block_sizes(&self) -> Vec<usize> {
        self.offsets.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

impl<T: Clone, const N: usize> SparseArray<T, N> {
    /// The entries copied block by block: a stable counting sort, so each block keeps the
    /// original order.
    fn bucket(&self, n_blocks: usize, block_of: impl Fn(&[u32; N]) -> usize) -> Buckets<T, N> {
        let keys = self.raw_keys();
        let block_of: Vec<u32> = keys.iter().map(|k| block_of(k) as u32).collect();
        let (order, offsets) = crate::bucket::bucket_order(&block_of, n_blocks);
        let values = self.values();
        Buckets {
            keys: order.iter().map(|&i| keys[i as usize]).collect(),
            values: order.iter().map(|&i| values[i as usize].clone()).collect(),
            ids: order,
            offsets,
        }
    }
}

/// How sparse spaces are partitioned: `STRADS_PARTITION=balanced` (the default: histogram
/// boundaries, equal iteration counts) or `uniform` (equal id ranges, for comparisons),
/// read by [`crate::config`].
fn sparse_partitioning() -> Partitioning {
    crate::config::get().partition
}

/// The block of `key` in the grid of partitions: row-major over the partitioned dims.
fn grid_block(dims: &[usize], tables: &[Vec<u32>], counts: &[usize], key: &[u32]) -> usize {
    let mut b = 0usize;
    for (k, &d) in dims.iter().enumerate() {
        b = b * counts[k] + tables[k][key[d] as usize] as usize;
    }
    b
}

impl<T: Clone + Send + Sync + 'static, const N: usize> Space for SparseArray<T, N> {
    type Item<'a> = ([usize; N], &'a T);
    type Blocks = Buckets<T, N>;

    fn n_dims(&self) -> usize {
        N
    }
    fn len(&self) -> usize {
        self.nnz()
    }
    fn extents(&self) -> Vec<usize> {
        self.shape().to_vec()
    }
    fn identity(&self) -> String {
        format!("sparse#{}", self.id())
    }
    fn partition(&self, dim: usize, p: usize) -> Partition {
        if sparse_partitioning() == Partitioning::Uniform {
            return Partition::uniform(self.shape()[dim], p);
        }
        let mut hist = vec![0u64; self.shape()[dim]];
        for k in self.raw_keys() {
            hist[k[dim] as usize] += 1;
        }
        Partition::balanced(&hist, p)
    }
    fn blocks(&self, dims: &[usize], parts: &[Partition]) -> Arc<Buckets<T, N>> {
        let key = format!(
            "buckets:{dims:?}:{:?}",
            parts.iter().map(|p| &p.bounds).collect::<Vec<_>>()
        );
        let counts: Vec<usize> = parts.iter().map(|x| x.len()).collect();
        let tables: Vec<Vec<u32>> = parts.iter().map(|x| x.lookup_table()).collect();
        self.cache.get_or_insert(&key, || {
            let block_of = |k: &[u32; N]| grid_block(dims, &tables, &counts, k);
            self.bucket(counts.iter().product(), block_of)
        })
    }
    fn blocks_by(
        &self,
        key: &str,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<Buckets<T, N>> {
        self.cache.get_or_insert(&format!("by:{key}"), || {
            self.bucket(n_blocks, |k: &[u32; N]| block_of(&k.map(|i| i as usize)))
        })
    }
    #[inline]
    fn for_each_in<'a, F: FnMut(Self::Item<'a>)>(
        &'a self,
        blocks: &'a Buckets<T, N>,
        block: usize,
        trace: Option<&mut Vec<usize>>,
        mut f: F,
    ) {
        let (lo, hi) = (blocks.offsets[block], blocks.offsets[block + 1]);
        if let Some(t) = trace {
            t.extend(blocks.ids[lo..hi].iter().map(|&i| i as usize));
        }
        for (k, v) in blocks.keys[lo..hi].iter().zip(&blocks.values[lo..hi]) {
            f((k.map(|i| i as usize), v));
        }
    }
    fn block_len(&self, blocks: &Buckets<T, N>, block: usize) -> usize {
        blocks.offsets[block + 1] - blocks.offsets[block]
    }
    fn item(&self, id: usize) -> Self::Item<'_> {
        self.entry(id)
    }
    fn block_keys<'s>(
        &'s self,
        blocks: &'s Buckets<T, N>,
        block: usize,
    ) -> Option<(&'s [u32], usize)> {
        let (lo, hi) = (blocks.offsets[block], blocks.offsets[block + 1]);
        Some((blocks.keys[lo..hi].as_flattened(), N))
    }
    fn in_index_order(&self) -> bool {
        self.is_sorted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::tests::collect;
    #[test]
    fn sparse_buckets_are_stable_and_cover_everything() {
        let entries = vec![
            ([0, 0], 1.0f32),
            ([3, 3], 2.0),
            ([0, 3], 3.0),
            ([3, 0], 4.0),
            ([1, 1], 5.0),
        ];
        let s = SparseArray::from_entries([4, 4], entries).unwrap();
        let got = collect(&s, &[0, 1], 2);
        let mut all: Vec<usize> = got.iter().flatten().copied().collect();
        all.sort();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
        for b in &got {
            assert!(b.windows(2).all(|w| w[0] < w[1]), "stable order in {b:?}");
        }
        // Cached: the second call reuses the buckets.
        let parts = vec![s.partition(0, 2), s.partition(1, 2)];
        let a = s.blocks(&[0, 1], &parts);
        let b = s.blocks(&[0, 1], &parts);
        assert!(Arc::ptr_eq(&a, &b));
    }
}
