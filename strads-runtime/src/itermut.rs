//! Loops over `a.iter_mut()`: every entry's value belongs to its iteration alone, so
//! updating it creates no dependence. For a call the values are moved out of the array in
//! the plan's block order and split into one disjoint `&mut [T]` per block; the block that
//! runs gets its chunk, and afterwards (or after a panic) every value goes back. All safe:
//! `split_at_mut` is what keeps two workers from ever sharing a value.

use std::fmt;
use std::sync::{Arc, Mutex};

use strads_analysis::Partition;

use crate::array::SparseArray;
use crate::exec::{Block, LoopState, Parked, run, run_buffered};
use crate::pool::{current_threads, in_worker};
use crate::space::Space;

/// The indices of a sparse array's entries block by block.
#[derive(Debug)]
pub struct KeyBuckets<const N: usize> {
    keys: Vec<[u32; N]>,
    ids: Vec<u32>,
    offsets: Vec<usize>,
}

impl<const N: usize> KeyBuckets<N> {
    fn new(keys: &[[u32; N]], n_blocks: usize, block_of: impl Fn(&[u32; N]) -> usize) -> Self {
        let blocks: Vec<u32> = keys.iter().map(|k| block_of(k) as u32).collect();
        let (ids, offsets) = crate::bucket::bucket_order(&blocks, n_blocks);
        KeyBuckets {
            keys: ids.iter().map(|&i| keys[i as usize]).collect(),
            ids,
            offsets,
        }
    }
}

/// The iteration space of a loop over `a.iter_mut()`, for planning: the entries' indices
/// (the values travel separately).
pub struct Keys<'s, T, const N: usize>(&'s SparseArray<T, N>);

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
        let r = blocks.offsets[block]..blocks.offsets[block + 1];
        if let Some(t) = trace {
            t.extend(blocks.ids[r.clone()].iter().map(|&i| i as usize));
        }
        for k in &blocks.keys[r] {
            f(k.map(|i| i as usize));
        }
    }
    fn item(&self, id: usize) -> [usize; N] {
        self.0.entry(id).0
    }
    fn in_index_order(&self) -> bool {
        self.0.is_sorted()
    }
}

impl<T, const N: usize> Block<'_, Keys<'_, T, N>>
where
    T: Clone + Send + Sync + 'static,
{
    /// Runs `f` over the block's iterations in order, each with its own value from `vals`
    /// (the block's chunk, in the block's order).
    pub fn for_each_mut<F: FnMut(([usize; N], &mut T))>(&mut self, vals: &mut [T], mut f: F) {
        let blocks = self.blocks.expect("a loop over iter_mut() runs on blocks");
        let r = blocks.offsets[self.id]..blocks.offsets[self.id + 1];
        if let Some(t) = self.trace.as_mut() {
            t.extend(blocks.ids[r.clone()].iter().map(|&i| i as usize));
        }
        let items = blocks.keys[r].iter().zip(vals.iter_mut());
        let Some(rounds) = self.rounds else {
            for (k, v) in items {
                f((k.map(|i| i as usize), v));
            }
            return;
        };
        // Write-back buffers are applied between iterations.
        for (i, (k, v)) in items.enumerate() {
            if !rounds.before(i) {
                return;
            }
            f((k.map(|i| i as usize), v));
        }
        if self.step_end {
            rounds.end_step();
        }
    }
}

/// Runs one call of a loop over `array.iter_mut()`. `f` runs one block, given its chunk
/// of values.
pub fn run_mut<T, const N: usize, F>(
    state: &'static LoopState,
    array: &mut SparseArray<T, N>,
    shapes: &[&[usize]],
    f: F,
) where
    T: Clone + Default + Send + Sync + 'static,
    F: Fn(&mut Block<'_, Keys<'_, T, N>>, &mut [T]) + Sync,
{
    run_mut_inner(state, array, shapes, f, None)
}

/// [`run_mut`] for a loop with write-back buffers (see [`run_buffered`](crate::run_buffered)).
pub fn run_mut_buffered<T, const N: usize, F>(
    state: &'static LoopState,
    array: &mut SparseArray<T, N>,
    shapes: &[&[usize]],
    f: F,
    apply: &(dyn Fn(&Parked) + Sync),
) where
    T: Clone + Default + Send + Sync + 'static,
    F: Fn(&mut Block<'_, Keys<'_, T, N>>, &mut [T]) + Sync,
{
    run_mut_inner(state, array, shapes, f, Some(apply))
}

fn run_mut_inner<T, const N: usize, F>(
    state: &'static LoopState,
    array: &mut SparseArray<T, N>,
    shapes: &[&[usize]],
    f: F,
    apply: Option<&(dyn Fn(&Parked) + Sync)>,
) where
    T: Clone + Default + Send + Sync + 'static,
    F: Fn(&mut Block<'_, Keys<'_, T, N>>, &mut [T]) + Sync,
{
    // Planning may panic (an ordered loop over unsorted entries): plan before any value
    // moves out of the array, so that the array keeps its values then.
    let p = if in_worker() { 1 } else { current_threads() };
    let blocks = state.plan(&Keys(&*array), shapes, p).blocks.clone();
    let mut values = array.take_values();
    let outcome = {
        let keys = Keys(&*array);
        // The values in the blocks' order, cut into one chunk per block.
        let mut ordered: Vec<T> = blocks
            .ids
            .iter()
            .map(|&id| std::mem::take(&mut values[id as usize]))
            .collect();
        let result = {
            let mut rest: &mut [T] = &mut ordered;
            let mut slots = Vec::with_capacity(blocks.offsets.len() - 1);
            for w in blocks.offsets.windows(2) {
                let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
                slots.push(Mutex::new(Some(chunk)));
                rest = tail;
            }
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let block = |blk: &mut Block<'_, Keys<'_, T, N>>| {
                    let chunk = slots[blk.id]
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .take()
                        .expect("each block runs once per call");
                    f(blk, chunk)
                };
                match apply {
                    None => run(state, &keys, shapes, block),
                    Some(apply) => run_buffered(state, &keys, shapes, block, apply),
                }
            }))
        };
        for (j, v) in ordered.into_iter().enumerate() {
            values[blocks.ids[j] as usize] = v;
        }
        result
    };
    array.restore_values(values);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}
