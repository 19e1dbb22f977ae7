//! [`DistArray`]: the dense, row-major array.

use std::fmt;
use std::ops::{Index, IndexMut};

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::access::{ArrayMut, ArrayRef, offset};
use super::away::Away;
use super::{fresh_id, index_panic};
use crate::error::{Error, Result};

/// A dense, row-major N-dimensional array.
///
/// ```
/// use strads_runtime::DistArray;
/// let mut a = DistArray::<f32, 2>::zeros([3, 4]);
/// a[[1, 2]] = 5.0;
/// assert_eq!(a.row(1), &[0.0, 0.0, 5.0, 0.0]);
/// ```
pub struct DistArray<T, const N: usize> {
    /// The elements. While parts are away (see [`Away`]) no reference to them exists,
    /// and the fetch writes them through the pointer the lending took.
    data: Vec<T>,
    shape: [usize; N],
    id: u64,
    /// Bumped by every way to mutate the elements: `(id, version)` names the contents.
    version: u64,
    /// Parts other processes of a cluster job hold (the driver's arrays only).
    away: Away,
}

/// Element types [`DistArray::random`] can draw.
pub trait RandomValue: Sized + 'static {
    /// A value uniform in `[0, 1)`.
    fn draw(rng: &mut Xoshiro256PlusPlus) -> Self;
}

impl RandomValue for f32 {
    fn draw(rng: &mut Xoshiro256PlusPlus) -> Self {
        rng.random::<f32>()
    }
}

impl RandomValue for f64 {
    fn draw(rng: &mut Xoshiro256PlusPlus) -> Self {
        rng.random::<f64>()
    }
}

fn checked_len<const N: usize>(shape: &[usize; N]) -> usize {
    shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .unwrap_or_else(|| panic!("DistArray shape {shape:?} has more elements than usize holds"))
}

impl<T, const N: usize> DistArray<T, N> {
    /// An array whose element at `idx` is `f(idx)`, filled in row-major order.
    ///
    /// The closure runs here, in this process, over the whole array, in row-major order
    /// (a closure cannot run on other ranks). On a cluster job's driver an array of numbers
    /// of at least [`MADE_IN_PARTS_BYTES`](crate::cluster::MADE_IN_PARTS_BYTES) (1 MiB)
    /// and 1 to 4 dims is made in parts: its rows are split evenly over the ranks (its
    /// elements, when it has fewer rows than ranks), the driver keeps the first share and
    /// sends every other rank its share 1 MiB at a time as `f` makes it, so the driver
    /// never holds the others' shares; a loop then takes each part from where it is, and
    /// serial code that reads the array brings what it reads home. The values are the same
    /// in every layout. A panic in `f` panics `from_fn`, here as on threads, and every rank
    /// lets go of what it received.
    pub fn from_fn(shape: [usize; N], mut f: impl FnMut([usize; N]) -> T) -> Self
    where
        T: 'static,
    {
        let len = checked_len(&shape);
        if let Some(a) = super::inparts::from_fn(shape, len, &mut f) {
            return a;
        }
        let mut data = Vec::with_capacity(len);
        super::huge::advise(&data);
        let mut idx = [0usize; N];
        for _ in 0..len {
            data.push(f(idx));
            next_index(&mut idx, &shape);
        }
        DistArray::made(data, shape)
    }

    /// An array over existing row-major data; fails when the lengths disagree.
    pub fn from_vec(shape: [usize; N], data: Vec<T>) -> Result<Self> {
        let len = checked_len(&shape);
        if data.len() != len {
            return Err(Error::Shape(format!(
                "shape {shape:?} holds {len} elements but the data has {}",
                data.len()
            )));
        }
        Ok(DistArray::made(data, shape))
    }

    /// The array's shape.
    pub fn shape(&self) -> [usize; N] {
        self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the array has no element.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Number of rows: the first dimension (ndarray's `nrows`; 1 for no dimension).
    pub fn nrows(&self) -> usize {
        self.shape.first().copied().unwrap_or(1)
    }

    /// Number of columns: the second dimension (ndarray's `ncols`; 1 for fewer
    /// dimensions).
    pub fn ncols(&self) -> usize {
        self.shape.get(1).copied().unwrap_or(1)
    }

    /// Number of elements in one row (the product of all dims but the first).
    pub fn row_len(&self) -> usize {
        self.shape[1..].iter().product()
    }

    /// Row `i`: every element whose first index is `i`.
    ///
    /// # Panics
    /// When `i` is outside the first dimension.
    #[inline]
    pub fn row(&self, i: usize) -> &[T] {
        if N == 0 || i >= self.shape[0] {
            index_panic(&[i], &self.shape[..N.min(1)]);
        }
        let n = self.row_len();
        self.span(i * n, (i + 1) * n)
    }

    /// Row `i`, mutable.
    ///
    /// # Panics
    /// When `i` is outside the first dimension.
    #[inline]
    pub fn row_mut(&mut self, i: usize) -> &mut [T] {
        if N == 0 || i >= self.shape[0] {
            index_panic(&[i], &self.shape[..N.min(1)]);
        }
        self.version += 1;
        let n = self.row_len();
        self.span_mut(i * n, (i + 1) * n)
    }

    /// The element at `idx`, or `None` when outside the shape.
    #[inline]
    pub fn get(&self, idx: [usize; N]) -> Option<&T> {
        offset(&self.shape, &idx).map(|o| &self.span(o, o + 1)[0])
    }

    /// The element at `idx`, mutable, or `None` when outside the shape.
    #[inline]
    pub fn get_mut(&mut self, idx: [usize; N]) -> Option<&mut T> {
        let o = offset(&self.shape, &idx)?;
        self.version += 1;
        Some(&mut self.span_mut(o, o + 1)[0])
    }

    /// The elements in row-major order, taken out of the array (parts other processes
    /// hold come home first).
    pub fn into_vec(mut self) -> Vec<T> {
        self.version += 1;
        std::mem::take(self.data_mut())
    }

    /// All elements in row-major order.
    pub fn as_slice(&self) -> &[T] {
        self.data()
    }

    /// All elements in row-major order, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        self.version += 1;
        self.data_mut()
    }

    /// The elements with their indices, in row-major order.
    pub fn iter(&self) -> DenseIter<'_, T, N> {
        DenseIter {
            data: self.data(),
            shape: self.shape,
            pos: 0,
            idx: [0; N],
        }
    }

    /// Process-unique identity of this array (a clone gets a new one).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `(id, version)`: changes whenever the elements may have changed, so a plan made
    /// from this array's contents is reused only while they are the same.
    pub fn contents_key(&self) -> (u64, u64) {
        (self.id, self.version)
    }

    /// The elements' pointer and the away cell, to lend the array to a loop call's
    /// workers (`SharedMut`): parts held elsewhere stay there (the lending decides).
    pub(crate) fn lend_unversioned(&mut self) -> (*mut T, &Away) {
        (self.data.as_mut_ptr(), &self.away)
    }

    /// [`lend_unversioned`](DistArray::lend_unversioned) for a call that writes it.
    pub(crate) fn lend(&mut self) -> (*mut T, &Away) {
        self.version += 1;
        self.lend_unversioned()
    }

    /// Other processes now hold a copy of the array (known to them as `id`): they drop it
    /// when this array is dropped.
    pub(crate) fn shared_as(&self, id: u64) {
        self.away.forget.shared(id);
    }

    fn made(mut data: Vec<T>, shape: [usize; N]) -> Self {
        let mut away = Away::default();
        away.set_base(data.as_mut_ptr() as usize);
        DistArray {
            data,
            shape,
            id: fresh_id(),
            version: 0,
            away,
        }
    }

    /// The elements, brought home first when parts are held by other processes (unless
    /// this thread works for a call that leases the array: it reads only parts at home).
    #[inline]
    fn data(&self) -> &Vec<T> {
        if self.away.is_away() && !self.away.leased_here() {
            self.away.bring_home();
        }
        &self.data
    }

    /// Elements `lo..hi`, readable: when parts are held by other processes, only those
    /// elements (and some around them) come home, the rest stays away (unless this thread
    /// works for a call that leases the array: it reads only parts at home).
    #[inline]
    fn span(&self, lo: usize, hi: usize) -> &[T] {
        assert!(lo <= hi && hi <= self.data.len(), "a span inside the array");
        if self.away.is_away() && !self.away.readable(lo, hi) && !self.away.leased_here() {
            self.away.bring_range(lo, hi);
        }
        // SAFETY: `lo..hi` lies inside the buffer (asserted). The slice is made from the
        // raw pointer, so no reference to the rest of the buffer exists, which another
        // thread's fetch may be writing meanwhile (`array::away`); these elements are home
        // or read home, and nothing writes them while the borrow of `self` lasts.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr().add(lo), hi - lo) }
    }

    /// Elements `lo..hi`, writable: when parts are held by other processes, only those
    /// elements (and a window around them) come home and stay home; the rest stays away.
    /// The caller bumped the version.
    #[inline]
    fn span_mut(&mut self, lo: usize, hi: usize) -> &mut [T] {
        assert!(lo <= hi && hi <= self.data.len(), "a span inside the array");
        if self.away.is_away_mut() {
            self.away.take_range(lo, hi, self.version);
        }
        // SAFETY: `lo..hi` lies inside the buffer (asserted), and `self` is borrowed
        // mutably, so nothing else reaches these elements. Made from the raw pointer, the
        // slice leaves the pointer the fetch of the parts still away writes through valid
        // (a `&mut` to the whole buffer could invalidate it).
        unsafe { std::slice::from_raw_parts_mut(self.data.as_mut_ptr().add(lo), hi - lo) }
    }

    /// The away cell, for a call across processes that leases the array.
    pub(crate) fn away(&self) -> &Away {
        &self.away
    }

    /// The elements, mutable, brought home first.
    #[inline]
    fn data_mut(&mut self) -> &mut Vec<T> {
        if self.away.is_away_mut() {
            self.away.bring_home_mut();
        }
        &mut self.data
    }
}

impl<T: Clone + Default + 'static, const N: usize> DistArray<T, N> {
    /// [`DistArray::zeros`], or an error when the shape's size overflows or the memory
    /// cannot be reserved (a shape that came from another process, say).
    pub fn try_zeros(shape: [usize; N]) -> Result<Self, String> {
        let len = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format!("an array of shape {shape:?} has too many elements"))?;
        let too_large =
            || format!("an array of shape {shape:?} ({len} elements) does not fit in memory");
        if std::mem::size_of::<T>() > 0
            && len
                .checked_mul(std::mem::size_of::<T>())
                .is_none_or(|b| b > isize::MAX as usize)
        {
            return Err(too_large());
        }
        if let Some(data) = super::pages::zeroed::<T>(len) {
            super::huge::advise(&data);
            return Ok(DistArray::made(data, shape));
        }
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| too_large())?;
        super::huge::advise(&data);
        data.resize(len, T::default());
        Ok(DistArray::made(data, shape))
    }

    /// An array of `T::default()` (zero for numbers).
    ///
    /// For number types the memory is reserved, not written: its pages cost resident
    /// memory only once something writes them (on a cluster, a rank backs only the parts
    /// it holds).
    pub fn zeros(shape: [usize; N]) -> Self {
        let len = checked_len(&shape);
        if let Some(data) = super::pages::zeroed::<T>(len) {
            if super::made::in_place() {
                return DistArray::in_place(data, shape, super::made::Recipe::Zeros);
            }
            super::huge::advise(&data);
            return DistArray::made(data, shape);
        }
        let mut data = Vec::with_capacity(len);
        super::huge::advise(&data);
        data.resize(len, T::default());
        DistArray::made(data, shape)
    }
}

impl<T: Clone + 'static, const N: usize> DistArray<T, N> {
    /// An array whose every element is `value` (NumPy's `full`).
    ///
    /// On the driver of a cluster job, for number types, the array is created in place,
    /// as [`zeros`](Self::zeros) and [`random`](Self::random) are: no element is written
    /// here; each rank fills the parts its calls give it, and the driver the rest only
    /// when serial code reads them.
    pub fn full(shape: [usize; N], value: T) -> Self {
        let len = checked_len(&shape);
        if super::made::in_place()
            && let Some(recipe) = super::made::Recipe::full(&value)
            && let Some(data) = super::pages::zeroed::<T>(len)
        {
            return DistArray::in_place(data, shape, recipe);
        }
        let mut data = Vec::with_capacity(len);
        super::huge::advise(&data);
        data.resize(len, value);
        DistArray::made(data, shape)
    }
}

impl<T: RandomValue, const N: usize> DistArray<T, N> {
    /// An array of values uniform in `[0, 1)`, the same for the same `seed` on every
    /// platform and in every layout: each row (first index; an element of a 1-D array)
    /// draws its values in order from its own stream, `IterRng::new(seed, &[row])`
    /// (xoshiro256++), so any process can make any rows of it without the others.
    ///
    /// On the driver of a cluster job (`f32` and `f64`), the array is created in place:
    /// no value is drawn here; each rank draws the rows its calls give it, and the
    /// driver draws the rest only when serial code reads them.
    pub fn random(shape: [usize; N], seed: u64) -> Self {
        let len = checked_len(&shape);
        let recipe = super::made::Recipe::Random { seed };
        if super::made::in_place()
            && let Some(data) = super::pages::zeroed::<T>(len)
        {
            return DistArray::in_place(data, shape, recipe);
        }
        let mut data = Vec::with_capacity(len);
        super::huge::advise(&data);
        data.extend(super::made::random_values(seed, &shape, 0).take(len));
        DistArray::made(data, shape)
    }
}

impl<T: 'static, const N: usize> DistArray<T, N> {
    /// An array over `data`, reserved and unwritten, whose elements `recipe` makes where
    /// they are needed (module `made`): every element is away, made here when read.
    pub(crate) fn in_place(
        mut data: Vec<T>,
        shape: [usize; N],
        recipe: super::made::Recipe,
    ) -> Self {
        super::huge::advise(&data);
        let (ptr, len) = (data.as_mut_ptr() as usize, data.len());
        let a = DistArray::made(data, shape);
        a.away.made_by(recipe);
        a.away.leave(Box::new(super::fresh::MadeHere::<T> {
            ptr,
            len,
            id: a.id,
            left: vec![(0, len as u64)],
            shape: shape.to_vec(),
            recipe,
            _elem: std::marker::PhantomData,
        }));
        a
    }
}

impl<T: Clone, const N: usize> Clone for DistArray<T, N> {
    fn clone(&self) -> Self {
        let from = self.data();
        let mut data = Vec::with_capacity(from.len());
        super::huge::advise(&data);
        data.extend_from_slice(from);
        DistArray::made(data, self.shape)
    }
}

impl<T: PartialEq, const N: usize> PartialEq for DistArray<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape && self.data() == other.data()
    }
}

impl<T, const N: usize> fmt::Debug for DistArray<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistArray")
            .field("shape", &self.shape)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl<T, const N: usize> Index<[usize; N]> for DistArray<T, N> {
    type Output = T;
    #[inline]
    fn index(&self, idx: [usize; N]) -> &T {
        match offset(&self.shape, &idx) {
            Some(o) => &self.span(o, o + 1)[0],
            None => index_panic(&idx, &self.shape),
        }
    }
}

impl<T, const N: usize> IndexMut<[usize; N]> for DistArray<T, N> {
    #[inline]
    fn index_mut(&mut self, idx: [usize; N]) -> &mut T {
        self.version += 1;
        match offset(&self.shape, &idx) {
            Some(o) => &mut self.span_mut(o, o + 1)[0],
            None => index_panic(&idx, &self.shape),
        }
    }
}

impl<T> Index<usize> for DistArray<T, 1> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        if i >= self.data.len() {
            index_panic(&[i], &self.shape);
        }
        &self.span(i, i + 1)[0]
    }
}

impl<T> IndexMut<usize> for DistArray<T, 1> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.version += 1;
        if i >= self.data.len() {
            index_panic(&[i], &self.shape);
        }
        &mut self.span_mut(i, i + 1)[0]
    }
}

impl<T, const N: usize> ArrayRef<T, N> for DistArray<T, N> {
    #[inline]
    fn shape(&self) -> [usize; N] {
        self.shape
    }
    #[inline]
    fn row(&self, i: usize) -> &[T] {
        DistArray::row(self, i)
    }
    #[inline]
    fn get(&self, idx: [usize; N]) -> Option<&T> {
        DistArray::get(self, idx)
    }
}

impl<T, const N: usize> ArrayMut<T, N> for DistArray<T, N> {
    #[inline]
    fn row_mut(&mut self, i: usize) -> &mut [T] {
        DistArray::row_mut(self, i)
    }
    #[inline]
    fn get_mut(&mut self, idx: [usize; N]) -> Option<&mut T> {
        DistArray::get_mut(self, idx)
    }
}

mod byvalue;
mod iter;
pub use iter::DenseIter;
pub(crate) use iter::next_index;
mod parts;
#[cfg(test)]
mod tests;
