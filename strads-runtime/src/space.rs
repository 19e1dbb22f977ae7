//! Iteration spaces: what a parallel loop runs over, split into blocks.
//!
//! A sparse space is bucketed once per partitioning: its entries are copied block by block
//! into one contiguous buffer (stable, so a block keeps the entries' original order), and the
//! buffer is cached inside the array for every later call. Dense spaces and ranges need no
//! copy: a block is a box of index ranges.

use std::sync::Arc;

use strads_analysis::Partition;

use crate::array::{DistArray, SparseArray};
use crate::config::Partitioning;

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
    /// Number of iterations in block `block`.
    fn block_len(&self, blocks: &Self::Blocks, block: usize) -> usize;
    /// Iteration `id` (its position in the serial order).
    fn item(&self, id: usize) -> Self::Item<'_>;
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
}

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
        let mut counts = vec![0usize; n_blocks + 1];
        let block_of: Vec<u32> = keys.iter().map(|k| block_of(k) as u32).collect();
        for &b in &block_of {
            counts[b as usize + 1] += 1;
        }
        for b in 0..n_blocks {
            counts[b + 1] += counts[b];
        }
        let offsets = counts.clone();
        let mut next = counts;
        let mut order = vec![0u32; keys.len()];
        for (i, &b) in block_of.iter().enumerate() {
            order[next[b as usize]] = i as u32;
            next[b as usize] += 1;
        }
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

/// A box of index ranges per dim: the blocks of a dense space.
#[derive(Debug)]
pub struct BoxBlocks {
    extents: Vec<usize>,
    dims: Vec<usize>,
    parts: Vec<Partition>,
    /// Blocks that are not boxes (wavefront tiles of a skewed nest): the iterations' ids
    /// block by block, and where each block starts.
    lists: Option<(Vec<u32>, Vec<usize>)>,
}

impl BoxBlocks {
    fn new(extents: Vec<usize>, dims: &[usize], parts: &[Partition]) -> Self {
        BoxBlocks {
            extents,
            dims: dims.to_vec(),
            parts: parts.to_vec(),
            lists: None,
        }
    }

    /// Blocks as lists of ids: `block_of` of every id in order, stably bucketed.
    fn lists(extents: Vec<usize>, n_blocks: usize, block_of: impl Iterator<Item = usize>) -> Self {
        let blocks: Vec<u32> = block_of.map(|b| b as u32).collect();
        let mut offsets = vec![0usize; n_blocks + 1];
        for &b in &blocks {
            offsets[b as usize + 1] += 1;
        }
        for b in 0..n_blocks {
            offsets[b + 1] += offsets[b];
        }
        let mut next = offsets.clone();
        let mut ids = vec![0u32; blocks.len()];
        for (id, &b) in blocks.iter().enumerate() {
            ids[next[b as usize]] = id as u32;
            next[b as usize] += 1;
        }
        BoxBlocks {
            extents,
            dims: Vec::new(),
            parts: Vec::new(),
            lists: Some((ids, offsets)),
        }
    }

    /// The ids of block `block`, when blocks are lists.
    fn list(&self, block: usize) -> Option<&[u32]> {
        self.lists
            .as_ref()
            .map(|(ids, off)| &ids[off[block]..off[block + 1]])
    }

    /// Number of iterations in block `block`.
    fn len(&self, block: usize) -> usize {
        match self.list(block) {
            Some(ids) => ids.len(),
            None => self.ranges(block).iter().map(|(lo, hi)| hi - lo).product(),
        }
    }

    /// `lo..hi` per dim of block `block`.
    fn ranges(&self, block: usize) -> Vec<(usize, usize)> {
        let mut r: Vec<(usize, usize)> = self.extents.iter().map(|&e| (0, e)).collect();
        let mut b = block;
        for k in (0..self.dims.len()).rev() {
            let count = self.parts[k].len();
            let d = self.dims[k];
            // Partitions may cover more than the extent (a wavefront's tiles of an empty
            // dim): clip them.
            let (lo, hi) = self.parts[k].range(b % count);
            r[d] = (lo.min(self.extents[d]), hi.min(self.extents[d]));
            b /= count;
        }
        r
    }
}

/// Calls `f(linear index, index)` for every point of the box `ranges` in row-major order.
#[inline]
fn for_each_point<const N: usize>(
    extents: &[usize],
    ranges: &[(usize, usize)],
    mut f: impl FnMut(usize, [usize; N]),
) {
    if ranges.iter().any(|(lo, hi)| lo >= hi) {
        return;
    }
    let mut idx = [0usize; N];
    for d in 0..N {
        idx[d] = ranges[d].0;
    }
    loop {
        let lin = idx
            .iter()
            .zip(extents)
            .fold(0usize, |acc, (i, e)| acc * e + i);
        f(lin, idx);
        let mut d = N;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < ranges[d].1 {
                break;
            }
            idx[d] = ranges[d].0;
        }
    }
}

impl<T: Sync, const N: usize> Space for DistArray<T, N> {
    type Item<'a>
        = ([usize; N], &'a T)
    where
        T: 'a;
    type Blocks = BoxBlocks;

    fn n_dims(&self) -> usize {
        N
    }
    fn len(&self) -> usize {
        DistArray::len(self)
    }
    fn extents(&self) -> Vec<usize> {
        self.shape().to_vec()
    }
    fn identity(&self) -> String {
        format!("dense#{}", self.id())
    }
    fn partition(&self, dim: usize, p: usize) -> Partition {
        Partition::uniform(self.shape()[dim], p)
    }
    fn blocks(&self, dims: &[usize], parts: &[Partition]) -> Arc<BoxBlocks> {
        Arc::new(BoxBlocks::new(self.extents(), dims, parts))
    }
    fn blocks_by(
        &self,
        _key: &str,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<BoxBlocks> {
        let extents = self.extents();
        let full: Vec<(usize, usize)> = extents.iter().map(|&e| (0, e)).collect();
        let mut blocks = Vec::with_capacity(self.len());
        for_each_point::<N>(&extents, &full, |_, idx| blocks.push(block_of(&idx)));
        Arc::new(BoxBlocks::lists(extents, n_blocks, blocks.into_iter()))
    }
    fn for_each_in<'a, F: FnMut(Self::Item<'a>)>(
        &'a self,
        blocks: &'a BoxBlocks,
        block: usize,
        mut trace: Option<&mut Vec<usize>>,
        mut f: F,
    ) {
        let data = self.as_slice();
        if let Some(ids) = blocks.list(block) {
            if let Some(t) = trace {
                t.extend(ids.iter().map(|&i| i as usize));
            }
            for &id in ids {
                f(self.item(id as usize));
            }
            return;
        }
        for_each_point::<N>(&blocks.extents, &blocks.ranges(block), |lin, idx| {
            if let Some(t) = trace.as_deref_mut() {
                t.push(lin);
            }
            f((idx, &data[lin]));
        });
    }
    fn block_len(&self, blocks: &BoxBlocks, block: usize) -> usize {
        blocks.len(block)
    }
    fn item(&self, id: usize) -> Self::Item<'_> {
        let shape = self.shape();
        let mut idx = [0usize; N];
        let mut rest = id;
        for d in (0..N).rev() {
            idx[d] = rest % shape[d];
            rest /= shape[d];
        }
        (idx, &self.as_slice()[id])
    }
}

/// One dim of a range space: coordinates `lo..hi`, the loop's index `base + step * c` at
/// coordinate `c`. A plain range `a..b` is `base = 0, step = 1, lo = a, hi = b` (the
/// coordinate is the index); `(a..b).step_by(s)` is `base = a, step = s, lo = 0` and one
/// coordinate per index (the analysis sees the index as `s * c + a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RangeDim {
    base: usize,
    step: usize,
    lo: usize,
    hi: usize,
}

impl RangeDim {
    /// `start..end` (empty when `end <= start`).
    pub fn new(start: usize, end: usize) -> Self {
        RangeDim {
            base: 0,
            step: 1,
            lo: start,
            hi: end.max(start),
        }
    }

    /// `(start..end).step_by(step)`.
    ///
    /// # Panics
    /// When `step` is 0, as `Iterator::step_by` does.
    pub fn stepped(start: usize, end: usize, step: usize) -> Self {
        assert!(step != 0, "assertion failed: step != 0");
        if step == 1 {
            return RangeDim::new(start, end);
        }
        RangeDim {
            base: start,
            step,
            lo: 0,
            hi: end.saturating_sub(start).div_ceil(step),
        }
    }

    fn len(&self) -> usize {
        self.hi - self.lo
    }

    /// Whether the range has no index.
    pub fn is_empty(&self) -> bool {
        self.hi == self.lo
    }

    #[inline]
    fn value(&self, c: usize) -> usize {
        self.base + self.step * c
    }
}

/// The iteration space of a perfect nest of range loops, `for i in a..b { for j in c..d
/// { .. } }` (each may be `.step_by(s)`): one dim per loop, in row-major (serial) order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridSpace<const N: usize> {
    dims: [RangeDim; N],
}

impl<const N: usize> GridSpace<N> {
    /// The nest of `dims`, outermost first.
    pub fn new(dims: [RangeDim; N]) -> Self {
        GridSpace { dims }
    }

    /// The coordinates of iteration `id` (its position in the serial order).
    fn coords(&self, id: usize) -> [usize; N] {
        let mut c = [0usize; N];
        let mut rest = id;
        for d in (0..N).rev() {
            let n = self.dims[d].len().max(1);
            c[d] = self.dims[d].lo + rest % n;
            rest /= n;
        }
        c
    }

    fn id(&self, c: &[usize; N]) -> usize {
        c.iter()
            .zip(&self.dims)
            .fold(0, |acc, (&x, d)| acc * d.len() + (x - d.lo))
    }

    fn values(&self, c: &[usize; N]) -> [usize; N] {
        std::array::from_fn(|d| self.dims[d].value(c[d]))
    }

    /// Calls `f(coordinates)` for the box `ranges` (clipped to the space) in row-major
    /// order.
    fn for_each_coord(&self, ranges: &[(usize, usize)], mut f: impl FnMut([usize; N])) {
        let r: [(usize, usize); N] = std::array::from_fn(|d| {
            let dim = &self.dims[d];
            (ranges[d].0.max(dim.lo), ranges[d].1.min(dim.hi))
        });
        // The box's own points, in row-major order (the linear index is not needed).
        for_each_point::<N>(&[0; N], &r, |_, c| f(c));
    }

    fn partition_dim(&self, dim: usize, p: usize) -> Partition {
        let d = &self.dims[dim];
        let mut part = Partition::uniform(d.len(), p);
        for b in &mut part.bounds {
            *b += d.lo;
        }
        part.bounds[0] = 0;
        part
    }

    fn extents_vec(&self) -> Vec<usize> {
        self.dims.iter().map(|d| d.hi).collect()
    }

    fn lists(
        &self,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<BoxBlocks> {
        let full: Vec<(usize, usize)> = self.dims.iter().map(|d| (d.lo, d.hi)).collect();
        let mut blocks = Vec::with_capacity(self.len_all());
        self.for_each_coord(&full, |c| blocks.push(block_of(&c)));
        Arc::new(BoxBlocks::lists(
            self.extents_vec(),
            n_blocks,
            blocks.into_iter(),
        ))
    }

    fn len_all(&self) -> usize {
        self.dims.iter().map(|d| d.len()).product()
    }

    fn each_in(
        &self,
        blocks: &BoxBlocks,
        block: usize,
        mut trace: Option<&mut Vec<usize>>,
        mut f: impl FnMut([usize; N]),
    ) {
        if let Some(ids) = blocks.list(block) {
            if let Some(t) = trace {
                t.extend(ids.iter().map(|&i| i as usize));
            }
            for &id in ids {
                f(self.values(&self.coords(id as usize)));
            }
            return;
        }
        self.for_each_coord(&blocks.ranges(block), |c| {
            if let Some(t) = trace.as_deref_mut() {
                t.push(self.id(&c));
            }
            f(self.values(&c));
        });
    }
}

impl<const N: usize> Space for GridSpace<N> {
    type Item<'a> = [usize; N];
    type Blocks = BoxBlocks;

    fn n_dims(&self) -> usize {
        N
    }
    fn len(&self) -> usize {
        self.len_all()
    }
    fn extents(&self) -> Vec<usize> {
        self.extents_vec()
    }
    fn identity(&self) -> String {
        format!("grid#{:?}", self.dims)
    }
    fn partition(&self, dim: usize, p: usize) -> Partition {
        self.partition_dim(dim, p)
    }
    fn blocks(&self, dims: &[usize], parts: &[Partition]) -> Arc<BoxBlocks> {
        Arc::new(BoxBlocks::new(self.extents_vec(), dims, parts))
    }
    fn blocks_by(
        &self,
        _key: &str,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<BoxBlocks> {
        self.lists(n_blocks, block_of)
    }
    fn for_each_in<'a, F: FnMut(Self::Item<'a>)>(
        &'a self,
        blocks: &'a BoxBlocks,
        block: usize,
        trace: Option<&mut Vec<usize>>,
        f: F,
    ) {
        self.each_in(blocks, block, trace, f);
    }
    fn block_len(&self, blocks: &BoxBlocks, block: usize) -> usize {
        blocks.len(block)
    }
    fn item(&self, id: usize) -> [usize; N] {
        self.values(&self.coords(id))
    }
}

/// The iteration space of `for i in start..end` (or `(start..end).step_by(s)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeSpace {
    grid: GridSpace<1>,
}

impl RangeSpace {
    /// `start..end` (empty when `end <= start`).
    pub fn new(start: usize, end: usize) -> Self {
        RangeSpace {
            grid: GridSpace::new([RangeDim::new(start, end)]),
        }
    }

    /// `(start..end).step_by(step)`.
    ///
    /// # Panics
    /// When `step` is 0, as `Iterator::step_by` does.
    pub fn stepped(start: usize, end: usize, step: usize) -> Self {
        RangeSpace {
            grid: GridSpace::new([RangeDim::stepped(start, end, step)]),
        }
    }
}

impl Space for RangeSpace {
    type Item<'a> = usize;
    type Blocks = BoxBlocks;

    fn n_dims(&self) -> usize {
        1
    }
    fn len(&self) -> usize {
        self.grid.len_all()
    }
    fn extents(&self) -> Vec<usize> {
        self.grid.extents_vec()
    }
    fn identity(&self) -> String {
        let d = &self.grid.dims[0];
        if d.step == 1 {
            format!("range#{}..{}", d.lo, d.hi)
        } else {
            format!("range#{:?}", d)
        }
    }
    fn partition(&self, dim: usize, p: usize) -> Partition {
        debug_assert_eq!(dim, 0);
        self.grid.partition_dim(0, p)
    }
    fn blocks(&self, dims: &[usize], parts: &[Partition]) -> Arc<BoxBlocks> {
        Arc::new(BoxBlocks::new(self.grid.extents_vec(), dims, parts))
    }
    fn blocks_by(
        &self,
        _key: &str,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<BoxBlocks> {
        self.grid.lists(n_blocks, block_of)
    }
    fn for_each_in<'a, F: FnMut(Self::Item<'a>)>(
        &'a self,
        blocks: &'a BoxBlocks,
        block: usize,
        trace: Option<&mut Vec<usize>>,
        mut f: F,
    ) {
        self.grid.each_in(blocks, block, trace, |[i]| f(i));
    }
    fn block_len(&self, blocks: &BoxBlocks, block: usize) -> usize {
        blocks.len(block)
    }
    fn item(&self, id: usize) -> usize {
        self.grid.item(id)[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect<S: Space>(s: &S, dims: &[usize], p: usize) -> Vec<Vec<usize>> {
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

    #[test]
    fn dense_blocks_are_boxes() {
        let a = DistArray::<u8, 2>::zeros([3, 4]);
        let got = collect(&a, &[1], 2);
        assert_eq!(got, vec![vec![0, 1, 4, 5, 8, 9], vec![2, 3, 6, 7, 10, 11]]);
        assert_eq!(a.item(6).0, [1, 2]);
    }

    #[test]
    fn range_blocks_offset_by_start() {
        let r = RangeSpace::new(3, 10);
        let got = collect(&r, &[0], 3);
        assert_eq!(got, vec![vec![0, 1], vec![2, 3], vec![4, 5, 6]]);
        assert_eq!(r.item(4), 7);
    }

    #[test]
    fn stepped_ranges_number_their_indices() {
        // 1, 3, 5, 7, 9 at coordinates 0..5.
        let r = RangeSpace::stepped(1, 10, 2);
        assert_eq!(r.len(), 5);
        assert_eq!(r.extents(), vec![5]);
        let parts = [r.partition(0, 2)];
        let blocks = r.blocks(&[0], &parts);
        let mut got = Vec::new();
        for b in 0..2 {
            let mut ids = Vec::new();
            let mut items = Vec::new();
            r.for_each_in(&blocks, b, Some(&mut ids), |i| items.push(i));
            got.push((ids, items));
        }
        assert_eq!(
            got,
            vec![(vec![0, 1], vec![1, 3]), (vec![2, 3, 4], vec![5, 7, 9])]
        );
        assert_eq!(r.item(3), 7);
        assert_eq!(RangeSpace::stepped(4, 4, 3).len(), 0);
        assert_eq!(RangeSpace::stepped(4, 5, 3).len(), 1);
    }

    #[test]
    fn grids_are_row_major_boxes() {
        // i in 1..3, j in (2..9).step_by(3) = 2, 5, 8.
        let g = GridSpace::new([RangeDim::new(1, 3), RangeDim::stepped(2, 9, 3)]);
        assert_eq!(g.len(), 6);
        assert_eq!(g.extents(), vec![3, 3]);
        let all: Vec<[usize; 2]> = (0..6).map(|id| g.item(id)).collect();
        assert_eq!(all, vec![[1, 2], [1, 5], [1, 8], [2, 2], [2, 5], [2, 8]]);
        // Split along j into two parts: ids keep the serial numbering.
        let parts = [g.partition(1, 2)];
        let blocks = g.blocks(&[1], &parts);
        let mut got = Vec::new();
        for b in 0..2 {
            let mut ids = Vec::new();
            let mut items = Vec::new();
            g.for_each_in(&blocks, b, Some(&mut ids), |x| items.push(x));
            got.push((ids, items));
        }
        assert_eq!(
            got,
            vec![
                (vec![0, 3], vec![[1, 2], [2, 2]]),
                (vec![1, 2, 4, 5], vec![[1, 5], [1, 8], [2, 5], [2, 8]])
            ]
        );
        // Lists (wavefront tiles) are chosen by coordinates (`j`'s are 0, 1, 2) and give
        // the same items by id.
        let lists = g.blocks_by("k", 2, &|c: &[usize]| (c[0] + c[1]) % 2);
        let mut ids = Vec::new();
        let mut items = Vec::new();
        g.for_each_in(&lists, 1, Some(&mut ids), |x| items.push(x));
        assert_eq!(ids, vec![0, 2, 4]);
        assert_eq!(items, vec![[1, 2], [1, 8], [2, 5]]);
    }
}
