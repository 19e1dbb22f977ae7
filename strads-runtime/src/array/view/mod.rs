//! Workers' views of the arrays a parallel loop writes.
//!
//! A [`SharedMut`] turns the caller's `&mut DistArray` into a pointer every worker may use;
//! a [`ViewMut`] is one worker's window on it for one block: an axis and a range of that
//! axis the worker owns for the block (or read-only access to everything). Every access
//! checks the window, so a plan that is wrong shows up as a panic naming the array and the
//! index, never as a data race.
//!
//! The one invariant the executor keeps for these views to be sound: **while two views of
//! the same array are alive on different threads, no element one view may write is in
//! another live view's window**. Local partitions are disjoint by construction (ranges of
//! an axis, or for strided subscripts the exact indices each range of the dim reaches,
//! which [`strads_analysis::alignments`] proves disjoint from what any other range
//! reaches), a rotated partition is held by one worker at a time (it travels around the
//! ring by hand-off), wavefront tiles that may run at once are checked when the plan is
//! made, and read-only views exist only for arrays no view writes.

mod named;
mod window;

use std::fmt;
use std::marker::PhantomData;

use super::DistArray;
use super::away::Away;

pub use named::Named;
pub use window::ViewMut;
pub(crate) use window::{Owners, Window};

/// A `&mut DistArray` lent to the workers of one parallel loop call.
pub struct SharedMut<'a, T, const N: usize> {
    ptr: *mut T,
    shape: [usize; N],
    /// The application point ([`Parked`](crate::sync::Parked)) that last took the array
    /// through [`exclusive`](SharedMut::exclusive); 0 for none.
    lent: std::sync::atomic::AtomicU64,
    /// The loop call it serves once a block viewed it or a token took it (0 before).
    call: std::sync::atomic::AtomicU64,
    /// The array (index into the loop's spec) it serves once a block viewed it, plus 1.
    array: std::sync::atomic::AtomicUsize,
    /// The array's `(id, version)` once lent.
    key: (u64, u64),
    /// Its version before it was lent (the lending counts as a change).
    before: u64,
    /// Its parts held by other processes: brought home before a view or a pointer is
    /// given out, unless a call across processes claimed them (`claim`).
    away: &'a Away,
    _borrow: PhantomData<&'a mut DistArray<T, N>>,
}

// SAFETY: `SharedMut` only hands out `ViewMut`s, whose accesses are confined to ranges the
// executor gives to one thread at a time (see the module docs); sending or sharing the
// pointer among threads is then like sharing `&mut [T]` chunks, which needs `T: Send`.
unsafe impl<T: Send, const N: usize> Send for SharedMut<'_, T, N> {}
// SAFETY: as above; read-only views read concurrently only arrays no view writes, which
// needs `T: Sync`.
unsafe impl<T: Send + Sync, const N: usize> Sync for SharedMut<'_, T, N> {}

impl<'a, T, const N: usize> SharedMut<'a, T, N> {
    /// Lends `array`, which the loop writes, to the workers for as long as `'a`.
    pub fn new(array: &'a mut DistArray<T, N>) -> Self {
        let before = array.contents_key().1;
        let key = (array.id(), before + 1);
        let shape = array.shape();
        let (ptr, away) = array.lend();
        SharedMut {
            key,
            before,
            away,
            ptr,
            shape,
            lent: std::sync::atomic::AtomicU64::new(0),
            call: std::sync::atomic::AtomicU64::new(0),
            array: std::sync::atomic::AtomicUsize::new(0),
            _borrow: PhantomData,
        }
    }

    /// Brings parts held by other processes home (once), unless a call across processes
    /// claimed them: every way to the elements but the cluster's own passes here, and the
    /// cluster calls it for an array it sends from this process.
    #[inline]
    pub(crate) fn bring_home(&self) {
        if self.away.is_away() {
            self.away.bring_home();
        }
    }

    /// How the array was created in place, if it was (module `made`).
    pub(crate) fn recipe(&self) -> Option<crate::array::made::Recipe> {
        self.away.recipe()
    }

    /// Whether parts are held by other processes (not brought home yet).
    pub(crate) fn is_away(&self) -> bool {
        self.away.is_away()
    }

    /// A call across processes takes the parts from where they are (its plan knows):
    /// whether they were away.
    pub(crate) fn claim(&self) -> bool {
        self.away.claim()
    }

    /// Other processes now hold a copy of the array (known to them as `id`): they drop it
    /// when the array is dropped.
    pub(crate) fn shared(&self, id: u64) {
        self.away.forget.shared(id);
    }

    /// After a call across processes: parts stay on other ranks; `fetch` brings them home
    /// before anything else reads the array.
    pub(crate) fn leave(&self, fetch: crate::array::away::Fetch) {
        self.away.leave(fetch);
    }

    /// The elements' pointer and the shape (the cluster reads and writes regions of them
    /// between tasks; see `cluster::wire`).
    pub(crate) fn raw(&self) -> (*mut T, [usize; N]) {
        (self.ptr, self.shape)
    }

    /// The lent array's `(id, version)`.
    pub(crate) fn key(&self) -> (u64, u64) {
        self.key
    }

    /// The array's version before it was lent: equal to the `key` version of an earlier
    /// lending exactly when nothing changed the array since that call.
    pub(crate) fn version_before(&self) -> u64 {
        self.before
    }

    /// Binds the array to array `array` of loop call `call` (the first time), or checks it
    /// is bound to them: `false` when it serves another array or call.
    pub(crate) fn lend_to(&self, call: u64, array: usize) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.serves(call)
            && match self.array.compare_exchange(0, array + 1, Relaxed, Relaxed) {
                Ok(_) => true,
                Err(a) => a == array + 1,
            }
    }

    /// Binds the array to loop call `call`, or checks it is bound to it.
    fn serves(&self, call: u64) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        match self.call.compare_exchange(0, call, Relaxed, Relaxed) {
            Ok(_) => true,
            Err(c) => c == call,
        }
    }

    /// A view limited to `window`. The executor is responsible for the module's invariant.
    pub(crate) fn view<'s>(
        &'s self,
        name: &'static str,
        window: &'s Window,
        owners: Option<Owners<'s>>,
    ) -> ViewMut<'s, T, N> {
        self.bring_home();
        let mut owned = None;
        let mut lattice = None;
        let (axis, lo, hi, writable, tiles) = match window {
            Window::All { writable } => (0, 0, self.shape[0], *writable, None),
            Window::Range {
                axis,
                lo,
                hi,
                writable,
            } => (*axis, *lo, (*hi).min(self.shape[*axis]), *writable, None),
            Window::Tiles(t) => (0, 0, 0, true, Some(&**t)),
            Window::Owned {
                base,
                batch,
                claimant,
            } => {
                let o = owners.expect("ownership windows come with their table");
                let stamp = crate::plan::stamp(o.call, *batch, *claimant, o.workers);
                owned = Some((o.table, *base, (stamp, o.strict)));
                (0, 0, 0, true, None)
            }
            Window::Lattice {
                align,
                lo,
                hi,
                writable,
            } => {
                lattice = Some(*align);
                (align.axis, *lo, *hi, *writable, None)
            }
        };
        // A row spans every index of the other axes: rows are reachable through axis 0's
        // window, or all of them when the window is the whole axis; a tile's, through its
        // first write region when its forms follow axis 0 alone; owned elements are checked
        // one by one.
        let (row_lo, row_hi) = if let Some(t) = tiles {
            t.whole_rows(self.shape[0])
        } else if owned.is_some() || lattice.is_some() {
            (0, 0)
        } else if lo == 0 && hi == self.shape[axis] {
            (0, self.shape[0])
        } else if axis == 0 {
            (lo, hi)
        } else {
            (0, 0)
        };
        // An unskewed tile's first write region, as index ranges (clipped at 0).
        let tile_box = tiles.and_then(|t| {
            let axes = t.unit?;
            let r = t.write.first()?;
            let range = |(lo, hi): (i64, i64)| {
                let lo = lo.max(0) as usize;
                (lo, (hi.max(0) as usize).saturating_sub(lo))
            };
            Some((axes, [range(r[0]), range(r[1])]))
        });
        ViewMut {
            ptr: self.ptr,
            tile_box,
            shape: self.shape,
            row_len: self.shape[1..].iter().product(),
            axis,
            lo,
            hi,
            row_lo,
            row_hi,
            writable,
            tiles,
            owned,
            lattice,
            name,
            _borrow: PhantomData,
        }
    }
}

impl<'a, T, const N: usize> SharedMut<'a, T, N> {
    /// The whole array, mutable, while every worker of the call is parked at a point
    /// where buffers are applied (the [`Parked`](crate::sync::Parked) token proves it):
    /// how an apply function updates arrays the workers read.
    ///
    /// # Panics
    /// When the array was already taken with the same token.
    #[allow(clippy::mut_from_ref)] // exclusive by the token, checked below
    pub fn exclusive<'p>(&'p self, parked: &'p crate::sync::Parked<'_>) -> &'p mut [T] {
        if !self.serves(parked.call()) {
            panic!(
                "strads: an array lent to one loop call was taken with another call's token \
                 (please report it)"
            );
        }
        // Only a point that parks every worker lends the whole array (`ssp(s)`'s phases
        // run beside working workers).
        assert!(
            parked.phase() == crate::sync::Phase::Merge,
            "strads: an array was taken at a point that does not park every worker (please \
             report it)"
        );
        let point = parked.point();
        if self.lent.swap(point, std::sync::atomic::Ordering::Relaxed) == point {
            panic!("strads: an array was lent twice at one application point (please report it)");
        }
        self.bring_home();
        let len = self.shape.iter().product();
        // SAFETY: a `Parked` exists only while every worker of its call waits at a
        // barrier (or, in a serial replay, between iterations), stays on its thread, and
        // this array serves that call alone (checked above: its views are that call's): no view of this array is
        // being read or written and no reference from one is alive, since views hand out
        // references only for the length of an iteration. Tokens are unique per
        // application point and the check above lends the array once per token, so no
        // two slices alias. The slice lives no longer than the token, which the runtime
        // drops before releasing the workers; `ptr` is valid for `len` elements for `'a`
        // (see `new`).
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len) }
    }
}

impl<'a, T, const N: usize> SharedMut<'a, T, N> {
    /// Lends `array`, which the loop only reads (its views are read-only), keeping its
    /// version: plans made from its contents stay valid.
    pub fn new_unwritten(array: &'a mut DistArray<T, N>) -> Self {
        let key = array.contents_key();
        let shape = array.shape();
        let (ptr, away) = array.lend_unversioned();
        SharedMut {
            key,
            before: key.1,
            away,
            ptr,
            shape,
            lent: std::sync::atomic::AtomicU64::new(0),
            call: std::sync::atomic::AtomicU64::new(0),
            array: std::sync::atomic::AtomicUsize::new(0),
            _borrow: PhantomData,
        }
    }

    /// The array's shape.
    pub(crate) fn shape(&self) -> [usize; N] {
        self.shape
    }

    /// The array's first element, for recording views.
    pub(crate) fn ptr(&self) -> *const T {
        self.bring_home();
        self.ptr
    }
}

impl<T, const N: usize> fmt::Debug for SharedMut<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedMut")
            .field("shape", &self.shape)
            .finish()
    }
}
