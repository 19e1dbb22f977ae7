//! [`ViewMut`]: one worker's window on an array for one block, and the windows
//! (`plan::Window`, `plan::TileWindow`, ownership stamps) its accesses are checked against.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use crate::array::access::{ArrayMut, ArrayRef, offset};
use crate::array::index_panic_in;

pub(crate) use crate::plan::{READERS, TileWindow, WORKER_BITS, Window};

/// A reconnaissance call's ownership table: what [`Window::Owned`] windows check.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Owners<'a> {
    pub(crate) table: &'a [std::sync::atomic::AtomicU64],
    /// The call's number among its plan's calls (part of every stamp).
    pub(crate) call: u64,
    /// Workers of the call.
    pub(crate) workers: usize,
    /// Reads need the claim too (a call across processes: a row another rank claims is
    /// not current here, so reading it would read stale values).
    pub(crate) strict: bool,
}

/// Whether the worker stamped `stamp` may write (or read) element `e`: written elements
/// are claimed by exactly one worker per batch; an element no worker claimed in this batch
/// is only read: those the plan lists as read carry the readers' stamp, and with `strict`
/// reads (a call across processes) only those and the worker's own may be read.
#[inline(always)]
fn owns_element(
    table: &[std::sync::atomic::AtomicU64],
    e: usize,
    (stamp, strict): (u64, bool),
    write: bool,
) -> bool {
    let v = table[e].load(std::sync::atomic::Ordering::Relaxed);
    v == stamp
        || (!write
            && (v == stamp | READERS || (!strict && (v >> WORKER_BITS) != (stamp >> WORKER_BITS))))
}

/// An unskewed tile's own box: its two axes, and `(first index, length)` along each.
pub(super) type TileBox = ([usize; 2], [(usize, usize); 2]);

/// One worker's window on an array for one block.
pub struct ViewMut<'s, T, const N: usize> {
    pub(super) ptr: *mut T,
    pub(super) shape: [usize; N],
    pub(super) row_len: usize,
    pub(super) axis: usize,
    pub(super) lo: usize,
    pub(super) hi: usize,
    /// Rows `row_lo..row_hi` lie inside the window (and inside the shape).
    pub(super) row_lo: usize,
    pub(super) row_hi: usize,
    pub(super) writable: bool,
    /// A wavefront tile's window instead of `axis`/`lo`/`hi`.
    pub(super) tiles: Option<&'s TileWindow>,
    /// An unskewed tile's own box, `(axes, [lo, len])` for each of its two axes: an index
    /// inside it (and inside the shape) is inside the window, checked with two
    /// comparisons instead of the window's regions.
    pub(super) tile_box: Option<TileBox>,
    /// Reconnaissance ownership: `(table, base, (stamp, strict))` instead of
    /// `axis`/`lo`/`hi`.
    pub(super) owned: Option<(&'s [std::sync::atomic::AtomicU64], usize, (u64, bool))>,
    /// A strided window: `lo..hi` are the dim's range, checked through the alignment.
    pub(super) lattice: Option<strads_analysis::Align>,
    pub(super) name: &'static str,
    pub(super) _borrow: PhantomData<&'s mut [T]>,
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
        if let Some(([a, b], [(alo, alen), (blo, blen)])) = self.tile_box
            && idx[a].wrapping_sub(alo) < alen
            && idx[b].wrapping_sub(blo) < blen
            && let Some(o) = offset(&self.shape, idx)
        {
            return o;
        }
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
                // A tile's row: every element of it inside one region.
                _ if i < self.shape[0]
                    && self
                        .tiles
                        .is_some_and(|t| t.holds_row(i, &self.shape[1..], write)) =>
                {
                    return i * self.row_len;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::DistArray;
    use crate::array::view::SharedMut;

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

    /// A wavefront tile: elements of its own box are read and written (the fast check),
    /// its read regions only read, anything else refused.
    #[test]
    fn tiles_admit_their_box_and_read_regions_only() {
        let mut a = DistArray::from_fn([6, 6], |[i, j]| (i * 6 + j) as i32);
        let s = SharedMut::new(&mut a);
        let win = Window::Tiles(std::sync::Arc::new(TileWindow {
            forms: [vec![1, 0], vec![0, 1]],
            unit: Some([0, 1]),
            write: vec![[(2, 4), (1, 3)]],
            read: vec![[(1, 2), (1, 3)]],
        }));
        let mut v = s.view("a", &win, None);
        assert!(v.tile_box.is_some());
        v[[2, 1]] += 100;
        v[[3, 2]] = v[[1, 2]];
        assert_eq!(v[[2, 1]], 113);
        let fails = |f: &mut dyn FnMut()| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err()
        };
        assert!(fails(&mut || v[[1, 1]] = 0), "a write in a read region");
        assert!(fails(&mut || _ = v[[4, 1]]), "below the box");
        assert!(fails(&mut || _ = v[[2, 3]]), "right of the box");
        assert!(fails(&mut || _ = v[[2, 6]]), "outside the shape");
        assert_eq!(a[[3, 2]], 8);
        assert_eq!(a[[2, 1]], 113);
    }

    /// Reconnaissance rows: a worker writes and reads the rows its claimant holds, and
    /// reads the rows stamped for readers; rows nobody claimed in the batch it may read
    /// only on threads, not across processes (`strict`), where they may be stale.
    #[test]
    fn strict_reads_need_a_claim() {
        use crate::plan::{Claimant, stamp};
        use std::sync::atomic::AtomicU64;
        let mut a = DistArray::from_fn([4], |[i]| i as i32);
        let s = SharedMut::new(&mut a);
        let table: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
        let (call, batch, workers) = (1, 0, 2);
        let mark = |row: usize, c: Claimant| {
            table[row].store(
                stamp(call, batch, c, workers),
                std::sync::atomic::Ordering::Relaxed,
            )
        };
        mark(0, Claimant::Worker(0));
        mark(1, Claimant::Worker(1));
        mark(2, Claimant::Readers(1));
        // Row 3: nobody's in this batch.
        let win = Window::Owned {
            base: 0,
            batch,
            claimant: Claimant::Worker(0),
        };
        let caught = |f: &mut dyn FnMut() -> i32| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_ok()
        };
        for strict in [false, true] {
            let owners = Owners {
                table: &table,
                call,
                workers,
                strict,
            };
            let mut v = s.view("a", &win, Some(owners));
            assert!(caught(&mut || v[[0]]), "its own row");
            assert!(caught(&mut || {
                v[[0]] += 1;
                0
            }));
            assert!(!caught(&mut || v[[1]]), "another worker's row");
            assert!(caught(&mut || v[[2]]), "a row stamped for readers");
            assert!(!caught(&mut || {
                v[[2]] += 1;
                0
            }));
            assert_eq!(
                caught(&mut || v[[3]]),
                !strict,
                "an unclaimed row, strict: {strict}"
            );
        }
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
