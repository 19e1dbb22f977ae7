//! Loops over `a.iter_mut()`: every entry's value belongs to its iteration alone, so
//! updating it creates no dependence. For a call the values are moved out of the array in
//! the plan's block order and split into one disjoint `&mut [T]` per block; the block that
//! runs gets its chunk, and afterwards (or after a panic) every value goes back. All safe:
//! `split_at_mut` is what keeps two workers from ever sharing a value.

use std::fmt;
use std::sync::{Arc, Mutex};

use strads_analysis::Partition;

use crate::array::SparseArray;
use crate::exec::{Block, Call};
use crate::plan::Unit;
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
    fn block_len(&self, blocks: &KeyBuckets<N>, block: usize) -> usize {
        blocks.offsets[block + 1] - blocks.offsets[block]
    }
    fn item(&self, id: usize) -> [usize; N] {
        // The keys only: the values are out of the array while the loop runs.
        self.0.raw_keys()[id].map(|i| i as usize)
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
        let mut vals = vals.iter_mut();
        self.for_each(|k| {
            let v = vals.next().expect("a chunk holds a value per iteration");
            f((k, v))
        });
    }
}

impl Call<'_> {
    /// Runs a call of a loop over `array.iter_mut()`. `f` runs one block, given its chunk
    /// of values.
    pub fn run_mut<T, const N: usize, F>(self, array: &mut SparseArray<T, N>, f: F)
    where
        T: Clone + Default + Send + Sync + 'static,
        F: Fn(&mut Block<'_, Keys<'_, T, N>>, &mut [T]) + Sync,
    {
        crate::exec::explain_local(self.state, "`iter_mut()` loops do not cross processes yet");
        // Planning may panic (an ordered loop over unsorted entries): plan before any value
        // moves out of the array, so that the array keeps its values then.
        let job = self.prepare(&Keys(&*array));
        // Each task's iteration ids, in its order: the chunks.
        let sched = job.schedule();
        let p = sched.workers;
        let mut order: Vec<u32> = Vec::new();
        let mut bounds: Vec<Option<(usize, usize)>> = vec![None; sched.steps.len() * p];
        for (t, w, task) in sched.serial_order() {
            let start = order.len();
            match task.unit {
                Unit::Ids(k) => order.extend_from_slice(&sched.lists[k]),
                Unit::Block(id) => {
                    let b = job.blocks().expect("blocks of a static plan");
                    order.extend_from_slice(&b.ids[b.offsets[id]..b.offsets[id + 1]]);
                }
            }
            bounds[t * p + w] = Some((start, order.len()));
        }
        let mut values = array.take_values();
        let outcome = {
            let keys = Keys(&*array);
            let mut ordered: Vec<T> = order
                .iter()
                .map(|&id| std::mem::take(&mut values[id as usize]))
                .collect();
            let result = {
                let mut slots: Vec<Mutex<Option<&mut [T]>>> = Vec::with_capacity(bounds.len());
                let mut rest: &mut [T] = &mut ordered;
                let mut at = 0;
                for b in &bounds {
                    let chunk = b.map(|(lo, hi)| {
                        debug_assert_eq!(lo, at);
                        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(hi - lo);
                        rest = tail;
                        at = hi;
                        chunk
                    });
                    slots.push(Mutex::new(chunk));
                }
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let block = |blk: &mut Block<'_, Keys<'_, T, N>>| {
                        let (t, w) = blk.seq();
                        let chunk = slots[t * p + w]
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .take()
                            .expect("each block runs once per call");
                        f(blk, chunk)
                    };
                    job.run(&keys, &block);
                }))
            };
            for (j, v) in ordered.into_iter().enumerate() {
                values[order[j] as usize] = v;
            }
            result
        };
        array.restore_values(values);
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
