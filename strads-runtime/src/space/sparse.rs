//! Sparse spaces: a [`SparseArray`]'s entries bucketed block by block.

use std::sync::{Arc, OnceLock};

use strads_analysis::Partition;

use super::Space;
use crate::array::SparseArray;
use crate::config::Partitioning;

/// A sparse space's blocks: its entries copied block by block (stable, so each block keeps
/// the entries' order), or for an array spread over a cluster's ranks, the blocks this
/// rank holds after the entries were traded, with every block's length.
#[derive(Debug)]
pub struct Buckets<T, const N: usize> {
    /// Every block (or, on a worker rank, the blocks it runs): a whole array's, or a spread
    /// array's once brought home because this process ran blocks it does not hold.
    whole: OnceLock<Filled<T, N>>,
    /// A spread array's grid, and the blocks this rank holds once traded.
    spread: Option<SpreadGrid<T, N>>,
}

/// Entries copied block by block.
#[derive(Debug)]
pub(crate) struct Filled<T, const N: usize> {
    keys: Vec<[u32; N]>,
    values: Vec<T>,
    ids: Vec<u32>,
    offsets: Vec<usize>,
    /// A worker rank's buckets hold only the blocks it runs: every block's length, as
    /// the driver's buckets have it (empty on the driver: `offsets` tell).
    lens: Vec<usize>,
}

/// The grid of a spread array's blocks.
#[derive(Debug)]
struct SpreadGrid<T, const N: usize> {
    dims: Vec<usize>,
    bounds: Vec<Vec<usize>>,
    /// Every block's length, over all ranks.
    lens: Vec<usize>,
    /// This rank's blocks once traded: which blocks it holds, and their entries.
    mine: OnceLock<(u64, Vec<bool>, Arc<Buckets<T, N>>)>,
}

impl<T, const N: usize> Filled<T, N> {
    /// A rank's blocks: the entries of the blocks it holds, block after block (`counts`,
    /// 0 for the others), with their positions in the array (`ids`), and every block's
    /// length over all ranks.
    pub(crate) fn from_parts(
        keys: Vec<[u32; N]>,
        ids: Vec<u32>,
        values: Vec<T>,
        counts: &[usize],
        lens: Vec<usize>,
    ) -> Self {
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        offsets.push(0);
        for c in counts {
            offsets.push(offsets.last().copied().unwrap_or(0) + c);
        }
        Filled {
            ids,
            keys,
            values,
            offsets,
            lens,
        }
    }
}

impl<T, const N: usize> Buckets<T, N> {
    /// Blocks whose entries are all here (a whole array's, a worker's, a rank's traded).
    pub(crate) fn filled(f: Filled<T, N>) -> Self {
        Buckets {
            whole: OnceLock::from(f),
            spread: None,
        }
    }

    /// Number of iterations in each block.
    pub fn block_sizes(&self) -> Vec<usize> {
        match (&self.spread, self.whole.get()) {
            (Some(g), _) => g.lens.clone(),
            (None, Some(f)) if !f.lens.is_empty() => f.lens.clone(),
            (None, Some(f)) => f.offsets.windows(2).map(|w| w[1] - w[0]).collect(),
            (None, None) => Vec::new(),
        }
    }
}

impl<T: Clone + Send + Sync + 'static, const N: usize> Buckets<T, N> {
    /// The entries of block `block`: this rank's traded blocks when it holds it, else the
    /// array's own, brought home and bucketed (a spread array run on this process alone).
    fn block<'s>(&'s self, space: &SparseArray<T, N>, block: usize) -> &'s Filled<T, N> {
        if let Some(g) = &self.spread
            && let Some((_, held, mine)) = g.mine.get()
            && held.get(block).copied().unwrap_or(false)
        {
            return mine.block(space, block);
        }
        self.whole.get_or_init(|| {
            let g = self
                .spread
                .as_ref()
                .expect("buckets without entries are spread");
            let (block_of, n) = grid(&g.dims, &g.bounds);
            space.bucket(n, |k| block_of(k))
        })
    }
}

impl<T: Clone, const N: usize> SparseArray<T, N> {
    /// The entries copied block by block: a stable counting sort, so each block keeps the
    /// original order.
    fn bucket(&self, n_blocks: usize, block_of: impl Fn(&[u32; N]) -> usize) -> Filled<T, N> {
        let keys = self.raw_keys();
        let block_of: Vec<u32> = keys.iter().map(|k| block_of(k) as u32).collect();
        let (order, offsets) = crate::bucket::bucket_order(&block_of, n_blocks);
        let values = self.values();
        Filled {
            keys: order.iter().map(|&i| keys[i as usize]).collect(),
            values: order.iter().map(|&i| values[i as usize].clone()).collect(),
            ids: order,
            offsets,
            lens: Vec::new(),
        }
    }
}

/// How sparse spaces are partitioned: `STRADS_PARTITION=balanced` (the default: histogram
/// boundaries, equal iteration counts) or `uniform` (equal id ranges, for comparisons),
/// read by [`crate::config`].
fn sparse_partitioning() -> Partitioning {
    crate::config::get().partition
}

/// The block of a key in the grid of partition `bounds` over `dims` (row-major, as
/// [`grid_block`]), and the number of blocks: how every rank places a spread array's
/// entries.
pub(crate) fn grid(dims: &[usize], bounds: &[Vec<usize>]) -> (impl Fn(&[u32]) -> usize, usize) {
    let parts: Vec<Partition> = bounds
        .iter()
        .map(|b| Partition { bounds: b.clone() })
        .collect();
    let counts: Vec<usize> = parts.iter().map(Partition::len).collect();
    let tables: Vec<Vec<u32>> = parts.iter().map(Partition::lookup_table).collect();
    let n = counts.iter().product();
    let dims = dims.to_vec();
    (move |k: &[u32]| grid_block(&dims, &tables, &counts, k), n)
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
    fn away_bytes(&self) -> u64 {
        self.spread_bytes()
    }
    fn identity(&self) -> String {
        // With the values' version: a plan's blocks copy the entries' values, so a plan
        // made before the values changed (`iter_mut`, `entry_mut`) is not used after.
        format!("sparse#{}@{}", self.id(), self.wire_key().1)
    }
    fn partition(&self, dim: usize, p: usize) -> Partition {
        if sparse_partitioning() == Partitioning::Uniform {
            return Partition::uniform(self.shape()[dim], p);
        }
        if let Some(ops) = self.spread() {
            // Each rank counts its part; the histograms are summed, once per dim and count.
            let part = self
                .cache
                .get_or_insert(&format!("partition:{dim}:{p}"), || {
                    Partition::balanced(&ops.histogram(dim, self.shape()[dim]), p)
                });
            return (*part).clone();
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
        if let Some(ops) = self.spread() {
            // The entries stay on their ranks until a call across processes trades them
            // (`spread_blocks`); every block's length is known now.
            let bounds: Vec<Vec<usize>> = parts.iter().map(|p| p.bounds.clone()).collect();
            return self.cache.get_or_insert(&format!("spread:{key}"), || {
                let lens = ops.block_counts(dims, &bounds);
                Buckets {
                    whole: OnceLock::new(),
                    spread: Some(SpreadGrid {
                        dims: dims.to_vec(),
                        bounds,
                        lens: lens.into_iter().map(|n| n as usize).collect(),
                        mine: OnceLock::new(),
                    }),
                }
            });
        }
        let tables: Vec<Vec<u32>> = parts.iter().map(|x| x.lookup_table()).collect();
        self.cache.get_or_insert(&key, || {
            let block_of = |k: &[u32; N]| grid_block(dims, &tables, &counts, k);
            Buckets::filled(self.bucket(counts.iter().product(), block_of))
        })
    }
    fn blocks_by(
        &self,
        key: &str,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<Buckets<T, N>> {
        self.cache.get_or_insert(&format!("by:{key}"), || {
            Buckets::filled(self.bucket(n_blocks, |k: &[u32; N]| block_of(&k.map(|i| i as usize))))
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
        let blocks = blocks.block(self, block);
        let (lo, hi) = (blocks.offsets[block], blocks.offsets[block + 1]);
        if let Some(t) = trace {
            t.extend(blocks.ids[lo..hi].iter().map(|&i| i as usize));
        }
        for (k, v) in blocks.keys[lo..hi].iter().zip(&blocks.values[lo..hi]) {
            f((k.map(|i| i as usize), v));
        }
    }
    fn block_len(&self, blocks: &Buckets<T, N>, block: usize) -> usize {
        if let Some(g) = &blocks.spread {
            return g.lens[block];
        }
        let blocks = blocks.block(self, block);
        match blocks.lens.get(block) {
            Some(&n) => n,
            None => blocks.offsets[block + 1] - blocks.offsets[block],
        }
    }
    fn item(&self, id: usize) -> Self::Item<'_> {
        self.entry(id)
    }
    fn position(&self, item: &Self::Item<'_>) -> u128 {
        super::linear(&item.0, &self.shape())
    }
    fn needs_setup(&self) -> bool {
        true
    }
    fn block_keys<'s>(
        &'s self,
        blocks: &'s Buckets<T, N>,
        block: usize,
    ) -> Option<(&'s [u32], usize)> {
        let blocks = blocks.block(self, block);
        let (lo, hi) = (blocks.offsets[block], blocks.offsets[block + 1]);
        Some((blocks.keys[lo..hi].as_flattened(), N))
    }
    fn in_index_order(&self) -> bool {
        self.is_sorted()
    }
    fn blocks_bytes(
        &self,
        blocks: &Buckets<T, N>,
        ids: &[usize],
        with_ids: bool,
    ) -> Option<Vec<u8>> {
        crate::array::le::wire_size::<T>()?;
        let mut out = Vec::new();
        put_block_lens(blocks.block_sizes().into_iter(), &mut out);
        out.push(u8::from(with_ids));
        for &b in ids {
            let blocks = blocks.block(self, b);
            let (lo, hi) = (blocks.offsets[b], blocks.offsets[b + 1]);
            for k in &blocks.keys[lo..hi] {
                for &i in k {
                    out.extend_from_slice(&i.to_le_bytes());
                }
            }
            if with_ids {
                for &i in &blocks.ids[lo..hi] {
                    out.extend_from_slice(&i.to_le_bytes());
                }
            }
            crate::array::le::put(&blocks.values[lo..hi], &mut out);
        }
        Some(out)
    }
    fn blocks_from_bytes(
        &self,
        at_least: usize,
        ids: &[usize],
        bytes: &[u8],
    ) -> Option<Result<Buckets<T, N>, String>> {
        let size = crate::array::le::wire_size::<T>()?;
        Some(buckets_from_bytes(self.shape(), at_least, ids, bytes, size).map(Buckets::filled))
    }
    fn spread_blocks(
        &self,
        blocks: &Buckets<T, N>,
        workers: usize,
        threads: usize,
        runs: &[Option<usize>],
    ) -> Option<u64> {
        let (ops, g) = (self.spread()?, blocks.spread.as_ref()?);
        // Values in a codec, or moved by `iter_mut()` calls, cross only with such a call.
        if ops.coded() || ops.moved() {
            return None;
        }
        let placed = |b: usize| owner(b, &g.bounds, workers, threads);
        if runs
            .iter()
            .enumerate()
            .any(|(b, r)| b >= g.lens.len() || r.is_some_and(|r| r != placed(b)))
        {
            return None;
        }
        let (key, ..) = g.mine.get_or_init(|| {
            let (key, mine) = ops.exchange(&g.dims, &g.bounds, workers, threads);
            let mine: Arc<Buckets<T, N>> = mine
                .downcast()
                .unwrap_or_else(|_| ops.fail("a spread array's blocks of another type".into()));
            let held = (0..g.lens.len()).map(|b| placed(b) == 0).collect();
            (key, held, mine)
        });
        Some(*key)
    }
}

/// The rank whose workers run block `b` of the grid of `bounds`: its first coordinate `c`
/// of `parts` runs on worker `c * workers / parts` (a plan's blocks of dim 0 are its
/// workers'), of rank `worker / threads`.
pub(crate) fn owner(b: usize, bounds: &[Vec<usize>], workers: usize, threads: usize) -> usize {
    let parts = |k: usize| bounds[k].len().saturating_sub(1).max(1);
    let rest: usize = (1..bounds.len()).map(parts).product();
    let c = b / rest.max(1);
    (c * workers / parts(0)) / threads.max(1)
}

/// A worker's buckets from the driver's bytes: the number of blocks and every block's
/// length, whether ids follow, then for each of blocks `ids` its entries' indices, their
/// ids (positions in the serial order, which a recorded call's workers trace) when sent,
/// and their values (`size` bytes each). Every count and index is checked before anything
/// is sized by it. Without ids an entry's id is `u32::MAX` (never traced).
fn buckets_from_bytes<T: Clone + 'static, const N: usize>(
    shape: [usize; N],
    at_least: usize,
    ids: &[usize],
    bytes: &[u8],
    size: usize,
) -> Result<Filled<T, N>, String> {
    let mut cur = Cursor::new(bytes);
    let lens = cur.block_lens(at_least)?;
    let n_blocks = lens.len();
    let with_ids = match cur.take(1)? {
        [0] => false,
        [1] => true,
        other => return Err(format!("a flag of ids {other:?}")),
    };
    let mut counts = vec![0usize; n_blocks];
    let (mut keys, mut values): (Vec<[u32; N]>, Vec<T>) = (Vec::new(), Vec::new());
    let mut entry_ids: Vec<u32> = Vec::new();
    for &b in ids {
        if b >= n_blocks {
            return Err(format!("block {b} of {n_blocks}"));
        }
        let n = lens[b];
        let key_bytes = cur.take(n.checked_mul(4 * N).ok_or("a block too large")?)?;
        crate::array::le::get_keys(key_bytes, &shape, &mut keys)
            .map_err(|_| format!("an entry of block {b} outside the shape {shape:?}"))?;
        if with_ids {
            let id_bytes = cur.take(n.checked_mul(4).ok_or("a block too large")?)?;
            entry_ids.extend(
                id_bytes
                    .chunks_exact(4)
                    .map(|i| u32::from_le_bytes(i.try_into().expect("4 bytes"))),
            );
        } else {
            entry_ids.resize(keys.len(), u32::MAX);
        }
        let value_bytes = cur.take(n.checked_mul(size).ok_or("a block too large")?)?;
        let vals: Vec<T> = crate::array::le::get_vec(value_bytes)
            .ok_or_else(|| format!("the values of block {b} do not decode"))?;
        values.extend(vals);
        counts[b] = n;
    }
    if cur.rest() != 0 {
        return Err(format!("{} bytes after the blocks", cur.rest()));
    }
    Ok(Filled::from_parts(keys, entry_ids, values, &counts, lens))
}

/// The head of the blocks a worker rank gets (a sparse space's, or an `iter_mut()` loop's
/// indices): the count of blocks, then every block's length, `u64` little-endian.
pub(crate) fn put_block_lens(lens: impl ExactSizeIterator<Item = usize>, out: &mut Vec<u8>) {
    out.extend_from_slice(&(lens.len() as u64).to_le_bytes());
    for n in lens {
        out.extend_from_slice(&(n as u64).to_le_bytes());
    }
}

/// Bytes read front to back.
pub(crate) struct Cursor<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Cursor<'b> {
    pub(crate) fn new(bytes: &'b [u8]) -> Self {
        Cursor { bytes, at: 0 }
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// The head [`put_block_lens`] wrote: every block's length, at least `at_least`
    /// blocks (a count beyond the bytes is refused before allocating).
    pub(crate) fn block_lens(&mut self, at_least: usize) -> Result<Vec<usize>, String> {
        let n_blocks = self.number()?;
        // Each length takes 8 bytes.
        if n_blocks > self.bytes.len() / 8 || n_blocks < at_least {
            return Err(format!(
                "{n_blocks} blocks in {} bytes, for a schedule of at least {at_least}",
                self.bytes.len()
            ));
        }
        (0..n_blocks).map(|_| self.number()).collect()
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'b [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "blocks cut short at byte {} of {}",
                self.at,
                self.bytes.len()
            ));
        };
        let part = &self.bytes[self.at..end];
        self.at = end;
        Ok(part)
    }

    pub(crate) fn number(&mut self) -> Result<usize, String> {
        let b = self.take(8)?;
        usize::try_from(u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .map_err(|_| "a block too large".to_string())
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
        // A worker's blocks: only those it runs, every block's length kept.
        let parts = vec![s.partition(0, 2), s.partition(1, 2)];
        let all = s.blocks(&[0, 1], &parts);
        let bytes = s
            .blocks_bytes(&all, &[1, 3], false)
            .expect("numbers cross by blocks");
        let shape_only = SparseArray::<f32, 2>::from_entries([4, 4], vec![]).unwrap();
        let mine = shape_only
            .blocks_from_bytes(4, &[1, 3], &bytes)
            .expect("numbers")
            .expect("the driver's bytes decode");
        for b in 0..4 {
            assert_eq!(shape_only.block_len(&mine, b), s.block_len(&all, b));
        }
        for b in [1, 3] {
            let (mut want, mut got) = (Vec::new(), Vec::new());
            s.for_each_in(&all, b, None, |(k, v)| want.push((k, *v)));
            shape_only.for_each_in(&mine, b, None, |(k, v)| got.push((k, *v)));
            assert_eq!(got, want);
        }
        // With ids (a recorded call's): the entries' positions in the serial order too.
        let traced = s.blocks_bytes(&all, &[1, 3], true).expect("numbers");
        let mine = shape_only
            .blocks_from_bytes(4, &[1, 3], &traced)
            .expect("numbers")
            .expect("the driver's bytes with ids decode");
        for b in [1, 3] {
            let (mut want, mut got) = (Vec::new(), Vec::new());
            s.for_each_in(&all, b, Some(&mut want), |_| {});
            shape_only.for_each_in(&mine, b, Some(&mut got), |_| {});
            assert!(!want.is_empty());
            assert_eq!(got, want);
        }
        let mut flag = bytes.clone();
        flag[8 * 5] = 2;
        assert!(
            shape_only
                .blocks_from_bytes(4, &[1, 3], &flag)
                .expect("numbers")
                .map(|_| ())
                .unwrap_err()
                .contains("a flag of ids")
        );
        // Cut, padded, outside the shape, or fewer blocks than the schedule names: errors.
        let decode = |b: &[u8], at_least| {
            shape_only
                .blocks_from_bytes(at_least, &[1, 3], b)
                .expect("numbers")
                .map(|_| ())
        };
        assert!(
            decode(&bytes[..bytes.len() - 1], 4)
                .unwrap_err()
                .contains("cut short")
        );
        let mut padded = bytes.clone();
        padded.push(0);
        assert!(decode(&padded, 4).unwrap_err().contains("after the blocks"));
        assert!(decode(&bytes, 5).unwrap_err().contains("at least 5"));
        let small = SparseArray::<f32, 2>::from_entries([1, 1], vec![]).unwrap();
        let outside = small
            .blocks_from_bytes(4, &[1, 3], &bytes)
            .expect("numbers");
        assert!(outside.unwrap_err().contains("outside the shape"));
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&huge, 4).is_err());
        // Cached: the second call reuses the buckets.
        let parts = vec![s.partition(0, 2), s.partition(1, 2)];
        let a = s.blocks(&[0, 1], &parts);
        let b = s.blocks(&[0, 1], &parts);
        assert!(Arc::ptr_eq(&a, &b));
    }
}
