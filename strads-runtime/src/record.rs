//! Recording mode: the loop body runs once over every iteration through views that note
//! which elements each iteration touches. Arrays the loop writes give stand-in values
//! (`T::default()`) and swallow writes; arrays it only reads give their real values, since
//! those are what indirect subscripts are computed from. Nothing is mutated.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use strads_analysis::Accesses;

use crate::access::{ArrayMut, ArrayRef, offset};
use crate::array::index_panic_in;
use crate::exec::LoopState;
use crate::space::Space;
use crate::view::SharedMut;

/// One recording pass over a loop's iterations, as the generated code sees it.
pub struct Recording<'a, S: Space> {
    pub(crate) state: &'static LoopState,
    pub(crate) space: &'a S,
    pub(crate) acc: RefCell<Accesses>,
    /// Global element id of element 0 of each array (arrays the loop may write).
    pub(crate) bases: Vec<u64>,
}

impl<S: Space> fmt::Debug for Recording<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("loop", &self.state.spec().name)
            .field("recorded", &self.acc.borrow().len())
            .finish()
    }
}

impl<'a, S: Space> Recording<'a, S> {
    /// A recording view of array `array` (an index into the loop's spec).
    pub fn view_mut<'s, T: Default + Clone, const N: usize>(
        &'s self,
        shared: &'s SharedMut<'_, T, N>,
        array: usize,
    ) -> RecordView<'s, T, N> {
        let shape = shared.shape();
        let row_len: usize = shape[1..].iter().product();
        RecordView {
            name: self.state.spec().arrays[array].name.as_ref(),
            acc: &self.acc,
            base: self.bases[array],
            shape,
            row_len,
            written: self.state.spec().writes(array),
            real: shared.ptr(),
            stand_in: T::default(),
            scratch: T::default(),
            row_buf: vec![T::default(); row_len],
            _borrow: PhantomData,
        }
    }

    /// Runs `f` over every iteration in serial order, recording each one's touches.
    pub fn for_each<F: FnMut(S::Item<'a>)>(&self, mut f: F) {
        for id in 0..self.space.len() {
            f(self.space.item(id));
            self.acc.borrow_mut().end_iteration();
        }
    }
}

/// A recording view of one array.
pub struct RecordView<'s, T, const N: usize> {
    /// The array's name in the loop, for messages.
    name: &'s str,
    acc: &'s RefCell<Accesses>,
    base: u64,
    shape: [usize; N],
    row_len: usize,
    /// The loop writes this array: reads give stand-ins.
    written: bool,
    real: *const T,
    stand_in: T,
    scratch: T,
    row_buf: Vec<T>,
    _borrow: PhantomData<&'s [T]>,
}

impl<T, const N: usize> fmt::Debug for RecordView<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordView")
            .field("shape", &self.shape)
            .field("written", &self.written)
            .finish()
    }
}

impl<T: Default + Clone, const N: usize> RecordView<'_, T, N> {
    fn at(&self, idx: &[usize; N]) -> usize {
        match offset(&self.shape, idx) {
            Some(o) => o,
            None => index_panic_in(self.name, idx, &self.shape),
        }
    }

    /// Records that the iteration touches row `row` (the first index: the element itself
    /// in one dim). Ownership, and so conflicts, are tracked per row.
    fn touch(&self, row: usize, write: bool) {
        self.acc.borrow_mut().touch(self.base + row as u64, write);
    }

    fn real_at(&self, off: usize) -> &T {
        // SAFETY: `off` is inside the array (checked against the shape); while recording
        // nothing writes any array: the run is single-threaded, the arrays are lent to the
        // loop, and this view hands out stand-ins instead of the real elements of arrays the
        // loop writes.
        unsafe { &*self.real.add(off) }
    }
}

impl<T: Default + Clone, const N: usize> Index<[usize; N]> for RecordView<'_, T, N> {
    type Output = T;
    fn index(&self, idx: [usize; N]) -> &T {
        let o = self.at(&idx);
        self.touch(idx[0], false);
        if self.written {
            &self.stand_in
        } else {
            self.real_at(o)
        }
    }
}

impl<T: Default + Clone, const N: usize> IndexMut<[usize; N]> for RecordView<'_, T, N> {
    fn index_mut(&mut self, idx: [usize; N]) -> &mut T {
        self.at(&idx);
        self.touch(idx[0], true);
        self.scratch = self.stand_in.clone();
        &mut self.scratch
    }
}

impl<T: Default + Clone> Index<usize> for RecordView<'_, T, 1> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self[[i]]
    }
}

impl<T: Default + Clone> IndexMut<usize> for RecordView<'_, T, 1> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self[[i]]
    }
}

impl<T: Default + Clone, const N: usize> ArrayRef<T, N> for RecordView<'_, T, N> {
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    fn row(&self, i: usize) -> &[T] {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        self.touch(i, false);
        if self.written {
            &self.row_buf
        } else {
            // SAFETY: as for `real_at`: the row lies inside the array and nothing writes
            // during recording.
            unsafe { std::slice::from_raw_parts(self.real.add(i * self.row_len), self.row_len) }
        }
    }
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx)?;
        Some(&self[idx])
    }
}

impl<T: Default + Clone, const N: usize> ArrayMut<T, N> for RecordView<'_, T, N> {
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        self.touch(i, true);
        for x in &mut self.row_buf {
            *x = self.stand_in.clone();
        }
        &mut self.row_buf
    }
    fn get_mut(&mut self, idx: [usize; N]) -> Option<&mut T> {
        offset(&self.shape, &idx)?;
        Some(&mut self[idx])
    }
}
