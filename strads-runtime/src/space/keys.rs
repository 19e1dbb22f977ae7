//! The entries of an `iter_mut()` loop's array block by block ([`KeyBuckets`]), the bytes
//! a worker rank gets of the blocks its tasks run, and the blocks of an array spread over a
//! cluster's ranks ([`SpreadKeys`]).

use std::sync::{Arc, OnceLock};

/// The indices of a sparse array's entries block by block.
#[derive(Debug)]
pub struct KeyBuckets<const N: usize> {
    pub(crate) keys: Vec<[u32; N]>,
    pub(crate) ids: Vec<u32>,
    pub(crate) offsets: Vec<usize>,
    /// An array spread over a cluster's ranks: its grid, and the entries of its blocks
    /// where they are (the fields above are empty then).
    pub(crate) spread: Option<Box<SpreadKeys<N>>>,
}

/// The grid of a spread array's blocks, for an `iter_mut()` loop: every block's length,
/// the blocks this rank holds once its entries and values were traded among the ranks
/// (the key they are kept under, which blocks, their indices), or every block once the
/// array came home (a call run in this process alone).
#[derive(Debug)]
pub(crate) struct SpreadKeys<const N: usize> {
    pub(crate) dims: Vec<usize>,
    pub(crate) bounds: Vec<Vec<usize>>,
    pub(crate) lens: Vec<usize>,
    pub(crate) mine: OnceLock<(u64, Vec<bool>, Arc<KeyBuckets<N>>)>,
    whole: OnceLock<KeyBuckets<N>>,
}

impl<const N: usize> KeyBuckets<N> {
    /// Blocks from their parts: the entries block after block (`offsets`), with their
    /// positions in the array.
    pub(crate) fn from_parts(keys: Vec<[u32; N]>, ids: Vec<u32>, offsets: Vec<usize>) -> Self {
        KeyBuckets {
            keys,
            ids,
            offsets,
            spread: None,
        }
    }

    /// The blocks of a spread array's grid of `bounds` over `dims`, of lengths `lens`,
    /// none traded yet.
    pub(crate) fn spread(dims: &[usize], bounds: Vec<Vec<usize>>, lens: Vec<usize>) -> Self {
        KeyBuckets {
            keys: Vec::new(),
            ids: Vec::new(),
            offsets: Vec::new(),
            spread: Some(Box::new(SpreadKeys {
                dims: dims.to_vec(),
                bounds,
                lens,
                mine: OnceLock::new(),
                whole: OnceLock::new(),
            })),
        }
    }

    /// The buckets that hold block `block`'s entries: these, or for a spread array this
    /// rank's traded blocks when it holds the block, else every block of the array's
    /// indices (`keys`, which brings a spread array home).
    pub(crate) fn held<'s>(
        &'s self,
        block: usize,
        keys: impl FnOnce() -> &'s [[u32; N]],
    ) -> &'s KeyBuckets<N> {
        let Some(g) = &self.spread else {
            return self;
        };
        if let Some((_, held, mine)) = g.mine.get()
            && held.get(block).copied().unwrap_or(false)
        {
            return mine;
        }
        self.whole(keys)
    }

    /// Every block's entries: these, or for a spread array its indices bucketed (`keys`,
    /// which brings it home).
    pub(crate) fn whole<'s>(&'s self, keys: impl FnOnce() -> &'s [[u32; N]]) -> &'s KeyBuckets<N> {
        let Some(g) = &self.spread else {
            return self;
        };
        g.whole.get_or_init(|| {
            let (block_of, n) = super::grid(&g.dims, &g.bounds);
            KeyBuckets::new(keys(), n, |k| block_of(k))
        })
    }

    /// Block `block`'s entries' positions in the array, from [`held`](Self::held).
    pub(crate) fn block_ids<'s>(
        &'s self,
        block: usize,
        keys: impl FnOnce() -> &'s [[u32; N]],
    ) -> &'s [u32] {
        let b = self.held(block, keys);
        &b.ids[b.offsets[block]..b.offsets[block + 1]]
    }

    /// Number of entries of block `block` (over every rank, for a spread array).
    pub(crate) fn block_len(&self, block: usize) -> usize {
        match &self.spread {
            Some(g) => g.lens.get(block).copied().unwrap_or(0),
            None => self.offsets[block + 1] - self.offsets[block],
        }
    }
}

impl<const N: usize> KeyBuckets<N> {
    /// Blocks `ids` as a worker rank gets them: the count of blocks, every block's length,
    /// then each of `ids`'s indices and ids (little-endian `u32`s).
    pub(crate) fn to_bytes(&self, ids: &[usize]) -> Vec<u8> {
        let n_blocks = self.offsets.len() - 1;
        let entries: usize = ids
            .iter()
            .map(|&b| self.offsets[b + 1] - self.offsets[b])
            .sum();
        let mut out = Vec::with_capacity(8 * (n_blocks + 1) + entries * 4 * (N + 1));
        let lens = self.offsets.windows(2).map(|w| w[1] - w[0]);
        super::put_block_lens(lens, &mut out);
        for &b in ids {
            let r = self.offsets[b]..self.offsets[b + 1];
            for k in &self.keys[r.clone()] {
                for &i in k {
                    out.extend_from_slice(&i.to_le_bytes());
                }
            }
            for &i in &self.ids[r] {
                out.extend_from_slice(&i.to_le_bytes());
            }
        }
        out
    }

    /// A worker's blocks from [`to_bytes`](Self::to_bytes): blocks `ids` hold their
    /// entries, every other block none; at least `at_least` blocks, indices within `shape`.
    pub(crate) fn from_bytes(
        shape: &[usize; N],
        at_least: usize,
        ids: &[usize],
        bytes: &[u8],
    ) -> Result<Self, String> {
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("blocks {ids:?} out of order"));
        }
        let mut cur = super::Cursor::new(bytes);
        let lens = cur.block_lens(at_least)?;
        let n_blocks = lens.len();
        let (mut keys, mut entry_ids) = (Vec::new(), Vec::new());
        let mut counts = vec![0usize; n_blocks];
        for &b in ids {
            let n = *lens.get(b).ok_or(format!("block {b} of {n_blocks}"))?;
            let block = cur.take(n.checked_mul(4 * (N + 1)).ok_or("a block too large")?)?;
            let (k, i) = block.split_at(n * 4 * N);
            crate::array::le::get_keys(k, shape, &mut keys)
                .map_err(|_| format!("an entry of block {b} outside the shape {shape:?}"))?;
            entry_ids.extend(
                i.chunks_exact(4)
                    .map(|x| u32::from_le_bytes(x.try_into().expect("4 bytes"))),
            );
            counts[b] = n;
        }
        if cur.rest() != 0 {
            return Err(format!("{} bytes after the blocks", cur.rest()));
        }
        let mut offsets = Vec::with_capacity(n_blocks + 1);
        offsets.push(0);
        for c in counts {
            offsets.push(offsets.last().copied().unwrap_or(0) + c);
        }
        Ok(KeyBuckets::from_parts(keys, entry_ids, offsets))
    }

    pub(crate) fn new(
        keys: &[[u32; N]],
        n_blocks: usize,
        block_of: impl Fn(&[u32; N]) -> usize,
    ) -> Self {
        let blocks: Vec<u32> = keys.iter().map(|k| block_of(k) as u32).collect();
        let (ids, offsets) = crate::bucket::bucket_order(&blocks, n_blocks);
        KeyBuckets::from_parts(
            ids.iter().map(|&i| keys[i as usize]).collect(),
            ids,
            offsets,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::KeyBuckets;

    /// Entries in 3 blocks by their first index (`i / 2`).
    fn buckets() -> KeyBuckets<2> {
        let keys = [[0, 1], [5, 0], [2, 2], [1, 3], [4, 4], [3, 0]];
        KeyBuckets::new(&keys, 3, |k| k[0] as usize / 2)
    }

    #[test]
    fn a_rank_gets_its_blocks_whole_and_no_other() {
        let b = buckets();
        let mine = KeyBuckets::<2>::from_bytes(&[6, 5], 3, &[0, 2], &b.to_bytes(&[0, 2]))
            .expect("decodes");
        assert_eq!(mine.offsets, [0, 2, 2, 4]);
        assert_eq!(mine.keys, [[0, 1], [1, 3], [5, 0], [4, 4]]);
        assert_eq!(mine.ids, [0, 3, 1, 4]);
        // The same entries, in the same order, as the driver's blocks 0 and 2.
        let theirs = |blk: usize| b.ids[b.offsets[blk]..b.offsets[blk + 1]].to_vec();
        assert_eq!(mine.ids, [theirs(0), theirs(2)].concat());
        let none = KeyBuckets::<2>::from_bytes(&[6, 5], 3, &[], &b.to_bytes(&[])).expect("empty");
        assert_eq!((none.offsets, none.keys.len()), (vec![0, 0, 0, 0], 0));
    }

    #[test]
    fn bytes_that_do_not_fit_are_refused_with_why() {
        let b = buckets();
        let bytes = b.to_bytes(&[1]);
        let err = |shape: [usize; 2], at_least: usize, ids: &[usize], bytes: &[u8]| {
            KeyBuckets::<2>::from_bytes(&shape, at_least, ids, bytes).expect_err("refused")
        };
        assert_eq!(
            err([6, 5], 3, &[1], &bytes[..bytes.len() - 1]),
            format!("blocks cut short at byte 32 of {}", bytes.len() - 1)
        );
        assert_eq!(
            err([3, 5], 3, &[1], &bytes),
            "an entry of block 1 outside the shape [3, 5]"
        );
        assert_eq!(
            err([6, 5], 4, &[1], &bytes),
            format!(
                "3 blocks in {} bytes, for a schedule of at least 4",
                bytes.len()
            )
        );
        assert_eq!(err([6, 5], 3, &[3], &bytes), "block 3 of 3");
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(err([6, 5], 3, &[1], &longer), "1 bytes after the blocks");
        assert_eq!(
            err([6, 5], 0, &[], &[1, 2]),
            "blocks cut short at byte 0 of 2"
        );
        assert_eq!(
            err([6, 5], 3, &[2, 0], &bytes),
            "blocks [2, 0] out of order"
        );
    }
}
