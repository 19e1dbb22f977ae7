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

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use crate::access::{ArrayMut, ArrayRef, offset};
use crate::array::{DistArray, index_panic_in};
use crate::plan::{TileWindow, WORKER_BITS, Window, stamp};

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
        SharedMut {
            ptr: array.data_mut_ptr(),
            shape: array.shape(),
            lent: std::sync::atomic::AtomicU64::new(0),
            call: std::sync::atomic::AtomicU64::new(0),
            array: std::sync::atomic::AtomicUsize::new(0),
            _borrow: PhantomData,
        }
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
                owned = Some((o.table, *base, stamp(o.call, *batch, *claimant, o.workers)));
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
        // window, or all of them when the window is the whole axis. Tiles have no rows;
        // owned elements are checked one by one.
        let (row_lo, row_hi) = if tiles.is_some() || owned.is_some() || lattice.is_some() {
            (0, 0)
        } else if lo == 0 && hi == self.shape[axis] {
            (0, self.shape[0])
        } else if axis == 0 {
            (lo, hi)
        } else {
            (0, 0)
        };
        ViewMut {
            ptr: self.ptr,
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
    pub fn exclusive<'p>(&'p self, parked: &'p crate::sync::Parked) -> &'p mut [T] {
        if !self.serves(parked.call()) {
            panic!(
                "strads: an array lent to one loop call was taken with another call's token \
                 (please report it)"
            );
        }
        let point = parked.point();
        if self.lent.swap(point, std::sync::atomic::Ordering::Relaxed) == point {
            panic!("strads: an array was lent twice at one application point (please report it)");
        }
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
        SharedMut {
            ptr: array.data_ptr_unversioned(),
            shape: array.shape(),
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

/// A reconnaissance call's ownership table: what [`Window::Owned`] windows check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Owners<'a> {
    pub(crate) table: &'a [std::sync::atomic::AtomicU64],
    /// The call's number among its plan's calls (part of every stamp).
    pub(crate) call: u64,
    /// Workers of the call.
    pub(crate) workers: usize,
}

/// Whether the worker stamped `stamp` may write (or read) element `e`: written elements
/// are claimed by exactly one worker per batch; an element no worker claimed in this batch
/// is only read.
#[inline(always)]
fn owns_element(table: &[std::sync::atomic::AtomicU64], e: usize, stamp: u64, write: bool) -> bool {
    let v = table[e].load(std::sync::atomic::Ordering::Relaxed);
    v == stamp || (!write && (v >> WORKER_BITS) != (stamp >> WORKER_BITS))
}

/// One worker's window on an array for one block.
pub struct ViewMut<'s, T, const N: usize> {
    ptr: *mut T,
    shape: [usize; N],
    row_len: usize,
    axis: usize,
    lo: usize,
    hi: usize,
    /// Rows `row_lo..row_hi` lie inside the window (and inside the shape).
    row_lo: usize,
    row_hi: usize,
    writable: bool,
    /// A wavefront tile's window instead of `axis`/`lo`/`hi`.
    tiles: Option<&'s TileWindow>,
    /// Reconnaissance ownership: `(table, base, stamp)` instead of `axis`/`lo`/`hi`.
    owned: Option<(&'s [std::sync::atomic::AtomicU64], usize, u64)>,
    /// A strided window: `lo..hi` are the dim's range, checked through the alignment.
    lattice: Option<strads_analysis::Align>,
    name: &'static str,
    _borrow: PhantomData<&'s mut [T]>,
}

impl<T, const N: usize> fmt::Debug for ViewMut<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ViewMut")
            .field("array", &self.name)
            .field("shape", &self.shape)
            .field("axis", &self.axis)
            .field("range", &(self.lo..self.hi))
            .field("writable", &self.writable)
            .finish()
    }
}

impl<T, const N: usize> ViewMut<'_, T, N> {
    #[cold]
    #[inline(never)]
    fn outside(&self, what: &dyn fmt::Debug) -> ! {
        if self.owned.is_some() {
            // Reconnaissance: the run strayed from the recording, which the loop's own code
            // can cause (control flow or subscripts that depend on values it writes).
            panic!(
                "strads: an iteration reached {what:?} of `{}`, which the recording pass of \
                 reconnaissance did not see it touch: control flow or a subscript depends on \
                 values of arrays the loop writes, through code strads cannot follow; compute \
                 them before the loop or from arrays the loop only reads",
                self.name
            );
        }
        panic!(
            "strads: an iteration reached {what:?} of `{}`, outside {} this worker owns; the \
             loop's plan does not cover this access (please report it)",
            self.name,
            match (self.tiles, self.lattice) {
                (Some(_), _) => "the tile".to_string(),
                (None, Some(_)) => format!(
                    "the indices of axis {} that iterations {}..{} of its dim reach",
                    self.axis, self.lo, self.hi
                ),
                (None, None) => format!("the range {}..{} of axis {}", self.lo, self.hi, self.axis),
            }
        )
    }

    #[cold]
    #[inline(never)]
    fn read_only(&self) -> ! {
        panic!(
            "strads: an iteration wrote `{}`, which the analysis found read-only in this loop \
             (please report it)",
            self.name
        )
    }

    #[inline(always)]
    fn owns(&self, i: usize) -> bool {
        i.wrapping_sub(self.lo) < self.hi.wrapping_sub(self.lo)
    }

    /// Whether row `i` lies whole inside the window (and the shape).
    #[inline(always)]
    fn whole_row(&self, i: usize) -> bool {
        i.wrapping_sub(self.row_lo) < self.row_hi.wrapping_sub(self.row_lo)
    }

    /// The element's offset when its row lies inside the window (`row_lo..row_hi`, inside
    /// the shape) and its other indices inside the shape: one comparison for the row
    /// instead of the window's general check. `None` sends the access to the full check.
    #[inline(always)]
    fn row_offset(&self, idx: &[usize; N]) -> Option<usize> {
        if !self.whole_row(idx[0]) {
            return None;
        }
        let mut inner = 0usize;
        for (&i, &n) in idx[1..].iter().zip(&self.shape[1..]) {
            if i >= n {
                return None;
            }
            inner = inner * n + i;
        }
        Some(idx[0] * self.row_len + inner)
    }

    #[inline(always)]
    fn checked_offset(&self, idx: &[usize; N], write: bool) -> usize {
        // Not for owned rows (reconnaissance), whose check is the table's: trying the row
        // shortcut first cost their split pieces 17% in `benches/split.rs`.
        if self.owned.is_none()
            && let Some(o) = self.row_offset(idx)
        {
            return o;
        }
        let Some(o) = offset(&self.shape, idx) else {
            index_panic_in(self.name, idx, &self.shape)
        };
        let ok = match (self.tiles, self.owned) {
            (Some(t), _) => {
                let f = t.values(idx);
                TileWindow::holds(&t.write, f) || (!write && TileWindow::holds(&t.read, f))
            }
            (None, Some((table, base, stamp))) => owns_element(table, base + idx[0], stamp, write),
            (None, None) => match self.lattice {
                Some(al) => al.holds(self.lo, self.hi, idx[self.axis], write),
                None => self.owns(idx[self.axis]),
            },
        };
        if !ok {
            self.outside(idx);
        }
        o
    }

    #[inline(always)]
    fn row_range(&self, i: usize, write: bool) -> usize {
        if !self.whole_row(i) {
            match self.owned {
                // Owned rows: ownership is per row (first index).
                Some((table, base, stamp)) if i < self.shape[0] => {
                    if owns_element(table, base + i, stamp, write) {
                        return i * self.row_len;
                    }
                    self.outside(&format_args!("row {i}"));
                }
                // A strided window along axis 0: the row's index, as for an element.
                _ if i < self.shape[0]
                    && self
                        .lattice
                        .is_some_and(|al| al.axis == 0 && al.holds(self.lo, self.hi, i, write)) =>
                {
                    return i * self.row_len;
                }
                _ => self.bad_row(i),
            }
        }
        i * self.row_len
    }

    #[cold]
    #[inline(never)]
    fn bad_row(&self, i: usize) -> ! {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        self.outside(&format_args!("row {i}"))
    }
}

impl<T, const N: usize> Index<[usize; N]> for ViewMut<'_, T, N> {
    type Output = T;
    #[inline(always)]
    fn index(&self, idx: [usize; N]) -> &T {
        let o = self.checked_offset(&idx, false);
        // SAFETY: `o` is inside the array (checked against the shape) and inside this
        // view's window, which no writer on another thread overlaps (module invariant).
        unsafe { &*self.ptr.add(o) }
    }
}

impl<T, const N: usize> IndexMut<[usize; N]> for ViewMut<'_, T, N> {
    #[inline(always)]
    fn index_mut(&mut self, idx: [usize; N]) -> &mut T {
        if !self.writable {
            self.read_only();
        }
        let o = self.checked_offset(&idx, true);
        // SAFETY: as for `index`; the window is this thread's alone because the view is
        // writable, and `&mut self` keeps this view from lending the element twice.
        unsafe { &mut *self.ptr.add(o) }
    }
}

impl<T> Index<usize> for ViewMut<'_, T, 1> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        &self[[i]]
    }
}

impl<T> IndexMut<usize> for ViewMut<'_, T, 1> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self[[i]]
    }
}

impl<T, const N: usize> ArrayRef<T, N> for ViewMut<'_, T, N> {
    #[inline(always)]
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    #[inline(always)]
    fn row(&self, i: usize) -> &[T] {
        let start = self.row_range(i, false);
        // SAFETY: the row lies inside the array (i < shape[0]) and inside this view's window
        // (checked by `row_range`), which no writer on another thread overlaps.
        unsafe { std::slice::from_raw_parts(self.ptr.add(start), self.row_len) }
    }
    #[inline(always)]
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx)?;
        Some(&self[idx])
    }
}

impl<T, const N: usize> ArrayMut<T, N> for ViewMut<'_, T, N> {
    #[inline(always)]
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        if !self.writable {
            self.read_only();
        }
        let start = self.row_range(i, true);
        // SAFETY: as for `row`; writable windows are exclusive to this thread, and
        // `&mut self` keeps this view from lending the row twice.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), self.row_len) }
    }
    #[inline(always)]
    fn get_mut(&mut self, idx: [usize; N]) -> Option<&mut T> {
        offset(&self.shape, &idx)?;
        Some(&mut self[idx])
    }
}

/// An array a loop only reads, as the parallel body reaches it: the array itself, with its
/// name for the message when an index falls outside it.
pub struct Named<'a, T, const N: usize> {
    data: &'a [T],
    shape: [usize; N],
    row_len: usize,
    name: &'static str,
}

impl<T, const N: usize> fmt::Debug for Named<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Named")
            .field("array", &self.name)
            .field("shape", &self.shape)
            .finish()
    }
}

impl<'a, T, const N: usize> Named<'a, T, N> {
    /// `array`, called `name` in the loop.
    pub fn new(array: &'a DistArray<T, N>, name: &'static str) -> Self {
        let shape = array.shape();
        Named {
            data: array.as_slice(),
            shape,
            row_len: shape[1..].iter().product(),
            name,
        }
    }
}

impl<T, const N: usize> Index<[usize; N]> for Named<'_, T, N> {
    type Output = T;
    #[inline(always)]
    fn index(&self, idx: [usize; N]) -> &T {
        match offset(&self.shape, &idx) {
            Some(o) => &self.data[o],
            None => index_panic_in(self.name, &idx, &self.shape),
        }
    }
}

impl<T> Index<usize> for Named<'_, T, 1> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        match self.data.get(i) {
            Some(x) => x,
            None => index_panic_in(self.name, &[i], &self.shape),
        }
    }
}

impl<T, const N: usize> ArrayRef<T, N> for Named<'_, T, N> {
    #[inline(always)]
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    #[inline(always)]
    fn row(&self, i: usize) -> &[T] {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        &self.data[i * self.row_len..(i + 1) * self.row_len]
    }
    #[inline(always)]
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx).map(|o| &self.data[o])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_allows_owned_rows_only() {
        let mut a = DistArray::from_fn([4, 2], |[i, j]| (i * 2 + j) as i32);
        let s = SharedMut::new(&mut a);
        {
            let win = Window::Range {
                axis: 0,
                lo: 1,
                hi: 3,
                writable: true,
            };

            let mut v = s.view("a", &win, None);
            v.row_mut(2)[1] += 100;
            v[[1, 0]] = -1;
            assert_eq!(v.row(2), &[4, 105]);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| v.row(3)[0]));
            assert!(r.is_err());
        }
        assert_eq!(a.as_slice(), &[0, 1, -1, 3, 4, 105, 6, 7]);
    }

    /// Elements reached by index take the row shortcut inside the window's rows and the
    /// full check elsewhere: every index inside the shape is accepted exactly when its row
    /// is in the window, and every other one panics with the same message as before.
    #[test]
    fn element_access_agrees_with_the_window() {
        let mut a = DistArray::from_fn([5, 3], |[i, j]| (i * 3 + j) as i32);
        let mut b = DistArray::from_fn([7], |[i]| i as i32);
        let sa = SharedMut::new(&mut a);
        let sb = SharedMut::new(&mut b);
        let win = Window::Range {
            axis: 0,
            lo: 1,
            hi: 3,
            writable: true,
        };
        {
            let (mut va, mut vb) = (sa.view("a", &win, None), sb.view("b", &win, None));
            let caught = |f: &mut dyn FnMut()| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                    .map_err(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
            };
            for i in 0..6 {
                for j in 0..4 {
                    let r = caught(&mut || va[[i, j]] += 100);
                    match (i, j) {
                        (1..3, 0..3) => assert!(r.is_ok(), "[{i}, {j}]"),
                        (_, 3) | (5, _) => assert!(
                            r.unwrap_err().contains("outside the array's shape"),
                            "[{i}, {j}]"
                        ),
                        _ => assert!(r.unwrap_err().contains("outside the range 1..3 of axis 0")),
                    }
                }
                let r = caught(&mut || vb[i] -= 10);
                match i {
                    1..3 => assert!(r.is_ok(), "b[{i}]"),
                    _ => assert!(r.unwrap_err().contains("outside the range 1..3 of axis 0")),
                }
            }
        }
        assert_eq!(
            a.as_slice(),
            &[0, 1, 2, 103, 104, 105, 106, 107, 108, 9, 10, 11, 12, 13, 14]
        );
        assert_eq!(b.as_slice(), &[0, -9, -8, 3, 4, 5, 6]);
    }

    /// A strided window: iterations 2..4 of `x[2k + 1] = f(x[2k], x[2k + 2])` write the
    /// odd indices 5 and 7 and read 4..=8; nothing else, rows included.
    #[test]
    fn lattice_window_allows_the_strided_indices_only() {
        let mut a = DistArray::from_fn([10, 2], |[i, j]| (i * 2 + j) as i32);
        let s = SharedMut::new(&mut a);
        let align = strads_analysis::Align {
            axis: 0,
            dim: 0,
            coeff: 2,
            constant: 0,
            writes: 0b010,
            touches: 0b111,
        };
        let win = Window::Lattice {
            align,
            lo: 2,
            hi: 4,
            writable: true,
        };
        let caught = |f: &mut dyn FnMut()| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
                .map_err(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
        };
        {
            let mut v = s.view("x", &win, None);
            for i in 0..10 {
                let read = caught(&mut || {
                    let _ = v[[i, 1]] + v.row(i)[0];
                });
                assert_eq!(read.is_ok(), (4..=8).contains(&i), "read row {i}");
                let write = caught(&mut || {
                    v[[i, 0]] += 100;
                    v.row_mut(i)[1] += 1000;
                });
                assert_eq!(write.is_ok(), i == 5 || i == 7, "write row {i}");
                if let Err(e) = write {
                    assert!(e.contains("iterations 2..4 of its dim reach"), "{e}");
                }
            }
        }
        assert_eq!(
            a.as_slice(),
            &[
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 110, 1011, 12, 13, 114, 1015, 16, 17, 18, 19
            ]
        );
    }

    #[test]
    #[should_panic(expected = "outside the range 0..2 of axis 1")]
    fn column_window_rejects_rows_and_foreign_columns() {
        let mut a = DistArray::<f32, 2>::zeros([3, 4]);
        let s = SharedMut::new(&mut a);
        let win = Window::Range {
            axis: 1,
            lo: 0,
            hi: 2,
            writable: false,
        };

        let v = s.view("a", &win, None);
        assert_eq!(v[[2, 1]], 0.0);
        let _ = v[[0, 3]];
    }

    #[test]
    #[should_panic(expected = "wrote `b`, which the analysis found read-only")]
    fn read_only_view_refuses_writes() {
        let mut a = DistArray::<f32, 1>::zeros([3]);
        let s = SharedMut::new(&mut a);
        let win = Window::All { writable: false };

        let mut v = s.view("b", &win, None);
        assert_eq!(v[1], 0.0);
        v[1] = 2.0;
    }

    #[test]
    fn disjoint_views_on_two_threads() {
        let mut a = DistArray::<u64, 2>::zeros([8, 16]);
        let s = SharedMut::new(&mut a);
        std::thread::scope(|sc| {
            for w in 0..2 {
                let s = &s;
                sc.spawn(move || {
                    let win = Window::Range {
                        axis: 0,
                        lo: w * 4,
                        hi: w * 4 + 4,
                        writable: true,
                    };

                    let mut v = s.view("a", &win, None);
                    for i in w * 4..w * 4 + 4 {
                        for x in v.row_mut(i) {
                            *x += i as u64;
                        }
                    }
                });
            }
        });
        assert!(a.iter().all(|([i, _], &x)| x == i as u64));
    }
}
