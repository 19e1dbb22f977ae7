//! Serial code's reads and writes of single elements by value: on a cluster job's driver
//! they reach the rank that holds the element instead of bringing its window home
//! (`array::away`'s `peek`).

use super::DistArray;
use crate::array::access::offset;
use crate::array::index_panic;

impl<T, const N: usize> DistArray<T, N> {
    /// The element at `idx`, by value: what `a[idx]` reads. On a cluster job's driver an
    /// element another rank holds comes as a copy (of the window of whole rows around
    /// it, about 64 KiB), kept among the last 4 MiB of such copies (or the last one, when
    /// a row alone is larger) and never written into the array, so that serial code
    /// reading elements at random over an array in parts (an evaluation over a sample of
    /// rows) holds a bounded share of it however many it reads. `a[idx]`, `get` and `row`
    /// give references, which need the element here: they bring its window home, kept
    /// until the next call that writes the array. (Elements of an array created in place
    /// that no rank has made yet are copies made from its recipe, and the array stays
    /// unmade.)
    ///
    /// ```
    /// use strads_runtime::DistArray;
    /// let w = DistArray::<f32, 2>::from_fn([3, 2], |[i, j]| (i * 2 + j) as f32);
    /// assert_eq!(w.value([2, 1]), 5.0);
    /// assert_eq!(w.row_values(1), vec![2.0, 3.0]);
    /// ```
    ///
    /// # Panics
    /// When `idx` is outside the shape.
    pub fn value(&self, idx: [usize; N]) -> T
    where
        T: Copy + 'static,
    {
        let Some(o) = offset(&self.shape, &idx) else {
            index_panic(&idx, &self.shape)
        };
        self.value_at(o)
    }

    /// Row `i` by value: [`value`](Self::value) of each of its elements.
    ///
    /// # Panics
    /// When `i` is outside the first dimension.
    pub fn row_values(&self, i: usize) -> Vec<T>
    where
        T: Copy + 'static,
    {
        if N == 0 || i >= self.shape[0] {
            index_panic(&[i], &self.shape[..N.min(1)]);
        }
        let n = self.row_len();
        (i * n..(i + 1) * n).map(|o| self.value_at(o)).collect()
    }

    /// Element `o` (row-major) by value ([`value`](Self::value)).
    fn value_at(&self, o: usize) -> T
    where
        T: Copy + 'static,
    {
        if self.away.is_away()
            && !self.away.readable(o, o + 1)
            && !self.away.leased_here()
            && let Some(size) = crate::array::le::wire_size::<T>()
            && let Some(v) = self.away.peek(o, size, |b| {
                crate::array::le::get_vec::<T>(b).and_then(|v| v.first().copied())
            })
        {
            return v;
        }
        self.span(o, o + 1)[0]
    }

    /// Sets the element at `idx` to `v`: what `a[idx] = v` does. On a cluster job's
    /// driver an element another rank holds is set there, where it stays (a round trip to
    /// that rank), instead of its window coming home to live on the driver; an element
    /// here, or in parts no rank has made yet, is written here as `a[idx] = v` writes it.
    /// [`set_many`](Self::set_many) sets many in one round trip per rank.
    ///
    /// ```
    /// use strads_runtime::DistArray;
    /// let mut w = DistArray::<f32, 2>::zeros([3, 2]);
    /// w.set([2, 1], 5.0);
    /// w.set_many([([0, 0], 1.0), ([2, 1], 6.0)]);
    /// assert_eq!(w.as_slice(), &[1.0, 0.0, 0.0, 0.0, 0.0, 6.0]);
    /// ```
    ///
    /// # Panics
    /// When `idx` is outside the shape.
    pub fn set(&mut self, idx: [usize; N], v: T)
    where
        T: Copy + 'static,
    {
        self.set_many([(idx, v)]);
    }

    /// Sets each element of `writes` to its value, in order (the last write of an element
    /// wins): [`set`](Self::set), with the elements other ranks hold sent to each rank
    /// together.
    ///
    /// # Panics
    /// When an index is outside the shape (no element is set then).
    pub fn set_many(&mut self, writes: impl IntoIterator<Item = ([usize; N], T)>)
    where
        T: Copy + 'static,
    {
        let writes: Vec<(usize, T)> = writes
            .into_iter()
            .map(|(idx, v)| match offset(&self.shape, &idx) {
                Some(o) => (o, v),
                None => index_panic(&idx, &self.shape),
            })
            .collect();
        if writes.is_empty() {
            // Nothing changes: the version stays (parts away stay keyed by it).
            return;
        }
        self.version += 1;
        let mut here = writes.clone();
        if self.away.is_away_mut() && crate::array::le::wire_size::<T>().is_some() {
            let mut items: Vec<(usize, Vec<u8>)> = Vec::new();
            for &(o, v) in &writes {
                let mut b = Vec::new();
                crate::array::le::put(&[v], &mut b);
                items.push((o, b));
            }
            self.away.write_through(&mut items, self.version);
            // Those not set where they are, written here, in order.
            let left: std::collections::HashSet<usize> = items.iter().map(|&(o, _)| o).collect();
            here.retain(|(o, _)| left.contains(o));
        }
        for (o, v) in here {
            self.span_mut(o, o + 1)[0] = v;
        }
    }
}
