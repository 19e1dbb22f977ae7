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

    /// Whether a resumed cluster job's driver can give this array a checkpoint's contents
    /// where they were written, `pieces` read back by the ranks that wrote them
    /// ([`restore_in_parts`](Self::restore_in_parts)): on a job's driver with those ranks,
    /// for numbers in at most 4 dims.
    pub(crate) fn can_restore_in_parts(&self, pieces: &[crate::array::made::Piece]) -> bool
    where
        T: 'static,
    {
        let ranks = crate::array::made::parts().and_then(|p| p.ranks());
        crate::array::le::wire_size::<T>().is_some()
            && (1..=4).contains(&N)
            && !pieces.is_empty()
            && ranks.is_some_and(|n| pieces.iter().all(|p| p.rank != 0 && p.rank < n))
    }

    /// A resumed cluster job's array given a checkpoint's contents where they were
    /// written (`made::Parts::restore`): `home`, index ranges and their little-endian
    /// bytes, here, and `pieces` read back by the ranks that wrote them, which keep them.
    /// Only when [`can_restore_in_parts`](Self::can_restore_in_parts).
    pub(crate) fn restore_in_parts(
        &mut self,
        home: &[crate::array::made::Piece],
        pieces: &[crate::array::made::Piece],
    ) -> Result<(), String>
    where
        T: Send + Sync + 'static,
    {
        let parts = crate::array::made::parts().ok_or("no cluster job")?;
        let (id, shape) = (self.id, self.shape);
        parts.restore(
            id,
            std::any::TypeId::of::<T>(),
            &shape,
            self as &mut dyn std::any::Any,
            home,
            pieces,
        )
    }

    /// A resumed array's contents replaced where they are (`restore_in_parts`): what was
    /// away is forgotten without being fetched, and the array is at `version`.
    pub(crate) fn restoring(&mut self, version: u64) -> &mut [T] {
        self.away.claim();
        self.version = version;
        self.data_mut()
    }

    /// With parts on other ranks: has their holders write them to `path_of(rank, piece)`
    /// (a checkpoint), and gives `out` the elements at home as little-endian bytes, 64 Ki
    /// elements at a time from where they live; their byte count and index ranges come
    /// back. `None` (nothing given to `out`) when nothing is away, or parts are made
    /// nowhere yet.
    #[allow(clippy::type_complexity)]
    pub(crate) fn save_parts(
        &self,
        path_of: &dyn Fn(usize, usize) -> String,
        out: &mut dyn FnMut(&[u8]),
    ) -> Option<(u64, Vec<(u64, u64)>, Vec<crate::array::away::SavedAway>)>
    where
        T: 'static,
    {
        crate::array::le::wire_size::<T>()?;
        self.away.locked(|fetch, read| {
            // The elements at home go to `out` while the other ranks write theirs.
            let mut home = Vec::new();
            let mut written = 0u64;
            let parts = fetch?.save_into(read, path_of, &mut |regions: &[&[(u64, u64)]]| {
                home = home_of(
                    regions.iter().flat_map(|r| r.iter().copied()),
                    self.data.len(),
                );
                // SAFETY: under the cell's lock with no lease held, nothing writes the
                // elements: fetches and leases write them only under that lock, and every
                // other writer borrows the array mutably, which `&self` excludes. Those at
                // home are current (those away are stale, and not copied).
                let all =
                    unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.data.len()) };
                for &(lo, hi) in &home {
                    let _ = crate::array::le::each_bytes(&all[lo as usize..hi as usize], |b| {
                        written += b.len() as u64;
                        out(b);
                        Ok::<(), ()>(())
                    });
                }
            })?;
            Some((written, home, parts))
        })
    }

    /// The checksum of the elements' little-endian bytes, the one one process takes of
    /// the whole; the parts other ranks hold are taken there (nothing comes home). `None`
    /// for elements without a wire type, or parts made nowhere yet.
    pub(crate) fn checksum(&self) -> Option<crate::checkpoint::Poly>
    where
        T: 'static,
    {
        use crate::checkpoint::Poly;
        crate::array::le::wire_size::<T>()?;
        let away = self.away.locked(|fetch, read| {
            let Some(mut sums) = fetch?.digest_away(read) else {
                return Some(None);
            };
            let home = home_of(sums.iter().map(|&(lo, hi, _)| (lo, hi)), self.data.len());
            // SAFETY: as in `save_parts`: under the cell's lock with no lease held, nothing
            // writes the elements, and those at home (outside the parts away) are current.
            let all = unsafe { std::slice::from_raw_parts(self.data.as_ptr(), self.data.len()) };
            for (lo, hi) in home {
                sums.push((
                    lo,
                    hi,
                    crate::array::le::digest(&all[lo as usize..hi as usize]),
                ));
            }
            sums.sort_unstable_by_key(|&(lo, ..)| lo);
            Some(Some(
                sums.into_iter()
                    .fold(Poly::new(), |sum, (.., p)| sum.then(p)),
            ))
        });
        match away {
            // Parts away (`None` inside: some made nowhere yet).
            Some(sum) => sum,
            None => Some(crate::array::le::digest(self.as_slice())),
        }
    }
}

/// The elements of `0..len` outside the ranges `away` (in any order): those at home, in
/// order.
fn home_of(away: impl IntoIterator<Item = (u64, u64)>, len: usize) -> Vec<(u64, u64)> {
    let mut spans = crate::array::spans::Spans::default();
    for (lo, hi) in away {
        spans.insert(lo as usize, hi as usize);
    }
    spans.outside(&[(0, len as u64)])
}
