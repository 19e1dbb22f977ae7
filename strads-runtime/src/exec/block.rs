//! One task of one loop call, as the generated code sees it: a [`Block`].

use std::cell::{Cell, RefCell};

use crate::array::view::{Owners, SharedMut, ViewMut};
use crate::exec::rounds::Segments;
use crate::exec::state::LoopState;
use crate::plan::Window;
use crate::space::Space;
use crate::sync::{Lender, sealed};

/// One block of one loop call, as the generated code sees it.
pub struct Block<'a, S: Space> {
    pub(crate) state: &'static LoopState,
    pub(crate) space: &'a S,
    pub(crate) blocks: Option<&'a S::Blocks>,
    /// Reconnaissance and replay blocks are lists of iteration ids instead of `blocks[id]`.
    pub(crate) list: Option<&'a [u32]>,
    pub(crate) id: usize,
    pub(crate) seq: (usize, usize),
    pub(crate) windows: &'a [Window],
    /// The call's ownership table, for reconnaissance windows.
    pub(crate) owners: Option<Owners<'a>>,
    pub(crate) trace: Option<Vec<usize>>,
    /// Where write-back buffers are applied in this task, and the turns of a replay.
    pub(crate) segments: Option<&'a Segments<'a>>,
    /// Rounds of this task done so far (with buffers), and whether it finished them.
    pub(crate) round: Cell<usize>,
    pub(crate) finished: Cell<bool>,
    /// Arrays whose rows the iterations reach by key, registered as their views are made.
    pub(crate) streams: RefCell<Vec<crate::pool::prefetch::RowStream>>,
    /// The loop call the block belongs to (unique per call, never 0).
    pub(crate) call: u64,
    /// Arrays (indices into the spec) the block has a view of: one each.
    pub(crate) viewed: RefCell<Vec<usize>>,
    /// The first worker of this process.
    pub(crate) home: usize,
}

impl<S: Space> std::fmt::Debug for Block<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("loop", &self.state.spec().name)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl<S: Space> sealed::Sealed for Block<'_, S> {}
impl<S: Space> Lender for Block<'_, S> {
    fn lender(&self) -> (usize, u64) {
        (self.seq.1, self.call)
    }
    fn home(&self) -> usize {
        self.home
    }
}

impl<'a, S: Space> Block<'a, S> {
    /// This worker's view of array `array` (an index into the loop's spec) for the block.
    ///
    /// # Panics
    /// When the block already has a view of `array` (two would alias), or `shared` was
    /// lent as another array or to another call: the windows the plan gives array `array`
    /// in this call are what keep workers apart, so a `SharedMut` serves one array of one
    /// call, and each block views it once.
    pub fn view_mut<'s, T, const N: usize>(
        &self,
        shared: &'s SharedMut<'_, T, N>,
        array: usize,
    ) -> ViewMut<'s, T, N>
    where
        'a: 's,
    {
        let spec = self.state.spec();
        let name: &'static str = spec.arrays[array].name.as_ref();
        if !shared.lend_to(self.call, array) {
            panic!(
                "strads: a SharedMut lent to another array or another call was given as `{name}` \
                 of loop `{}`: each is lent to one array of one call (please report it)",
                spec.name
            );
        }
        {
            let mut viewed = self.viewed.borrow_mut();
            if viewed.contains(&array) {
                panic!(
                    "strads: a second view of `{name}` in one block of loop `{}` would alias the \
                     first (please report it)",
                    spec.name
                );
            }
            viewed.push(array);
        }
        if let Some(Some(dim)) = self.state.row_dims().get(array) {
            let shape = shared.shape();
            self.streams
                .borrow_mut()
                .push(crate::pool::prefetch::RowStream {
                    base: shared.ptr() as usize,
                    row_bytes: shape[1..].iter().product::<usize>() * std::mem::size_of::<T>(),
                    array_bytes: shape.iter().product::<usize>() * std::mem::size_of::<T>(),
                    dim: *dim,
                });
        }
        shared.view(name, &self.windows[array], self.owners)
    }

    /// Where the block runs in the schedule: `(step, worker)`. Blocks of one step touch
    /// disjoint data; folding per-block results in `seq` order is deterministic for a
    /// worker count, and the serial replay folds in the same order.
    pub fn seq(&self) -> (usize, usize) {
        self.seq
    }

    /// Runs `f` over the block's iterations in order.
    #[inline]
    pub fn for_each<F: FnMut(S::Item<'a>)>(&mut self, mut f: F) {
        if let Some(seg) = self.segments.filter(|s| s.counts()) {
            if self.finished.get() {
                panic!(
                    "strads: `for_each` ran twice on one block of loop `{}`; its buffers' \
                     application points are counted once per block (please report it)",
                    self.state.spec().name
                );
            }
            // Buffers are applied between iterations: count them.
            let mut i = 0usize;
            let mut go = true;
            let (round, finished) = (Cell::new(self.round.get()), Cell::new(false));
            let seq = self.seq;
            self.for_each_plain(|item| {
                if go && seg.before(seq, i, &round) {
                    i += 1;
                    f(item);
                } else {
                    go = false;
                }
            });
            if go {
                seg.finish(seq, &round, &finished);
            }
            self.round.set(round.get());
            self.finished.set(finished.get());
            return;
        }
        self.for_each_plain(f)
    }

    /// Runs `f` over the block's iterations in order, with each one's place in the serial
    /// order (the same on every rank): its id in a list (reconnaissance), its index order
    /// in a space in index order, or its place in the block (a space out of index order
    /// runs an ordered loop's reductions in one block). What an `ordered` loop's exact
    /// float reductions ([`Terms`](crate::Terms)) are keyed by.
    #[inline]
    pub fn for_each_at<F: FnMut(u128, S::Item<'a>)>(&mut self, mut f: F) {
        let space = self.space;
        let list = self.list;
        let by_index = list.is_none() && space.in_index_order();
        let mut k = 0usize;
        self.for_each(|item| {
            let at = match list {
                Some(ids) => ids[k] as u128,
                None if by_index => space.position(&item),
                None => k as u128,
            };
            k += 1;
            f(at, item)
        });
    }

    #[inline]
    fn for_each_plain<F: FnMut(S::Item<'a>)>(&mut self, mut f: F) {
        // Iterations reaching rows by their keys: request the rows `AHEAD` entries early.
        let streams =
            crate::pool::prefetch::worth_it(std::mem::take(&mut *self.streams.borrow_mut()));
        if !streams.is_empty()
            && self.list.is_none()
            && let Some(blocks) = self.blocks
            && let Some((keys, stride)) = self.space.block_keys(blocks, self.id)
            && stride > 0
        {
            let ahead = crate::pool::prefetch::AHEAD * stride;
            for k in keys.chunks_exact(stride).take(crate::pool::prefetch::AHEAD) {
                streams.iter().for_each(|s| s.fetch(k));
            }
            let mut next = ahead;
            self.space
                .for_each_in(blocks, self.id, self.trace.as_mut(), |item| {
                    if let Some(k) = keys.get(next..next + stride) {
                        streams.iter().for_each(|s| s.fetch(k));
                    }
                    next += stride;
                    f(item)
                });
            return;
        }
        if let Some(ids) = self.list {
            if let Some(t) = self.trace.as_mut() {
                t.extend(ids.iter().map(|&i| i as usize));
            }
            for &id in ids {
                f(self.space.item(id as usize));
            }
            return;
        }
        let blocks = self
            .blocks
            .expect("a block is a list or one of the plan's blocks");
        self.space
            .for_each_in(blocks, self.id, self.trace.as_mut(), f);
    }
}
