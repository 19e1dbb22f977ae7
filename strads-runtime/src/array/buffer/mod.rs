//! Write-back buffers (Orion sect. 3.3.4): an array a loop updates by `+=` and `-=` without
//! the updates taking part in the dependence analysis. Each worker updates its own copy of
//! the array. At every *application point* the copies are combined: worker 0's copy plus
//! every other worker's difference from the last point, in worker order, becomes the new
//! value, and every copy starts again from it (or, with an apply function, the summed
//! differences are handed to the function element by element and the copies start again
//! from the unchanged array). A worker sees its own updates at once and the others' after
//! the next application point.
//!
//! A parallel loop applies its buffers at the end of every step of its schedule (a
//! worker's partition of the iteration space), every `max_delay` iterations of each worker
//! when the loop says so, and at the end of the call; one worker applies them only every
//! `max_delay` iterations and at the end, as the serial loop does. The points and the
//! order are fixed, so results are bit-reproducible for a worker count, and one worker
//! gives exactly the serial loop's result.
//!
//! `sync = "hybrid"` ([`Buffered::hybrid`]) is the exception: the workers of a process
//! share one copy (`shared.rs`), so its results depend on the threads' timing.

mod apply;
mod collective;
mod copy;
#[cfg(test)]
mod fake;
pub mod merge;
mod shared;
mod slot;
mod stale;
mod tree;
mod wire;
pub(crate) mod wrap;

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Add, Sub};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::array::DistArray;
use crate::sync::{Lender, Parked};

pub use copy::CopyView;
pub use shared::{Relaxed, SharedCopyView};
use slot::{Copies, Received, Slot};

/// A number for the calling thread, never 0, different from every other live thread's.
fn thread_token() -> usize {
    thread_local!(static TOKEN: u8 = const { 0 });
    TOKEN.with(|t| t as *const u8 as usize)
}

/// An array lent to a loop through per-worker write-back buffers.
///
/// `#[parallel_for(buffer(h))]` uses it for you; it also works on its own, with any
/// threads:
///
/// ```
/// use strads_runtime::{Buffered, DistArray};
/// let mut counts = DistArray::<u64, 1>::zeros([4]);
/// let buf = Buffered::new(&mut counts, 2);
/// std::thread::scope(|s| {
///     for w in 0..2 {
///         let buf = &buf;
///         s.spawn(move || buf.with(w, |c| c[w + 1] += 10));
///     }
/// });
/// buf.finish(); // worker 0's copy, then worker 1's difference
/// assert_eq!(counts.as_slice(), &[0, 10, 10, 0]);
/// ```
pub struct Buffered<'a, T, const N: usize> {
    array: &'a mut DistArray<T, N>,
    /// The value at the last application point.
    base: Slot<T>,
    copies: Vec<Slot<T>>,
    shape: [usize; N],
    len: usize,
    /// The array's name in the loop, for messages.
    name: &'static str,
    /// The loop call whose blocks view the copies and whose tokens apply them, once one
    /// did (0 before): the copies serve one call.
    call: AtomicU64,
    /// `sync` mode ([`averaged`](Self::averaged), [`merged`](Self::merged)): the new value
    /// is `merge(last value, the differences' sum, copies)` instead of the plain sum.
    merge: Option<MergeFn<T>>,
    /// `sync = "hybrid"`: the workers of a process share one copy, that of the process's
    /// first worker ([`shared_view_in`](Self::shared_view_in)).
    hybrid: bool,
    /// In `hybrid` mode, the copies that hold replicas: one per process, its first worker's
    /// (learnt from the processes' exchange; `[0]` in one process).
    live: Mutex<Vec<usize>>,
    /// Whether a view was lent since the last merge that ran with no view alive: `finish`
    /// merges only then (a merge function is not called once more on merged values).
    dirty: AtomicBool,
    /// `sync` replicas: zero, the base partial sums travel against (`tree.rs`).
    zero: Option<T>,
    /// In a call across processes, the partial sums exchanged at the last application point
    /// (this process's and the others', each over its workers' range: a node of the tree),
    /// which stand for those workers' copies in the tree's sum: `(workers, first element,
    /// the sums from there)` (a reduce-scatter's hold its owner's segment only).
    partials: Mutex<Vec<Partial<T>>>,
    /// In a merge across processes, the other processes' workers' copies over the
    /// elements this process merges, as their messages brought them (empty for a copy that
    /// changed nothing): `(worker, first element, values)`. The merge takes them
    /// (`Copies::part`), and their slots stay unmade.
    received: Mutex<Vec<Received<T>>>,
    /// Whether the next merge across processes of an array of `COLLECTIVE_BYTES` or more
    /// goes by reduce-scatter (`collective.rs`); set by every process alike from the last
    /// merge's changed chunks (`Overlap`).
    scatter: AtomicBool,
    /// `sync = "ssp(s)"` with several workers: this process's workers' round starts and
    /// differences (`stale.rs`), made at the call's first phase.
    stale: std::sync::OnceLock<stale::Stale<T>>,
}

/// A node of the merge's tree summed by another process (or this one) for a merge across
/// processes: `(its workers, the first element it covers, the partial sums from there)`.
type Partial<T> = (std::ops::Range<usize>, usize, Vec<T>);

/// A `sync` merge over a chunk of elements: `(values, summed differences, copies)`, the
/// values rewritten in place. Made from an element function by [`Buffered::merged`], so
/// that the element function is inlined into the loop.
type MergeFn<T> = Box<dyn Fn(&mut [T], &[T], usize) + Send + Sync>;

/// Elements merged per pass (`merge_span`, `apply_with`): the chunk's summed differences
/// stay in the first-level cache.
const MERGE_CHUNK: usize = 2048;

/// Elements whose replicas `sync = "bsp"` can average: the differences' sum divided by the
/// number of replicas.
#[diagnostic::on_unimplemented(
    message = "`sync` averages the replicas of the arrays the loop writes, and `{Self}` \
               cannot be averaged",
    label = "an array of `{Self}` written by a `sync` loop",
    note = "`sync` loops write arrays of `f32` or `f64`; keep counts in a loop of their own"
)]
pub trait Average: Copy + Default {
    /// `self / n`.
    fn divide(self, n: usize) -> Self;
}

impl Average for f32 {
    fn divide(self, n: usize) -> Self {
        self / n as f32
    }
}

impl Average for f64 {
    fn divide(self, n: usize) -> Self {
        self / n as f64
    }
}

// SAFETY: the copies are reached through raw pointers by one thread at a time: worker `w`
// through its `CopyView` while it runs (one view per copy at a time: `view` checks the
// slot's `lent` state, so a second view, on any thread, panics instead of aliasing), `with`
// under the slot's lock (and through a view, so never beside another), the copies serve
// the blocks of one loop call and only that call's tokens apply them (`serve`), and
// `apply_*` only with a `Parked` token (every worker waiting) or `&mut self`; under
// `ssp(s)` a `Parked` token's phase touches one worker's own copy and state (the worker
// itself, between two iterations) or, for a round's merge, the value and the round's slot
// of differences, in the order `exec/ahead.rs` keeps (`stale.rs` says why they are
// disjoint). In `hybrid`
// mode a process's workers share a copy through `SharedCopyView`s, which reach it only by
// atomic loads and stores, and never beside a `CopyView` (the `lent` state). That is
// sharing `&mut [T]` chunks among threads: `T: Send`.
unsafe impl<T: Send, const N: usize> Send for Buffered<'_, T, N> {}
// SAFETY: as above; `original` hands out `&DistArray` to the unchanged array, which needs
// `T: Sync`.
unsafe impl<T: Send + Sync, const N: usize> Sync for Buffered<'_, T, N> {}

impl<T, const N: usize> fmt::Debug for Buffered<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffered")
            .field("shape", &self.array.shape())
            .field("workers", &self.copies.len())
            .finish()
    }
}

impl<'a, T, const N: usize> Buffered<'a, T, N>
where
    T: Copy + Add<Output = T> + Sub<Output = T> + Send + Sync + 'static,
{
    /// Lends `array` to a loop with up to `max_workers` workers.
    pub fn new(array: &'a mut DistArray<T, N>, max_workers: usize) -> Self {
        let shape = array.shape();
        let base = Slot::new(array.as_slice());
        let len = array.as_slice().len();
        let copies: Vec<Slot<T>> = (0..max_workers.max(1)).map(|_| Slot::unmade(len)).collect();
        Buffered {
            len: array.as_slice().len(),
            array,
            base,
            copies,
            shape,
            name: "a buffered array",
            call: AtomicU64::new(0),
            merge: None,
            hybrid: false,
            live: Mutex::new(vec![0]),
            dirty: AtomicBool::new(true),
            zero: None,
            partials: Mutex::new(Vec::new()),
            received: Mutex::new(Vec::new()),
            scatter: AtomicBool::new(true),
            stale: std::sync::OnceLock::new(),
        }
    }

    /// The same buffer, as `sync` replicas: at each application point the new value is
    /// the last one plus the mean of every copy's difference from it (summed in worker
    /// order, divided by the number of copies), instead of their sum. One copy keeps its
    /// value exactly.
    pub fn averaged(self) -> Self
    where
        T: Average,
    {
        self.merged(merge::average::<T>)
    }

    /// The same buffer, as `sync` replicas merged by `f`: at each application point the
    /// new value of every element is `f(last value, the copies' differences from it summed
    /// in the workers' tree order (`tree.rs`), number of copies)` ([`merge::average`] is
    /// [`averaged`](Self::averaged), [`merge::sum`] adds every difference). One copy keeps
    /// its value exactly: `f` is not called.
    pub fn merged<F>(mut self, f: F) -> Self
    where
        F: Fn(T, T, usize) -> T + Send + Sync + 'static,
        T: Default,
    {
        self.zero = Some(T::default());
        self.merge = Some(Box::new(move |values: &mut [T], summed: &[T], n| {
            for (v, &d) in values.iter_mut().zip(summed) {
                *v = f(*v, d, n);
            }
        }));
        self
    }

    /// The same `sync` replicas, shared by the workers of each process without locks
    /// (`sync = "hybrid"`): workers reach their process's replica through
    /// [`shared_view_in`](Self::shared_view_in), whose rows each iteration copies in and
    /// commits back with relaxed atomics; the processes' replicas merge at the application
    /// points, `f` seeing one replica per process. Not reproducible: results depend on
    /// the threads' timing.
    pub fn hybrid(mut self) -> Self
    where
        T: Relaxed,
    {
        self.hybrid = true;
        self
    }

    /// The same buffer, called `name` in messages (an index outside the array names it).
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = name;
        self
    }

    /// The array as it was when the loop started (unchanged until [`finish`](Self::finish)).
    pub fn original(&self) -> &DistArray<T, N> {
        self.array
    }

    /// Runs `f` on worker `worker`'s copy. Callers on other threads wait their turn. In
    /// [`hybrid`](Self::hybrid) mode the workers share one copy, which every `worker`
    /// reaches.
    ///
    /// # Panics
    /// When called inside another `with` on the same copy on this thread (the two views
    /// would alias; use the outer one), or while a loop's worker holds the copy.
    pub fn with<R>(&self, worker: usize, f: impl FnOnce(&mut CopyView<'_, T, N>) -> R) -> R {
        let worker = if self.hybrid { 0 } else { worker };
        let slot = &self.copies[worker];
        let me = thread_token();
        // Only this thread ever stores its own token: reading it means we hold the copy.
        if slot.holder.load(Ordering::Relaxed) == me {
            panic!(
                "strads: Buffered::with({worker}, ..) was called inside another `with` on \
                 worker {worker}'s copy on the same thread; the two views would alias it \
                 (use the outer view)"
            );
        }
        let _turn = slot.lock.lock().unwrap_or_else(|e| e.into_inner());
        slot.holder.store(me, Ordering::Relaxed);
        let _release = crate::pool::Restore(|| slot.holder.store(0, Ordering::Relaxed));
        f(&mut self.view(worker))
    }

    /// The copy of the worker that runs `block`, for the generated code. The copy is lent
    /// to one view at a time, and the copies serve the blocks of one loop call (whose
    /// tokens alone may apply them).
    ///
    /// # Panics
    /// When another view of the copy is alive (on any thread): two would alias it; or
    /// when the buffer served another loop call.
    #[doc(hidden)]
    pub fn view_in(&self, block: &impl Lender) -> CopyView<'_, T, N> {
        let (worker, call) = block.lender();
        self.serve(call);
        self.view(worker)
    }

    /// The replica of the process of the worker that runs `block`, shared with the
    /// process's other workers ([`hybrid`](Self::hybrid)), for the generated code.
    ///
    /// # Panics
    /// When the buffer is not `hybrid`, an exclusive view of the copy is alive, or the
    /// buffer served another loop call.
    #[doc(hidden)]
    pub fn shared_view_in(&self, block: &impl Lender) -> SharedCopyView<'_, T, N>
    where
        T: Relaxed,
    {
        let (_, call) = block.lender();
        self.serve(call);
        assert!(
            self.hybrid,
            "strads: the buffer `{}` is not shared between workers (please report it)",
            self.name
        );
        let slot = &self.copies[block.home()];
        if slot
            .lent
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |n| {
                (n != shared::EXCLUSIVE).then_some(n + 1)
            })
            .is_err()
        {
            panic!(
                "strads: the shared copy of buffered array `{}` is lent to an exclusive view",
                self.name
            );
        }
        slot.make(&self.base, self.len);
        self.dirty.store(true, Ordering::Relaxed);
        SharedCopyView::new(slot.ptr, self.shape, &slot.lent, self.name)
    }

    /// Binds the copies to loop call `call`, or checks they are bound to it.
    fn serve(&self, call: u64) {
        if let Err(other) =
            self.call
                .compare_exchange(0, call, Ordering::Relaxed, Ordering::Relaxed)
            && other != call
        {
            panic!(
                "strads: the buffer `{}` serves one loop call, but was used by another \
                 (please report it)",
                self.name
            );
        }
    }

    /// Worker `worker`'s copy. The copy is lent to one view at a time.
    ///
    /// # Panics
    /// When another view of the copy is alive (on any thread): two would alias it.
    pub(crate) fn view(&self, worker: usize) -> CopyView<'_, T, N> {
        let slot = &self.copies[worker];
        if slot
            .lent
            .compare_exchange(0, shared::EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            panic!(
                "strads: worker {worker}'s copy of a buffered array is already lent to a view \
                 (a second view, on this thread or another, would alias it)"
            );
        }
        slot.make(&self.base, self.len);
        self.dirty.store(true, Ordering::Relaxed);
        CopyView {
            ptr: slot.ptr,
            shape: self.shape,
            row_len: self.shape[1..].iter().product(),
            lent: &slot.lent,
            name: self.name,
            _copy: PhantomData,
        }
    }

    /// Every copy's `with` lock, taken without waiting: applying rewrites every copy, so no
    /// `with` may be running.
    fn no_with(&self) -> Vec<MutexGuard<'_, ()>> {
        self.no_with_on(0..self.copies.len())
    }

    /// The `with` locks of the copies of `workers`, taken without waiting (an `ssp(s)`
    /// phase touches those copies alone): no `with` may be running on them, nor start
    /// while the guards live.
    fn no_with_on(&self, workers: impl Iterator<Item = usize>) -> Vec<MutexGuard<'_, ()>> {
        workers
            .map(|w| match self.copies[w].lock.try_lock() {
                Ok(g) => g,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => panic!(
                    "strads: a buffered array was applied while Buffered::with ran on worker \
                     {w}'s copy"
                ),
            })
            .collect()
    }

    /// Worker `w`'s copy, if it was ever made; a copy never made stands for the value.
    fn made_copy(&self, w: usize) -> Option<&mut [T]> {
        let slot = &self.copies[w];
        slot.made.is_completed().then(|| slot.slice(self.len))
    }

    /// Makes the copies of `workers` not made yet (`ssp(s)`'s first phase), forming no
    /// reference to any: the workers of the copies already made may be writing them.
    fn make_all(&self, workers: std::ops::Range<usize>) {
        for slot in &self.copies[workers] {
            slot.make(&self.base, self.len);
        }
    }

    /// Applies the buffer: the new value is worker 0's copy plus every other worker's
    /// difference from the last point, in worker order; every copy starts again from it.
    /// The executor calls it with every worker parked (or, under `sync = "ssp(s)"`, for one
    /// phase of the run-ahead, which touches only what the phase names).
    pub fn apply(&self, parked: &Parked<'_>) {
        self.serve(parked.call());
        if parked.phase() != crate::sync::Phase::Merge {
            // `ssp(s)`: one worker's phase, or a round's merge behind the workers.
            self.ahead(parked);
            return;
        }
        if self.reduce_scatter(parked) {
            self.settle();
            return;
        }
        self.gather(parked);
        self.apply_parked();
    }

    /// [`apply`](Self::apply), the caller having checked that the copies' views wait.
    fn apply_parked(&self) {
        self.merge_span(0..self.len);
        self.settle();
    }

    /// After a merge: the copies are clean unless a view is still alive.
    fn settle(&self) {
        if self
            .copies
            .iter()
            .all(|c| c.lent.load(Ordering::Acquire) == 0)
        {
            self.dirty.store(false, Ordering::Relaxed);
        }
    }

    /// The merge itself, of the elements in `span` (every element, or in a merge across
    /// processes the segment this process merges for all). Each worker's copy is, in this
    /// order: the one another process sent for this merge (`received`), its slot here if
    /// made, or else the value itself (a copy never lent differs from it nowhere).
    fn merge_span(&self, span: std::ops::Range<usize>) {
        let _no_with = self.no_with();
        let received = Copies::by_worker(
            std::mem::take(&mut *self.received.lock().unwrap_or_else(|e| e.into_inner())),
            self.copies.len(),
        );
        // The replicas: every copy, or in `hybrid` mode one per process.
        let replicas: Vec<usize> = if self.hybrid {
            self.live.lock().unwrap_or_else(|e| e.into_inner()).clone()
        } else {
            (0..self.copies.len()).collect()
        };
        let base = self.base.slice(self.len);
        if self.hybrid && replicas.len() == 1 {
            // One process: its replica is the value (`finish` takes it from there).
            return;
        }
        let mut copies: Vec<Option<&mut [T]>> =
            (0..self.copies.len()).map(|w| self.made_copy(w)).collect();
        if let Some(merge) = &self.merge
            && replicas.len() > 1
        {
            // One pass per chunk: the replicas' differences summed (in the workers' tree
            // order, `tree.rs`; in `hybrid` mode, one replica per process in rank order),
            // merged into the value, and the value copied back into every copy.
            let n = replicas.len();
            // Used once: a later merge (`finish`'s) reads every copy, all equal then.
            let partials =
                std::mem::take(&mut *self.partials.lock().unwrap_or_else(|e| e.into_inner()));
            let mut summed: Vec<T> = Vec::with_capacity(MERGE_CHUNK.min(self.len));
            let mut scratch = Vec::new();
            for start in span.clone().step_by(MERGE_CHUNK) {
                let end = (start + MERGE_CHUNK).min(span.end);
                let values = &mut base[start..end];
                {
                    let values: &[T] = values;
                    let copies: &[Option<&mut [T]>] = &copies;
                    let copy =
                        |w: usize| Copies::part(&received, copies, w, start..end).unwrap_or(values);
                    summed.clear();
                    summed.extend(
                        copy(replicas[0])
                            .iter()
                            .zip(values)
                            .map(|(&c, &b)| wrap::sub(c, b)),
                    );
                    if self.hybrid {
                        for c in replicas[1..].iter().map(|&r| copy(r)) {
                            for ((s, &c), &b) in summed.iter_mut().zip(c).zip(values) {
                                *s = wrap::add(*s, wrap::sub(c, b));
                            }
                        }
                    } else {
                        let leaf = |w: usize, out: &mut [T]| tree::difference(out, copy(w), values);
                        let known = |r: &std::ops::Range<usize>| {
                            partials
                                .iter()
                                .find(|(w, ..)| w == r)
                                .map(|(_, at, p)| &p[start - at..end - at])
                        };
                        tree::sum(0..n, &mut summed, &leaf, &known, &mut scratch, 0);
                    }
                }
                merge(values, &summed, n);
                for c in copies.iter_mut().flatten() {
                    c[start..end].copy_from_slice(values);
                }
            }
            return;
        }
        // Worker 0's copy plus every other's difference from the value, in worker order,
        // a chunk at a time (the chunk's sum stays in cache), then set as the value and in
        // every copy made.
        let mut sum: Vec<T> = Vec::with_capacity(MERGE_CHUNK.min(span.len()));
        for start in span.clone().step_by(MERGE_CHUNK) {
            let end = (start + MERGE_CHUNK).min(span.end);
            {
                let values: &[T] = &base[start..end];
                let copy =
                    |w: usize| Copies::part(&received, &copies, w, start..end).unwrap_or(values);
                sum.clear();
                sum.extend_from_slice(copy(0));
                for w in 1..self.copies.len() {
                    for ((x, &c), &b) in sum.iter_mut().zip(copy(w)).zip(values) {
                        *x = wrap::add(*x, wrap::sub(c, b));
                    }
                }
            }
            base[start..end].copy_from_slice(&sum);
            for c in copies.iter_mut().flatten() {
                c[start..end].copy_from_slice(&sum);
            }
        }
    }

    /// Ends the loop: applies the buffer ([`apply`](Self::apply)) a last time and stores
    /// the result in the array.
    pub fn finish(self) {
        // `self` by value: no view of it is alive. Merged already if no view was lent
        // since the last merge, or by `ssp(s)`'s rounds (whose copies are stale replicas).
        if self.dirty.load(Ordering::Relaxed) && !self.ran_ahead() {
            self.apply_parked();
        }
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner())[0];
        // In `hybrid` mode across processes the last merge left the value in `base` and in
        // every copy made; in one process only the replica holds it (a replica never made
        // is the value, unchanged).
        let replica = &self.copies[live];
        let value: &[T] = if self.hybrid && replica.made.is_completed() {
            replica.get(self.len)
        } else {
            self.base.get(self.len)
        };
        self.array.as_mut_slice().copy_from_slice(value);
    }
}

#[cfg(test)]
mod tests;
