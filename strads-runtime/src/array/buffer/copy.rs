//! [`CopyView`]: one worker's copy of a buffered array, as the loop body reaches it.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::array::access::{ArrayMut, ArrayRef, offset};
use crate::array::index_panic_in;

/// One worker's copy of a buffered array, as the loop body reaches it: indexed like a
/// `DistArray` (bounds-checked), the whole copy its own. It holds a pointer, never a
/// reference, between two accesses: at an application point the copy is rewritten while
/// the view waits.
pub struct CopyView<'s, T, const N: usize> {
    pub(super) ptr: *mut T,
    pub(super) shape: [usize; N],
    pub(super) row_len: usize,
    /// The copy's lent state, cleared when the view goes.
    pub(super) lent: &'s AtomicUsize,
    pub(super) name: &'static str,
    pub(super) _copy: PhantomData<&'s mut [T]>,
}

impl<T, const N: usize> Drop for CopyView<'_, T, N> {
    fn drop(&mut self) {
        self.lent.store(0, Ordering::Release);
    }
}

impl<T, const N: usize> fmt::Debug for CopyView<'_, T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CopyView")
            .field("shape", &self.shape)
            .finish()
    }
}

impl<T, const N: usize> CopyView<'_, T, N> {
    /// The whole copy, row-major, as `DistArray::as_slice`.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: the copy holds `shape`'s product of elements and is this view's alone
        // while it is borrowed (see `index`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.shape.iter().product()) }
    }

    /// The whole copy, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as for `as_slice`; `&mut self` keeps the view from lending it twice.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.shape.iter().product()) }
    }

    #[inline(always)]
    fn at(&self, idx: &[usize; N]) -> usize {
        crate::array::offset_in(self.name, &self.shape, idx)
    }

    #[inline(always)]
    fn row_start(&self, i: usize) -> usize {
        if i >= self.shape[0] {
            index_panic_in(self.name, &[i], &self.shape[..1]);
        }
        i * self.row_len
    }
}

impl<T, const N: usize> Index<[usize; N]> for CopyView<'_, T, N> {
    type Output = T;
    #[inline(always)]
    fn index(&self, idx: [usize; N]) -> &T {
        let o = self.at(&idx);
        // SAFETY: `o` is inside the copy (checked against the shape); the copy is this
        // worker's alone while it runs an iteration (see `Buffered`'s `Sync` impl), and the
        // reference ends with the iteration, before any application point.
        unsafe { &*self.ptr.add(o) }
    }
}

impl<T, const N: usize> IndexMut<[usize; N]> for CopyView<'_, T, N> {
    #[inline(always)]
    fn index_mut(&mut self, idx: [usize; N]) -> &mut T {
        let o = self.at(&idx);
        // SAFETY: as for `index`; `&mut self` keeps the view from lending it twice.
        unsafe { &mut *self.ptr.add(o) }
    }
}

impl<T> Index<usize> for CopyView<'_, T, 1> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        &self[[i]]
    }
}

impl<T> IndexMut<usize> for CopyView<'_, T, 1> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self[[i]]
    }
}

impl<T, const N: usize> ArrayRef<T, N> for CopyView<'_, T, N> {
    #[inline(always)]
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    #[inline(always)]
    fn row(&self, i: usize) -> &[T] {
        let start = self.row_start(i);
        // SAFETY: the row lies inside the copy (i < shape[0]); see `index`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(start), self.row_len) }
    }
    #[inline(always)]
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx)?;
        Some(&self[idx])
    }
}

impl<T, const N: usize> ArrayMut<T, N> for CopyView<'_, T, N> {
    #[inline(always)]
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        let start = self.row_start(i);
        // SAFETY: as for `row`; `&mut self` keeps the view from lending the row twice.
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
    use crate::array::buffer::Buffered;
    #[test]
    fn copy_views_index_rows_and_check_bounds() {
        let mut a = DistArray::<i32, 2>::from_fn([2, 3], |[i, j]| (i * 3 + j) as i32);
        let b = Buffered::new(&mut a, 1);
        b.with(0, |c| {
            assert_eq!(c.shape(), [2, 3]);
            assert_eq!(c.row(1), &[3, 4, 5]);
            c.row_mut(0)[2] += 10;
            *c.get_mut([1, 0]).unwrap() -= 3;
            assert_eq!(c.get([2, 0]), None);
            assert_eq!(c[[0, 2]], 12);
            c.as_mut_slice()[5] += 1;
            assert_eq!(c.as_slice(), &[0, 1, 12, 0, 4, 6]);
            c.as_mut_slice()[5] -= 1;
            let outside = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c[[0, 3]]));
            assert!(outside.is_err());
        });
        b.finish();
        assert_eq!(a.as_slice(), &[0, 1, 12, 0, 4, 5]);
    }

    /// Runs `f` on a thread of its own; `Err(message)` if it panicked, and a failure
    /// instead of a hang if it does not return.
    fn panics_within(f: impl FnOnce() + Send + 'static) -> Result<(), String> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
                e.downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default()
            });
            let _ = tx.send(r);
        });
        rx.recv_timeout(std::time::Duration::from_secs(30))
            .expect("finished in time (no deadlock)")
    }

    #[test]
    fn nested_with_on_one_copy_panics_instead_of_deadlocking() {
        let r = panics_within(|| {
            let mut a = DistArray::<i64, 1>::zeros([2]);
            let b = Buffered::new(&mut a, 2);
            b.with(0, |outer| {
                outer[0] += 1;
                b.with(0, |inner| inner[0] += 1);
            });
        });
        assert_eq!(
            r.unwrap_err(),
            "strads: Buffered::with(0, ..) was called inside another `with` on worker 0's \
             copy on the same thread; the two views would alias it (use the outer view)"
        );
        // Nesting on different copies is fine, and the copies are usable afterwards.
        let mut a = DistArray::<i64, 1>::zeros([2]);
        let b = Buffered::new(&mut a, 2);
        b.with(0, |c0| {
            b.with(1, |c1| {
                c0[0] += 1;
                c1[1] += 2;
            })
        });
        b.with(0, |c0| c0[1] += 3);
        b.finish();
        assert_eq!(a.as_slice(), &[1, 5]);
    }

    #[test]
    fn two_views_of_one_copy_panic_on_one_thread_and_across_threads() {
        let message = "strads: worker 0's copy of a buffered array is already lent to a view \
                       (a second view, on this thread or another, would alias it)";
        let r = panics_within(|| {
            let mut a = DistArray::<i64, 1>::zeros([2]);
            let b = Buffered::new(&mut a, 2);
            let _first = b.view(0);
            let _second = b.view(0);
        });
        assert_eq!(r.unwrap_err(), message);
        let mut a = DistArray::<i64, 1>::zeros([2]);
        let b = Buffered::new(&mut a, 2);
        {
            let mut first = b.view(0);
            first[0] += 1;
            let other = std::thread::scope(|s| {
                s.spawn(|| {
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        b.view(0)[0] += 1;
                    }))
                    .map_err(|e| e.downcast_ref::<String>().cloned().unwrap_or_default())
                })
                .join()
                .unwrap()
            });
            assert_eq!(other.unwrap_err(), message);
            // `with` waits for no view: it refuses too.
            let with =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.with(0, |c| c[0] += 1)));
            assert!(with.is_err());
            first[1] += 1;
        }
        // The view is gone: the copy is lent again.
        b.view(0)[0] += 10;
        b.with(1, |c| c[1] += 100);
        b.finish();
        assert_eq!(a.as_slice(), &[11, 101]);
    }
}
