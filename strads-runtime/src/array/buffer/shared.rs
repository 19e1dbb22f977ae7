//! [`SharedCopyView`]: `sync = "hybrid"`, the threads of one process updating one replica
//! of an array without locks (Hogwild, STRADS-AP's hybrid mode).
//!
//! Threads writing the same `f32`s at once is a data race, which safe Rust never allows.
//! So the replica's elements are only reached by relaxed atomic loads and stores, and the
//! loop body works on a private copy of each row it touches:
//!
//! - an iteration's first access to a row (`a[[i, j]]`, `a.row(i)`, `a.row_mut(i)`) copies
//!   it from the replica into the view's scratch space; the iteration reads and writes that
//!   copy, so it sees a consistent row and its own writes;
//! - at the end of the iteration ([`SharedCopyView::commit`], called by the generated code
//!   after every iteration) each element the iteration changed becomes the replica's
//!   current value plus the iteration's change. When no other thread wrote the element
//!   meanwhile, that is exactly the iteration's value (one thread gives the serial loop's
//!   bits); when one did, both changes count, except when the two commits interleave
//!   (Hogwild's lost update).
//!
//! Results depend on the threads' timing: the mode is not reproducible, and says so.

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Add, Index, IndexMut, Sub};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::array::access::{ArrayMut, ArrayRef, offset};
use crate::array::index_panic_in;

mod sealed {
    pub trait Sealed {}
}

/// Elements a `sync = "hybrid"` replica can hold: read and written as relaxed atomics of
/// the same size and alignment.
#[diagnostic::on_unimplemented(
    message = "`sync = \"hybrid\"` shares the replica of an array of `{Self}` between \
               threads, and `{Self}` has no atomic counterpart",
    label = "an array of `{Self}` written by a `sync = \"hybrid\"` loop",
    note = "hybrid loops write arrays of `f32`, `f64`, `i32`, `u32`, `i64` or `u64`"
)]
pub trait Relaxed:
    sealed::Sealed + Copy + Add<Output = Self> + Sub<Output = Self> + Send + Sync + 'static
{
    /// Reads the element at `p` with a relaxed atomic load.
    ///
    /// # Safety
    /// `p` is valid for reads and aligned, and every access to it that may run at the same
    /// time is atomic.
    unsafe fn load(p: *const Self) -> Self;
    /// Writes `v` at `p` with a relaxed atomic store.
    ///
    /// # Safety
    /// As for [`load`](Self::load), `p` valid for writes.
    unsafe fn store(p: *mut Self, v: Self);
    /// Whether `a` and `b` have the same bits.
    fn same(a: Self, b: Self) -> bool;
}

macro_rules! relaxed {
    ($($t:ty => $atomic:ty, $bits:ty, $to:expr, $from:expr;)*) => {$(
        // The atomic type has the element's size and alignment, so a pointer to one
        // element is a pointer to one atomic.
        const _: () = assert!(
            std::mem::size_of::<$t>() == std::mem::size_of::<$atomic>()
                && std::mem::align_of::<$t>() == std::mem::align_of::<$atomic>()
        );
        impl sealed::Sealed for $t {}
        impl Relaxed for $t {
            #[inline(always)]
            unsafe fn load(p: *const Self) -> Self {
                // SAFETY: the caller's promise: `p` valid and aligned (the assertion above:
                // the atomic's alignment), every racing access atomic.
                let a = unsafe { <$atomic>::from_ptr(p as *mut $bits) };
                ($from)(a.load(Ordering::Relaxed))
            }
            #[inline(always)]
            unsafe fn store(p: *mut Self, v: Self) {
                // SAFETY: as for `load`.
                let a = unsafe { <$atomic>::from_ptr(p as *mut $bits) };
                a.store(($to)(v), Ordering::Relaxed)
            }
            #[inline(always)]
            fn same(a: Self, b: Self) -> bool {
                ($to)(a) == ($to)(b)
            }
        }
    )*};
}

relaxed! {
    f32 => AtomicU32, u32, f32::to_bits, f32::from_bits;
    u32 => AtomicU32, u32, |v: u32| v, |b: u32| b;
    i32 => AtomicU32, u32, |v: i32| v as u32, |b: u32| b as i32;
}

// 64-bit elements where `AtomicU64` has their alignment (not on 32-bit x86, where `u64`
// and `f64` align to 4 bytes).
#[cfg(target_pointer_width = "64")]
relaxed! {
    f64 => AtomicU64, u64, f64::to_bits, f64::from_bits;
    u64 => AtomicU64, u64, |v: u64| v, |b: u64| b;
    i64 => AtomicU64, u64, |v: i64| v as u64, |b: u64| b as i64;
}

/// The slot state of a copy shared by hybrid views: how many views share it (an exclusive
/// [`CopyView`](super::CopyView) is `EXCLUSIVE`).
pub(super) const EXCLUSIVE: usize = usize::MAX;

/// No row in this place of the table.
const EMPTY: usize = usize::MAX;

/// The rows an iteration touched: their private copies, found by an open-addressing table.
struct Scratch<T> {
    /// Row → slot, by open addressing (`EMPTY`: free); a power of two long.
    keys: Vec<usize>,
    vals: Vec<usize>,
    /// Per slot in use: its row and its place in `keys`.
    rows: Vec<(usize, usize)>,
    /// Per slot ever used: the row as the iteration sees it, and as it was read (both
    /// filled on the iteration's first access). Heap rows of `row_len` elements, reached
    /// only through these pointers, kept from iteration to iteration.
    work: Vec<*mut [T]>,
    orig: Vec<*mut [T]>,
    written: Vec<bool>,
}

impl<T> Drop for Scratch<T> {
    fn drop(&mut self) {
        for &p in self.work.iter().chain(&self.orig) {
            // SAFETY: each pointer came from `Box::into_raw` and is freed once, here.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A worker's view of the replica its process's threads share (`sync = "hybrid"`), as the
/// loop body reaches it: indexed like a `DistArray` (bounds-checked). See the module.
pub struct SharedCopyView<'s, T: Relaxed, const N: usize> {
    pub(super) ptr: *mut T,
    pub(super) shape: [usize; N],
    pub(super) row_len: usize,
    /// The copy's share count, decremented when the view goes.
    pub(super) state: &'s AtomicUsize,
    pub(super) name: &'static str,
    scratch: UnsafeCell<Scratch<T>>,
    _copy: PhantomData<&'s [T]>,
}

impl<T: Relaxed, const N: usize> fmt::Debug for SharedCopyView<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedCopyView")
            .field("shape", &self.shape)
            .finish()
    }
}

impl<'s, T: Relaxed, const N: usize> SharedCopyView<'s, T, N> {
    /// A view of the copy at `ptr` of `shape`, whose share count `state` the caller has
    /// already raised.
    pub(super) fn new(
        ptr: *mut T,
        shape: [usize; N],
        state: &'s AtomicUsize,
        name: &'static str,
    ) -> Self {
        SharedCopyView {
            ptr,
            shape,
            row_len: shape[1..].iter().product(),
            state,
            name,
            scratch: UnsafeCell::new(Scratch {
                keys: vec![EMPTY; 64],
                vals: vec![0; 64],
                rows: Vec::new(),
                work: Vec::new(),
                orig: Vec::new(),
                written: Vec::new(),
            }),
            _copy: PhantomData,
        }
    }

    #[inline(always)]
    fn at(&self, idx: &[usize; N]) -> usize {
        crate::array::offset_in(self.name, &self.shape, idx)
    }

    #[inline(always)]
    fn check_row(&self, i: usize) {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
    }

    /// The slot of row `row` (inside the array) for this iteration, copied from the
    /// replica on the iteration's first access.
    fn slot(&self, row: usize) -> usize {
        // SAFETY: the scratch is reached only here, in `read`, `write` and `commit`, none of
        // which calls another while it holds its reference, and the view is not `Sync`.
        // The rows' elements are behind raw pointers: references the body holds into rows
        // are not covered by this one.
        let s = unsafe { &mut *self.scratch.get() };
        let mask = s.keys.len() - 1;
        let mut pos = row.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(20) & mask;
        loop {
            match s.keys[pos] {
                k if k == row => return s.vals[pos],
                EMPTY => break,
                _ => pos = (pos + 1) & mask,
            }
        }
        let k = s.rows.len();
        s.keys[pos] = row;
        s.vals[pos] = k;
        s.rows.push((row, pos));
        if k == s.work.len() {
            let zeros = || {
                let row = match self.row_len {
                    0 => Vec::new(),
                    n => vec![self.zero(); n],
                };
                Box::into_raw(row.into_boxed_slice())
            };
            s.work.push(zeros());
            s.orig.push(zeros());
            s.written.push(false);
        }
        // SAFETY: slot `k` is not in use this iteration (slots are handed out in order and
        // `commit`, which takes `&mut self`, is what releases them for reuse), so nothing
        // refers to its rows, two allocations of `row_len` elements. The row lies inside the
        // replica (checked by the callers); every concurrent access to the replica is
        // atomic (this module's only access), and the application points that write it
        // plainly run while every view waits between iterations.
        unsafe {
            let src = self.ptr.add(row * self.row_len);
            let (w, o) = (&mut *s.work[k], &mut *s.orig[k]);
            for (e, (w, o)) in w.iter_mut().zip(o.iter_mut()).enumerate() {
                let v = T::load(src.add(e));
                *w = v;
                *o = v;
            }
        }
        s.written[k] = false;
        if 2 * s.rows.len() > s.keys.len() {
            Self::grow(s);
        }
        k
    }

    /// Doubles the table of rows in use.
    fn grow(s: &mut Scratch<T>) {
        let len = s.keys.len() * 2;
        s.keys = vec![EMPTY; len];
        s.vals = vec![0; len];
        let mask = len - 1;
        for (k, (row, pos)) in s.rows.iter_mut().enumerate() {
            let mut p = row.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(20) & mask;
            while s.keys[p] != EMPTY {
                p = (p + 1) & mask;
            }
            s.keys[p] = *row;
            s.vals[p] = k;
            *pos = p;
        }
    }

    /// Slot `k`'s row, read-only.
    fn read(&self, k: usize) -> &[T] {
        // SAFETY: slot `k` is in use this iteration, its row is written only through
        // `&mut self` (`write`) and rewritten only by `slot` for a slot not in use; the
        // pointer stays valid until the view drops.
        let s = unsafe { &*self.scratch.get() };
        // SAFETY: as above.
        unsafe { &*s.work[k] }
    }

    /// Slot `k`'s row, to write (the row as read stays in `orig`).
    fn write(&mut self, k: usize) -> &mut [T] {
        let s = self.scratch.get_mut();
        s.written[k] = true;
        // SAFETY: `&mut self`: no reference into the view's rows is alive.
        unsafe { &mut *s.work[k] }
    }

    /// Any value, to fill new rows before they are read into.
    fn zero(&self) -> T {
        // SAFETY: the array holds at least one element (a row of some elements is about to
        // be read).
        unsafe { T::load(self.ptr) }
    }

    /// Ends an iteration: every element it changed becomes the replica's current value
    /// plus the change (exactly the iteration's value when no other thread wrote it since
    /// the iteration read it); the next iteration reads rows afresh.
    pub fn commit(&mut self) {
        let ptr = self.ptr;
        let row_len = self.row_len;
        let s = self.scratch.get_mut();
        for (k, &(row, pos)) in s.rows.iter().enumerate() {
            s.keys[pos] = EMPTY;
            if !s.written[k] {
                continue;
            }
            // SAFETY: `&mut self`: nothing refers to the rows; both hold `row_len`
            // elements.
            let (w, o) = unsafe { (&*s.work[k], &*s.orig[k]) };
            // SAFETY: the row lies inside the replica; every concurrent access is atomic
            // (see `slot`).
            let dst = unsafe { ptr.add(row * row_len) };
            for (e, (&new, &old)) in w.iter().zip(o).enumerate() {
                if T::same(new, old) {
                    continue;
                }
                // SAFETY: element `e` of the row, inside the replica; every concurrent
                // access is atomic (see `slot`).
                unsafe {
                    let p = dst.add(e);
                    let now = T::load(p);
                    T::store(
                        p,
                        if T::same(now, old) {
                            new
                        } else {
                            // Another thread's value plus this iteration's change
                            // (integers wrap, as a change below zero and back does).
                            super::wrap::add(now, super::wrap::sub(new, old))
                        },
                    );
                }
            }
        }
        s.rows.clear();
    }
}

impl<T: Relaxed, const N: usize> Drop for SharedCopyView<'_, T, N> {
    fn drop(&mut self) {
        // An iteration the generated code did not commit: none, or the body panicked
        // (the call fails).
        if !std::thread::panicking() {
            self.commit();
        }
        self.state.fetch_sub(1, Ordering::Release);
    }
}

impl<T: Relaxed, const N: usize> Index<[usize; N]> for SharedCopyView<'_, T, N> {
    type Output = T;
    #[inline]
    fn index(&self, idx: [usize; N]) -> &T {
        let o = self.at(&idx);
        let k = self.slot(idx[0]);
        &self.read(k)[o - idx[0] * self.row_len]
    }
}

impl<T: Relaxed, const N: usize> IndexMut<[usize; N]> for SharedCopyView<'_, T, N> {
    #[inline]
    fn index_mut(&mut self, idx: [usize; N]) -> &mut T {
        let o = self.at(&idx);
        let k = self.slot(idx[0]);
        let in_row = o - idx[0] * self.row_len;
        &mut self.write(k)[in_row]
    }
}

impl<T: Relaxed> Index<usize> for SharedCopyView<'_, T, 1> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        &self[[i]]
    }
}

impl<T: Relaxed> IndexMut<usize> for SharedCopyView<'_, T, 1> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self[[i]]
    }
}

impl<T: Relaxed, const N: usize> ArrayRef<T, N> for SharedCopyView<'_, T, N> {
    #[inline]
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    #[inline]
    fn row(&self, i: usize) -> &[T] {
        self.check_row(i);
        let k = self.slot(i);
        self.read(k)
    }
    #[inline]
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx)?;
        Some(&self[idx])
    }
}

impl<T: Relaxed, const N: usize> ArrayMut<T, N> for SharedCopyView<'_, T, N> {
    #[inline]
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        self.check_row(i);
        let k = self.slot(i);
        self.write(k)
    }
    #[inline]
    fn get_mut(&mut self, idx: [usize; N]) -> Option<&mut T> {
        offset(&self.shape, &idx)?;
        Some(&mut self[idx])
    }
}
