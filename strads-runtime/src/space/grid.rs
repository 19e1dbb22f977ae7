//! Range spaces: `for i in a..b` and perfect nests of such loops.

use std::sync::Arc;

use strads_analysis::Partition;

use super::dense::for_each_point;
use super::{BoxBlocks, Space};

/// One dim of a range space: coordinates `lo..hi`, the loop's index `base + step * c` at
/// coordinate `c`. A plain range `a..b` is `base = 0, step = 1, lo = a, hi = b` (the
/// coordinate is the index); `(a..b).step_by(s)` is `base = a, step = s, lo = 0` and one
/// coordinate per index (the analysis sees the index as `s * c + a`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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

// By hand: serde derives arrays of a fixed length only. The dims travel as a sequence
// (the cluster sends the space of a call to its workers).
impl<const N: usize> serde::Serialize for GridSpace<N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.dims.as_slice().serialize(s)
    }
}

impl<'de, const N: usize> serde::Deserialize<'de> for GridSpace<N> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let dims: Vec<RangeDim> = Vec::deserialize(d)?;
        let n = dims.len();
        let dims: [RangeDim; N] = dims
            .try_into()
            .map_err(|_| serde::de::Error::invalid_length(n, &format!("{N} dims").as_str()))?;
        Ok(GridSpace { dims })
    }
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
    fn position(&self, item: &[usize; N]) -> u128 {
        // The values' coordinates (a stepped dim's value is `base + step * c`), row-major:
        // the iteration's id, its place in the serial order.
        let c: [usize; N] =
            std::array::from_fn(|d| (item[d] - self.dims[d].base) / self.dims[d].step);
        self.id(&c) as u128
    }
}

/// The iteration space of `for i in start..end` (or `(start..end).step_by(s)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    fn position(&self, item: &usize) -> u128 {
        *item as u128
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::tests::collect;
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
