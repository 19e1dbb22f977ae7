//! A worker's copy of a buffered array (`Slot`), made from the value when first needed,
//! and where a merge reads each worker's copy (`Copies`).

use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

/// One worker's copy, on cache lines of its own: two workers' copies side by side would
/// otherwise share the line at their boundary.
#[repr(align(128))]
pub(super) struct Slot<T> {
    /// Storage, reached only through `ptr`: room for the array's elements, which it holds
    /// once `made` (a worker's copy is made from the value when it is first needed).
    pub(super) _data: Vec<T>,
    pub(super) ptr: *mut T,
    /// Completed once the slot holds its elements. A copy never made stands for the value:
    /// no worker of this process lent it, so it differs from the value nowhere (the copies
    /// of other processes' workers, and of workers that ran nothing, are never touched;
    /// `ssp(s)`'s run-ahead makes its process's workers' copies at its first phase).
    pub(super) made: std::sync::Once,
    /// Taken by [`Buffered::with`]: one caller at a time per copy.
    pub(super) lock: Mutex<()>,
    /// The views of the copy alive: `shared::EXCLUSIVE` for one [`CopyView`] (at most one
    /// at a time, anywhere, and none beside it), else the number of [`SharedCopyView`]s.
    pub(super) lent: AtomicUsize,
    /// The thread inside [`Buffered::with`] on this copy ([`thread_token`]), or 0.
    pub(super) holder: AtomicUsize,
}

impl<T> Slot<T> {
    /// The copy's elements.
    #[allow(clippy::mut_from_ref)]
    pub(super) fn slice(&self, len: usize) -> &mut [T] {
        debug_assert!(self.made.is_completed(), "a copy read before it was made");
        // SAFETY: the slot is made (its `len` elements written: `make`, or `new`); only
        // called from `Buffered::apply*` and `finish` (every worker parked,
        // or `&mut Buffered`): nothing else reaches the copies meanwhile, each slot's slice
        // is made once per call and dropped before it returns; `ptr` holds `len` elements.
        // Under `ssp(s)` (`stale.rs`) the phases that run at once reach disjoint slots
        // (a worker its own copy, start and one slot of differences; a merge the value, the
        // other processes' workers' copies and one other slot), ordered by `exec/ahead.rs`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }
}

impl<T> Slot<T> {
    /// The copy's elements, to read (`ssp(s)`'s phases, where several threads may read one
    /// slot at once, `stale.rs`).
    pub(super) fn get(&self, len: usize) -> &[T] {
        debug_assert!(self.made.is_completed(), "a copy read before it was made");
        // SAFETY: as `slice`'s; a shared slice, for phases that only read the slot while
        // no other phase writes it (`exec/ahead.rs`'s order).
        unsafe { std::slice::from_raw_parts(self.ptr, len) }
    }
}

impl<T: Copy> Slot<T> {
    /// A slot holding `from`'s elements.
    pub(super) fn new(from: &[T]) -> Self {
        let slot = Slot::unmade(from.len());
        slot.made.call_once(|| {
            // SAFETY: the slot has room for `from.len()` elements (`unmade`), a new
            // allocation that `from` cannot overlap.
            unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), slot.ptr, from.len()) }
        });
        slot
    }

    /// A slot with room for `len` elements, none written yet: allocated, not touched, so
    /// its pages cost nothing until it is made.
    pub(super) fn unmade(len: usize) -> Self {
        let mut data = Vec::with_capacity(len);
        let ptr = data.as_mut_ptr();
        Slot {
            _data: data,
            ptr,
            made: std::sync::Once::new(),
            lock: Mutex::new(()),
            lent: AtomicUsize::new(0),
            holder: AtomicUsize::new(0),
        }
    }

    /// Makes the slot from `value`'s `len` elements unless it is made. The caller holds
    /// no reference into `value` or this slot, nor may another thread write `value`
    /// meanwhile: a view is made when lent (workers run, nobody merges: a merge takes every
    /// `with` lock and waits for every worker), and an `ssp(s)` call makes its workers'
    /// copies at its first phase, which every other phase waits for, before any merge. It
    /// never forms a reference to the slot, which another thread may be writing through its
    /// view when the slot is made already.
    pub(super) fn make(&self, value: &Slot<T>, len: usize) {
        self.made.call_once(|| {
            debug_assert!(value.made.is_completed());
            // SAFETY: both slots have room for `len` elements and are distinct
            // allocations; `value` holds its elements and nobody writes them meanwhile
            // (above); `call_once` lets one thread write this slot, once, and publishes
            // the elements to every thread that sees it completed.
            unsafe { std::ptr::copy_nonoverlapping(value.ptr, self.ptr, len) }
        });
    }
}

/// Another process's worker's copy at a merge: `(worker, first element, values)`.
pub(super) type Received<T> = (usize, usize, Vec<T>);

/// Where a merge reads each worker's copy.
pub(super) struct Copies;

/// The copies received for a merge, by worker: `(first element, values)`.
pub(super) type ByWorker<T> = Vec<Option<(usize, Vec<T>)>>;

impl Copies {
    /// The copies received for a merge over `n` workers, by worker.
    pub(super) fn by_worker<T>(received: Vec<Received<T>>, n: usize) -> ByWorker<T> {
        let mut by: ByWorker<T> = (0..n).map(|_| None).collect();
        for (w, at, v) in received {
            by[w] = Some((at, v));
        }
        by
    }

    /// Worker `w`'s copy over `span`: received from its process, or its slot here if
    /// made; `None` for a copy that is the value (received unchanged, or never made).
    pub(super) fn part<'c, T>(
        received: &'c ByWorker<T>,
        copies: &'c [Option<&mut [T]>],
        w: usize,
        span: std::ops::Range<usize>,
    ) -> Option<&'c [T]> {
        if let Some((at, v)) = &received[w] {
            // Empty: the copy changed nothing, it is the value (whatever its slot holds).
            return (!v.is_empty()).then(|| &v[span.start - at..span.end - at]);
        }
        copies[w].as_deref().map(|c| &c[span])
    }
}
