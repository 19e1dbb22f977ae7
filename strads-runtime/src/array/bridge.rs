//! Loop arrays of the types programs already hold: `&[T]`, `&mut [T]`, `&Vec<T>` and
//! `&mut Vec<T>` as 1-D arrays, and with the feature `ndarray` ndarray's arrays and views
//! as N-D arrays. `#[parallel_for]` on a function with such parameters makes a wrapper that
//! lends each to the loop as a [`DistArray`] for the call ([`Lent`]) and gives it back
//! after, also when the loop panics; the loop itself is the same as over a `DistArray`
//! (the same analysis, plans, report and bits, and on a cluster it crosses like one).
//!
//! What a call costs beyond a `DistArray`'s:
//! - `&mut Vec<T>` and `&mut ndarray::Array<T, D>` in standard layout lend their buffer:
//!   no copy.
//! - `&mut [T]` and a mutable view are copied in, and back after the call.
//! - `&[T]`, `&Vec<T>`, `&Array` and views read-only are copied in.
//!
//! Each call lends a new array, so a plan made from an array's contents (reconnaissance
//! over an index array) is made again at every call: keep such arrays in a `DistArray`
//! (the macro keeps a read-only one whose values are subscripts a captured value, whose
//! bytes key the plan). For the same reason checkpoints (`STRADS_CHECKPOINT`), which know
//! an array by its identity across calls, could not restore a program's own `Vec`: a loop
//! that writes one is refused under them, saying what to write instead.

use std::ops::{Deref, DerefMut};

use super::DistArray;

/// A program's array lent to a loop as a [`DistArray`] for one call; dropped, the array
/// goes back where it came from.
pub struct Lent<'a, T: 'static, const N: usize> {
    array: Option<DistArray<T, N>>,
    back: Option<Box<dyn FnOnce(DistArray<T, N>) + 'a>>,
}

impl<'a, T: 'static, const N: usize> Lent<'a, T, N> {
    fn new(array: DistArray<T, N>, back: impl FnOnce(DistArray<T, N>) + 'a) -> Self {
        Lent {
            array: Some(array),
            back: Some(Box::new(back)),
        }
    }
}

impl<T: 'static, const N: usize> Deref for Lent<'_, T, N> {
    type Target = DistArray<T, N>;
    fn deref(&self) -> &DistArray<T, N> {
        self.array.as_ref().expect("lent until dropped")
    }
}

impl<T: 'static, const N: usize> DerefMut for Lent<'_, T, N> {
    fn deref_mut(&mut self) -> &mut DistArray<T, N> {
        self.array.as_mut().expect("lent until dropped")
    }
}

impl<T: 'static, const N: usize> Drop for Lent<'_, T, N> {
    fn drop(&mut self) {
        if let (Some(array), Some(back)) = (self.array.take(), self.back.take()) {
            back(array);
        }
    }
}

impl<T: 'static, const N: usize> std::fmt::Debug for Lent<'_, T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lent")
            .field("shape", &self.array.as_ref().map(DistArray::shape))
            .finish()
    }
}

/// Under `STRADS_CHECKPOINT`, a loop that writes an array the program holds stops the
/// program (status 2), saying why and what to write instead.
fn refused_under_checkpoints() {
    if crate::config::get().checkpoint.is_some() {
        crate::log::say!(
            Error,
            "error: STRADS_CHECKPOINT is set, and a `#[parallel_for]` loop writes a `Vec`, a \
             slice or an ndarray array of the program, which a resumed run could not restore \
             (it is a new array to strads at every call): keep the arrays such a loop writes in \
             `DistArray`s (`DistArray::from_vec`), or unset STRADS_CHECKPOINT"
        );
        std::process::exit(2);
    }
}

/// A `&mut Vec<T>` lent as a 1-D array: its buffer moves into the array and back.
pub fn lend_vec<T: 'static>(v: &mut Vec<T>) -> Lent<'_, T, 1> {
    refused_under_checkpoints();
    let data = std::mem::take(v);
    let array = DistArray::from_vec([data.len()], data).expect("a vector's own length");
    Lent::new(array, move |a| *v = a.into_vec())
}

/// A `&mut [T]` lent as a 1-D array: copied in, and back after the call.
pub fn lend_slice<T: Clone + 'static>(s: &mut [T]) -> Lent<'_, T, 1> {
    refused_under_checkpoints();
    let array = read_slice(s);
    Lent::new(array, move |a| s.clone_from_slice(a.as_slice()))
}

/// A `&[T]` (or `&Vec<T>`) as a 1-D array the loop reads: a copy.
pub fn read_slice<T: Clone + 'static>(s: &[T]) -> DistArray<T, 1> {
    DistArray::from_vec([s.len()], s.to_vec()).expect("a slice's own length")
}

#[cfg(feature = "ndarray")]
pub use nd::{NdLend, NdLendView, NdRead};

/// Without the feature `ndarray`: the traits the wrapper names, which no type implements,
/// so that a loop over an ndarray array says what to enable.
#[cfg(not(feature = "ndarray"))]
mod off {
    use super::{DistArray, Lent};

    /// An ndarray array a loop reads.
    #[diagnostic::on_unimplemented(
        message = "a `#[parallel_for]` loop over an ndarray array needs strads' `ndarray` feature",
        label = "an ndarray array",
        note = "enable it in Cargo.toml: `strads = {{ version = \"..\", features = [\"ndarray\"] }}`"
    )]
    pub trait NdRead<T, const N: usize> {
        /// A copy as a `DistArray`.
        fn read_nd(&self) -> DistArray<T, N>;
    }

    /// An owned ndarray array a loop writes.
    #[diagnostic::on_unimplemented(
        message = "a `#[parallel_for]` loop over an ndarray array needs strads' `ndarray` feature",
        label = "an ndarray array",
        note = "enable it in Cargo.toml: `strads = {{ version = \"..\", features = [\"ndarray\"] }}`"
    )]
    pub trait NdLend<T: 'static, const N: usize> {
        /// Lent as a `DistArray`.
        fn lend_nd(&mut self) -> Lent<'_, T, N>;
    }

    /// A mutable ndarray view a loop writes.
    #[diagnostic::on_unimplemented(
        message = "a `#[parallel_for]` loop over an ndarray array needs strads' `ndarray` feature",
        label = "an ndarray view",
        note = "enable it in Cargo.toml: `strads = {{ version = \"..\", features = [\"ndarray\"] }}`"
    )]
    pub trait NdLendView<T: 'static, const N: usize> {
        /// Lent as a `DistArray` (a copy, written back).
        fn lend_view(&mut self) -> Lent<'_, T, N>;
    }
}

#[cfg(not(feature = "ndarray"))]
pub use off::{NdLend, NdLendView, NdRead};

#[cfg(feature = "ndarray")]
mod nd {
    use ndarray::{Array, ArrayBase, Data, DataMut, Dim, Ix1, Ix2, Ix3, Ix4, Ix5, Ix6};

    use super::{DistArray, Lent};

    /// An ndarray array or view a loop reads: a copy, in row-major (logical) order.
    pub trait NdRead<T, const N: usize> {
        /// A copy as a `DistArray`.
        fn read_nd(&self) -> DistArray<T, N>;
    }

    /// An owned ndarray array a loop writes: in standard layout its buffer moves into the
    /// `DistArray` and back; otherwise it is copied in and back.
    pub trait NdLend<T: 'static, const N: usize> {
        /// Lent as a `DistArray`.
        fn lend_nd(&mut self) -> Lent<'_, T, N>;
    }

    /// A mutable ndarray view a loop writes: copied in, and back after the call.
    pub trait NdLendView<T: 'static, const N: usize> {
        /// Lent as a `DistArray`.
        fn lend_view(&mut self) -> Lent<'_, T, N>;
    }

    macro_rules! ranks {
        ($($n:literal => $ix:ty),*) => {$(
            impl<T: Clone + 'static, S: Data<Elem = T>> NdRead<T, $n> for ArrayBase<S, $ix> {
                fn read_nd(&self) -> DistArray<T, $n> {
                    let shape: [usize; $n] = self.shape().try_into().expect("the rank");
                    DistArray::from_vec(shape, self.iter().cloned().collect())
                        .expect("an array's own shape")
                }
            }

            impl<T: Clone + 'static> NdLend<T, $n> for Array<T, $ix> {
                fn lend_nd(&mut self) -> Lent<'_, T, $n> {
                    super::refused_under_checkpoints();
                    let shape: [usize; $n] = self.shape().try_into().expect("the rank");
                    if !self.is_standard_layout() {
                        return self.lend_view();
                    }
                    let len = self.len();
                    let empty = Array::from_shape_vec(Dim([0; $n]), Vec::new())
                        .expect("an empty array");
                    let owned = std::mem::replace(self, empty);
                    let (mut data, offset) = owned.into_raw_vec_and_offset();
                    // Standard layout: the elements are contiguous, in order, from the
                    // first one's position in the buffer.
                    let offset = offset.unwrap_or(0);
                    if offset != 0 || data.len() != len {
                        data = data.drain(offset..offset + len).collect();
                    }
                    let array = DistArray::from_vec(shape, data).expect("an array's own shape");
                    Lent::new(array, move |a| {
                        *self = Array::from_shape_vec(Dim(shape), a.into_vec())
                            .expect("the shape it was lent with");
                    })
                }
            }

            impl<T: Clone + 'static, S: DataMut<Elem = T>> NdLendView<T, $n> for ArrayBase<S, $ix> {
                fn lend_view(&mut self) -> Lent<'_, T, $n> {
                    super::refused_under_checkpoints();
                    let array = self.read_nd();
                    Lent::new(array, move |a| {
                        for (d, s) in self.iter_mut().zip(a.as_slice()) {
                            *d = s.clone();
                        }
                    })
                }
            }
        )*};
    }

    ranks!(1 => Ix1, 2 => Ix2, 3 => Ix3, 4 => Ix4, 5 => Ix5, 6 => Ix6);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_and_slices_go_back_as_the_loop_left_them() {
        let mut v = vec![1.0f32, 2.0, 3.0];
        let ptr = v.as_ptr();
        {
            let mut a = lend_vec(&mut v);
            a[1] = 20.0;
            assert_eq!(a.shape(), [3]);
        }
        assert_eq!(v, [1.0, 20.0, 3.0]);
        // The buffer itself went and came back.
        assert_eq!(v.as_ptr(), ptr);
        let mut s = [1u32, 2, 3, 4];
        {
            let mut a = lend_slice(&mut s[1..]);
            a[0] = 7;
        }
        assert_eq!(s, [1, 7, 3, 4]);
        let r = read_slice(&s);
        assert_eq!(r.as_slice(), &s);
    }

    #[test]
    fn a_panic_while_lent_gives_the_array_back() {
        let mut v = vec![5i64; 4];
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut a = lend_vec(&mut v);
            a[0] = 6;
            panic!("in the loop");
        }));
        assert!(caught.is_err());
        assert_eq!(v, [6, 5, 5, 5]);
    }

    #[cfg(feature = "ndarray")]
    #[test]
    fn ndarray_arrays_and_views_go_back() {
        use ndarray::{Array2, s};
        let mut m = Array2::<f32>::from_shape_fn((3, 4), |(i, j)| (i * 4 + j) as f32);
        let ptr = m.as_ptr();
        {
            let mut a = m.lend_nd();
            assert_eq!(a.shape(), [3, 4]);
            assert_eq!(a[[2, 1]], 9.0);
            a[[2, 1]] = -1.0;
        }
        assert_eq!(m[[2, 1]], -1.0);
        assert_eq!(m.as_ptr(), ptr, "standard layout: the buffer is lent");
        // Transposed: not standard layout, copied in logical order and back.
        let mut t = m.clone().reversed_axes();
        {
            let mut a = t.lend_nd();
            assert_eq!(a.shape(), [4, 3]);
            assert_eq!(a[[1, 2]], -1.0);
            a[[0, 0]] = 100.0;
        }
        assert_eq!(t[[0, 0]], 100.0);
        assert_eq!(t[[1, 2]], -1.0);
        // A view of a column block.
        {
            let mut view = m.slice_mut(s![.., 1..3]);
            let mut a = view.lend_view();
            assert_eq!(a.shape(), [3, 2]);
            a[[0, 0]] = 42.0;
        }
        assert_eq!(m[[0, 1]], 42.0);
        let r = m.view().read_nd();
        assert_eq!(r.as_slice(), m.as_slice().unwrap());
    }
}
