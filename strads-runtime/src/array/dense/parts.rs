//! A dense array's parts on the other ranks of a cluster job, as serial code sees them
//! ([`DistArray::gather`], [`DistArray::is_spread`]), and arrays a data operation makes on
//! every rank (`cluster::spread::dense`): known by the id the driver gave the operation,
//! with the other ranks' parts away from the start.

use super::DistArray;

impl<T, const N: usize> DistArray<T, N> {
    /// Brings home every element other ranks of a cluster job hold (on a job's driver,
    /// after a call left parts where they were written, or a loader read them in place),
    /// as `as_slice` and iteration do first: one transfer of the parts away, after which
    /// serial code reads the array at memory speed. Nothing happens when every element is
    /// here (always, outside a cluster job). Reading one element or row brings only a
    /// window around it; a loop that reads the array by parts (its blocks' rows) runs where
    /// they are, while one that reads it whole brings it home too. Of an array made in place
    /// by a loader (`load::libsvm`), the ranks keep their copies once it is home, until
    /// the array is dropped.
    pub fn gather(&self) {
        self.data();
    }

    /// Elements `lo..hi` of the flat array, readable: on a job's driver with parts away,
    /// only a window around them comes home (as for an element or a row).
    pub(crate) fn window_of(&self, lo: usize, hi: usize) -> &[T] {
        self.span(lo, hi)
    }

    /// Whether some elements are not here: held by other ranks of a cluster job, or
    /// created in place and not made yet (see [`gather`](Self::gather)).
    pub fn is_spread(&self) -> bool {
        self.away.is_away()
    }

    /// The array known by `id` (a fresh id the driver gave a data operation that makes
    /// the array on every rank: `cluster::spread::dense`).
    pub(crate) fn with_id(mut self, id: u64) -> Self {
        self.id = id;
        self
    }

    /// An array `id` of `shape` whose elements are zero and not yet written (reserved
    /// pages: no memory until written), for `DistArray::from_fn` made in parts; `None`
    /// when zero bytes are not a value of `T`.
    pub(crate) fn reserved(shape: [usize; N], len: usize, id: u64) -> Option<Self>
    where
        T: 'static,
    {
        let data = crate::array::pages::zeroed::<T>(len)?;
        crate::array::huge::advise(&data);
        Some(DistArray::made(data, shape).with_id(id))
    }

    /// The elements of an array being made on every rank alike (`DistArray::from_fn` in
    /// parts), as `as_mut_slice` without counting a change: the ranks' copies keep the
    /// version the driver's has, however many pieces each wrote.
    pub(crate) fn making(&mut self) -> &mut [T] {
        self.data_mut()
    }

    /// Parts of this new array other ranks hold from the start (a data operation made
    /// them there; the caller said so with `shared_as`): `fetch`, given the elements'
    /// address, brings them home before serial code reads them. The array is borrowed
    /// mutably, so no reference to its elements exists.
    pub(crate) fn made_away(&mut self, fetch: impl FnOnce(usize) -> crate::array::away::Fetch) {
        let fetch = fetch(self.data.as_mut_ptr() as usize);
        self.away.leave(fetch);
    }
}
