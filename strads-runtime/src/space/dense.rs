//! Dense spaces: a [`DistArray`]'s index box, split into boxes of index ranges.

use std::sync::Arc;

use strads_analysis::Partition;

use super::Space;
use crate::array::DistArray;

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
    pub(super) fn new(extents: Vec<usize>, dims: &[usize], parts: &[Partition]) -> Self {
        BoxBlocks {
            extents,
            dims: dims.to_vec(),
            parts: parts.to_vec(),
            lists: None,
        }
    }

    /// Blocks as lists of ids: `block_of` of every id in order, stably bucketed.
    pub(super) fn lists(
        extents: Vec<usize>,
        n_blocks: usize,
        block_of: impl Iterator<Item = usize>,
    ) -> Self {
        let blocks: Vec<u32> = block_of.map(|b| b as u32).collect();
        let (ids, offsets) = crate::bucket::bucket_order(&blocks, n_blocks);
        BoxBlocks {
            extents,
            dims: Vec::new(),
            parts: Vec::new(),
            lists: Some((ids, offsets)),
        }
    }

    /// The ids of block `block`, when blocks are lists.
    pub(super) fn list(&self, block: usize) -> Option<&[u32]> {
        self.lists
            .as_ref()
            .map(|(ids, off)| &ids[off[block]..off[block + 1]])
    }

    /// Number of iterations in block `block`.
    pub(super) fn len(&self, block: usize) -> usize {
        match self.list(block) {
            Some(ids) => ids.len(),
            None => self.ranges(block).iter().map(|(lo, hi)| hi - lo).product(),
        }
    }

    /// `lo..hi` per dim of block `block`.
    pub(super) fn ranges(&self, block: usize) -> Vec<(usize, usize)> {
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
pub(super) fn for_each_point<const N: usize>(
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
    fn position(&self, item: &Self::Item<'_>) -> u128 {
        super::linear(&item.0, &self.shape())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::tests::collect;
    #[test]
    fn dense_blocks_are_boxes() {
        let a = DistArray::<u8, 2>::zeros([3, 4]);
        let got = collect(&a, &[1], 2);
        assert_eq!(got, vec![vec![0, 1, 4, 5, 8, 9], vec![2, 3, 6, 7, 10, 11]]);
        assert_eq!(a.item(6).0, [1, 2]);
    }
}
