//! The survey pass of reconnaissance: the loop body runs once over every iteration through views that note
//! which elements each iteration touches. Arrays the loop only reads give their real
//! values, since those are what indirect subscripts are computed from. Arrays it writes
//! keep the iteration's own writes in an overlay, a copy of each row it wrote, dropped when
//! the iteration ends: so `assign[i] = c; counts[assign[i]] += 1` records `counts[c]`, as
//! the real run touches. Their other elements read as stand-ins (`T::default()`), except
//! in arrays whose values the macro found steering subscripts or conditions
//! (`ArraySpec::steers`), which read as their real values (`counts[assign[i]] -= 1` before
//! the reassignment, as in Gibbs sampling); the plan is then keyed by those values. What
//! other iterations write during the run is not known before it, and the real run checks
//! every access against the survey, so a subscript computed from such a value stops
//! the run with a panic instead of racing. Nothing is mutated.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use strads_analysis::Accesses;

use crate::array::access::{ArrayMut, ArrayRef, offset};
use crate::array::index_panic_in;
use crate::array::view::SharedMut;
use crate::exec::LoopState;
use crate::space::Space;

/// One survey pass over a loop's iterations, as the generated code sees it.
pub struct Survey<'a, S: Space> {
    pub(crate) state: &'static LoopState,
    pub(crate) space: &'a S,
    pub(crate) acc: RefCell<Accesses>,
    /// Global element id of element 0 of each array (arrays the loop may write).
    pub(crate) bases: Vec<u64>,
    /// The first read of a steering array's row that an earlier iteration wrote: `(array,
    /// row)`. The value the run reads there is unknown before the run.
    pub(crate) stale: Cell<Option<(usize, usize)>>,
    /// Iterations surveyed: the first `upto` (a sample), or all.
    pub(crate) upto: usize,
}

impl<S: Space> fmt::Debug for Survey<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Survey")
            .field("loop", &self.state.spec().name)
            .field("recorded", &self.acc.borrow().len())
            .finish()
    }
}

impl<'a, S: Space> Survey<'a, S> {
    /// A survey view of array `array` (an index into the loop's spec).
    pub fn view_mut<'s, T: Default + Clone, const N: usize>(
        &'s self,
        shared: &'s SharedMut<'_, T, N>,
        array: usize,
    ) -> SurveyView<'s, T, N> {
        let shape = shared.shape();
        let row_len: usize = shape[1..].iter().product();
        SurveyView {
            name: self.state.spec().arrays[array].name.as_ref(),
            acc: &self.acc,
            base: self.bases[array],
            shape,
            row_len,
            written: self.state.spec().writes(array),
            steers: self.state.spec().arrays[array].steers,
            real: shared.ptr(),
            stand_in: T::default(),
            row_buf: vec![T::default(); row_len],
            overlay: Overlay::default(),
            written_before: std::collections::HashSet::new(),
            array,
            stale: &self.stale,
            _borrow: PhantomData,
        }
    }

    /// Runs `f` over every iteration in serial order (or the first ones, when the survey
    /// takes a sample), noting each one's touches.
    pub fn for_each<F: FnMut(S::Item<'a>)>(&self, mut f: F) {
        for id in 0..self.space.len().min(self.upto) {
            f(self.space.item(id));
            self.acc.borrow_mut().end_iteration();
        }
    }
}

/// A survey view of one array.
pub struct SurveyView<'s, T, const N: usize> {
    /// The array's name in the loop, for messages.
    name: &'s str,
    acc: &'s RefCell<Accesses>,
    base: u64,
    shape: [usize; N],
    row_len: usize,
    /// The loop writes this array: reads give the iteration's own writes, else stand-ins
    /// (or the real values, when it `steers`).
    written: bool,
    /// Its values may decide what the body touches: reads the iteration has not written
    /// give the real values (the plan is keyed by them).
    steers: bool,
    real: *const T,
    stand_in: T,
    /// A row of stand-ins, for rows of a written array this iteration has not written.
    row_buf: Vec<T>,
    overlay: Overlay<T>,
    /// Of a steering array: rows earlier iterations wrote (but those of the iteration the
    /// overlay still holds).
    written_before: std::collections::HashSet<usize>,
    array: usize,
    stale: &'s Cell<Option<(usize, usize)>>,
    _borrow: PhantomData<&'s [T]>,
}

/// The rows of a written array that the current iteration wrote, with its writes.
struct Overlay<T> {
    /// The iteration the rows belong to (the number of iterations recorded before it).
    iteration: usize,
    /// Row index → slot in `rows`, for the current iteration only.
    slots: HashMap<usize, usize>,
    /// Row copies; kept between iterations to reuse their allocations.
    rows: Vec<Vec<T>>,
}

impl<T> Default for Overlay<T> {
    fn default() -> Self {
        Overlay {
            iteration: 0,
            slots: HashMap::new(),
            rows: Vec::new(),
        }
    }
}

impl<T, const N: usize> fmt::Debug for SurveyView<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SurveyView")
            .field("shape", &self.shape)
            .field("written", &self.written)
            .finish()
    }
}

impl<T: Default + Clone, const N: usize> SurveyView<'_, T, N> {
    fn at(&self, idx: &[usize; N]) -> usize {
        crate::array::offset_in(self.name, &self.shape, idx)
    }

    /// Records that the iteration touches row `row` (the first index: the element itself
    /// in one dim). Ownership, and so conflicts, are tracked per row.
    fn touch(&self, row: usize, write: bool) {
        self.acc.borrow_mut().touch(self.base + row as u64, write);
    }

    /// The current iteration: how many iterations were recorded before it.
    fn iteration(&self) -> usize {
        self.acc.borrow().len()
    }

    /// Row `row` as this iteration has written it, if it has.
    fn written_row(&self, row: usize) -> Option<&[T]> {
        if self.overlay.iteration != self.iteration() {
            return None;
        }
        self.overlay
            .slots
            .get(&row)
            .map(|&k| self.overlay.rows[k].as_slice())
    }

    /// A steering array's row `row` read with its real value: stale if an earlier
    /// iteration wrote it (the run may read that iteration's value instead).
    fn check_real_read(&self, row: usize) {
        let earlier = self.written_before.contains(&row)
            || (self.overlay.iteration != self.iteration()
                && self.overlay.slots.contains_key(&row));
        if earlier && self.stale.get().is_none() {
            self.stale.set(Some((self.array, row)));
        }
    }

    /// Row `row` of a written array for this iteration to write: its copy in the overlay,
    /// made from stand-ins (or the real row, for a steering array) on the iteration's first
    /// write to it.
    fn row_to_write(&mut self, row: usize) -> &mut [T] {
        let now = self.iteration();
        let o = &mut self.overlay;
        if o.iteration != now {
            o.iteration = now;
            if self.steers {
                self.written_before.extend(o.slots.keys().copied());
            }
            o.slots.clear();
        }
        let next = o.slots.len();
        let k = *o.slots.entry(row).or_insert(next);
        if k == o.rows.len() {
            o.rows.push(Vec::with_capacity(self.row_len));
        }
        if k == next {
            let r = &mut o.rows[k];
            r.clear();
            if self.steers {
                if self.written_before.contains(&row) && self.stale.get().is_none() {
                    self.stale.set(Some((self.array, row)));
                }
                // SAFETY: as for `real_at`: the row lies inside the array (checked by the
                // callers against the shape) and nothing writes during the survey.
                let real = unsafe {
                    std::slice::from_raw_parts(self.real.add(row * self.row_len), self.row_len)
                };
                r.extend_from_slice(real);
            } else {
                r.resize(self.row_len, self.stand_in.clone());
            }
        }
        &mut o.rows[k]
    }

    fn real_at(&self, off: usize) -> &T {
        // SAFETY: `off` is inside the array (checked against the shape); during the survey
        // nothing writes any array: the run is single-threaded, the arrays are lent to the
        // loop, and this view hands out stand-ins instead of the real elements of arrays the
        // loop writes.
        unsafe { &*self.real.add(off) }
    }
}

impl<T: Default + Clone, const N: usize> Index<[usize; N]> for SurveyView<'_, T, N> {
    type Output = T;
    fn index(&self, idx: [usize; N]) -> &T {
        let o = self.at(&idx);
        self.touch(idx[0], false);
        if self.written {
            match self.written_row(idx[0]) {
                Some(row) => &row[o - idx[0] * self.row_len],
                None if self.steers => {
                    self.check_real_read(idx[0]);
                    self.real_at(o)
                }
                None => &self.stand_in,
            }
        } else {
            self.real_at(o)
        }
    }
}

impl<T: Default + Clone, const N: usize> IndexMut<[usize; N]> for SurveyView<'_, T, N> {
    fn index_mut(&mut self, idx: [usize; N]) -> &mut T {
        let o = self.at(&idx);
        self.touch(idx[0], true);
        let in_row = o - idx[0] * self.row_len;
        &mut self.row_to_write(idx[0])[in_row]
    }
}

impl<T: Default + Clone> Index<usize> for SurveyView<'_, T, 1> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self[[i]]
    }
}

impl<T: Default + Clone> IndexMut<usize> for SurveyView<'_, T, 1> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self[[i]]
    }
}

impl<T: Default + Clone, const N: usize> ArrayRef<T, N> for SurveyView<'_, T, N> {
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    fn row(&self, i: usize) -> &[T] {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        self.touch(i, false);
        if self.written && !self.steers {
            self.written_row(i).unwrap_or(&self.row_buf)
        } else if let Some(row) = self.written_row(i) {
            row
        } else {
            if self.steers {
                self.check_real_read(i);
            }
            // SAFETY: as for `real_at`: the row lies inside the array and nothing writes
            // during the survey.
            unsafe { std::slice::from_raw_parts(self.real.add(i * self.row_len), self.row_len) }
        }
    }
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx)?;
        Some(&self[idx])
    }
}

impl<T: Default + Clone, const N: usize> ArrayMut<T, N> for SurveyView<'_, T, N> {
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        self.touch(i, true);
        self.row_to_write(i)
    }
    fn get_mut(&mut self, idx: [usize; N]) -> Option<&mut T> {
        offset(&self.shape, &idx)?;
        Some(&mut self[idx])
    }
}
