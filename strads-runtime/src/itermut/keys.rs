//! The iteration space of a loop over `a.iter_mut()` ([`Keys`]): the entries' indices, by
//! blocks, and a block's run with its chunk of values.

use std::fmt;
use std::sync::Arc;

use strads_analysis::Partition;

use super::KeyBuckets;
use crate::array::SparseArray;
use crate::exec::Block;
use crate::space::Space;

/// The iteration space of a loop over `a.iter_mut()`, for planning: the entries' indices
/// (the values travel separately).
pub struct Keys<'s, T, const N: usize>(pub(super) &'s SparseArray<T, N>);

impl<T, const N: usize> fmt::Debug for Keys<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Keys").field(&self.0.shape()).finish()
    }
}

impl<T: Clone + Send + Sync + 'static, const N: usize> Space for Keys<'_, T, N> {
    type Item<'a>
        = [usize; N]
    where
        Self: 'a;
    type Blocks = KeyBuckets<N>;

    fn n_dims(&self) -> usize {
        N
    }
    fn len(&self) -> usize {
        self.0.nnz()
    }
    fn extents(&self) -> Vec<usize> {
        self.0.shape().to_vec()
    }
    fn identity(&self) -> String {
        format!("sparse-values#{}", self.0.id())
    }
    fn partition(&self, dim: usize, p: usize) -> Partition {
        Space::partition(self.0, dim, p)
    }
    fn blocks(&self, dims: &[usize], parts: &[Partition]) -> Arc<KeyBuckets<N>> {
        let key = format!(
            "keys:{dims:?}:{:?}",
            parts.iter().map(|p| &p.bounds).collect::<Vec<_>>()
        );
        if let Some(ops) = self.0.spread() {
            // The entries stay on their ranks until a call across processes trades them
            // with their values (`spread_blocks`); every block's length is known now.
            let bounds: Vec<Vec<usize>> = parts.iter().map(|p| p.bounds.clone()).collect();
            return self.0.cache.get_or_insert(&format!("spread-{key}"), || {
                let lens = ops.block_counts(dims, &bounds);
                let lens = lens.into_iter().map(|n| n as usize).collect();
                KeyBuckets::spread(dims, bounds, lens)
            });
        }
        let counts: Vec<usize> = parts.iter().map(|x| x.len()).collect();
        let tables: Vec<Vec<u32>> = parts.iter().map(|x| x.lookup_table()).collect();
        self.0.cache.get_or_insert(&key, || {
            KeyBuckets::new(self.0.raw_keys(), counts.iter().product(), |k| {
                let mut b = 0usize;
                for (j, &d) in dims.iter().enumerate() {
                    b = b * counts[j] + tables[j][k[d] as usize] as usize;
                }
                b
            })
        })
    }
    fn blocks_by(
        &self,
        key: &str,
        n_blocks: usize,
        block_of: &(dyn Fn(&[usize]) -> usize + Sync),
    ) -> Arc<KeyBuckets<N>> {
        self.0.cache.get_or_insert(&format!("keys-by:{key}"), || {
            KeyBuckets::new(self.0.raw_keys(), n_blocks, |k| {
                block_of(&k.map(|i| i as usize))
            })
        })
    }
    fn for_each_in<'a, F: FnMut(Self::Item<'a>)>(
        &'a self,
        blocks: &'a KeyBuckets<N>,
        block: usize,
        trace: Option<&mut Vec<usize>>,
        mut f: F,
    ) {
        let blocks = blocks.held(block, || self.0.raw_keys());
        let r = blocks.offsets[block]..blocks.offsets[block + 1];
        if let Some(t) = trace {
            t.extend(blocks.ids[r.clone()].iter().map(|&i| i as usize));
        }
        for k in &blocks.keys[r] {
            f(k.map(|i| i as usize));
        }
    }
    fn block_len(&self, blocks: &KeyBuckets<N>, block: usize) -> usize {
        blocks.block_len(block)
    }
    fn item(&self, id: usize) -> [usize; N] {
        // The keys only: the values are out of the array while the loop runs.
        self.0.raw_keys()[id].map(|i| i as usize)
    }
    fn position(&self, item: &[usize; N]) -> u128 {
        crate::space::linear(item, &self.0.shape())
    }
    fn needs_setup(&self) -> bool {
        true
    }
    fn in_index_order(&self) -> bool {
        self.0.is_sorted()
    }
    /// Each rank gets the indices and ids of the entries its tasks run, never the whole
    /// array's (`with_ids` or not: a worker orders its values by the ids).
    fn blocks_bytes(&self, blocks: &KeyBuckets<N>, ids: &[usize], _: bool) -> Option<Vec<u8>> {
        Some(blocks.whole(|| self.0.raw_keys()).to_bytes(ids))
    }
    fn blocks_from_bytes(
        &self,
        at_least: usize,
        ids: &[usize],
        bytes: &[u8],
    ) -> Option<Result<KeyBuckets<N>, String>> {
        Some(KeyBuckets::from_bytes(
            &self.0.shape(),
            at_least,
            ids,
            bytes,
        ))
    }
    /// A spread array's entries and values traded among the ranks (once per grid and
    /// layout), so that each holds the blocks its workers run: the call then runs where
    /// they are (`super::spread`).
    fn spread_blocks(
        &self,
        blocks: &KeyBuckets<N>,
        workers: usize,
        threads: usize,
        runs: &[Option<usize>],
    ) -> Option<u64> {
        let (ops, g) = (self.0.spread()?, blocks.spread.as_ref()?);
        // Values calls left where they are, traded for another grid: the parts no longer
        // hold them, so they come home (`None`) before a call of this grid.
        if ops.moved() && g.mine.get().is_none() {
            return None;
        }
        let placed = |b: usize| crate::space::owner(b, &g.bounds, workers, threads);
        // Every block with entries runs, on the rank that holds it: its values are there.
        let run_by = |b: usize| runs.get(b).copied().flatten();
        if runs.len() > g.lens.len()
            || (0..g.lens.len()).any(|b| {
                run_by(b).is_some_and(|r| r != placed(b)) || (g.lens[b] > 0 && run_by(b).is_none())
            })
        {
            return None;
        }
        let (key, ..) = g.mine.get_or_init(|| {
            let shape = self.0.shape();
            let (key, mine) = ops.exchange_values(&shape, &g.dims, &g.bounds, workers, threads);
            let mine: Arc<KeyBuckets<N>> = mine
                .downcast()
                .unwrap_or_else(|_| ops.fail("a spread array's blocks of another kind".into()));
            let held = (0..g.lens.len()).map(|b| placed(b) == 0).collect();
            (key, held, mine)
        });
        Some(*key)
    }
}

impl<T, const N: usize> Block<'_, Keys<'_, T, N>>
where
    T: Clone + Send + Sync + 'static,
{
    /// Runs `f` over the block's iterations in order, each with its own value from `vals`
    /// (the block's chunk, in the block's order).
    pub fn for_each_mut<F: FnMut(([usize; N], &mut T))>(&mut self, vals: &mut [T], mut f: F) {
        let mut vals = vals.iter_mut();
        self.for_each(|k| {
            let v = vals.next().expect("a chunk holds a value per iteration");
            f((k, v))
        });
    }

    /// [`for_each_mut`](Self::for_each_mut) with each iteration's place in the serial
    /// order ([`Block::for_each_at`]).
    pub fn for_each_mut_at<F: FnMut(u128, ([usize; N], &mut T))>(
        &mut self,
        vals: &mut [T],
        mut f: F,
    ) {
        let mut vals = vals.iter_mut();
        self.for_each_at(|at, k| {
            let v = vals.next().expect("a chunk holds a value per iteration");
            f(at, (k, v))
        });
    }
}
