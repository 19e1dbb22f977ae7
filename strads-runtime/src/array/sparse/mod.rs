//! [`SparseArray`]: the coordinate-list array most loops iterate.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use super::cache::PlanCache;
use super::fresh_id;
use super::spread::{Spread, SpreadOps};
use crate::error::{Error, Result};

mod byvalue;
mod iter;
mod moved;
mod order;

pub use byvalue::SparseValuesIter;
pub use iter::{SparseIter, SparseIterMut};
pub(crate) use order::{is_permutation, permute, unpermute};

/// A sparse N-dimensional array in coordinate-list form: the iteration space of most
/// training loops (one entry per rating, per sample, per token).
///
/// Entries keep the order they were given in; iterating yields `([usize; N], &T)`.
///
/// ```
/// use strads_runtime::SparseArray;
/// let r = SparseArray::from_entries([2, 3], vec![([0, 2], 4.0f32), ([1, 0], 3.0)]).unwrap();
/// let keys: Vec<_> = r.iter().map(|(k, _)| k).collect();
/// assert_eq!(keys, vec![[0, 2], [1, 0]]);
/// ```
pub struct SparseArray<T, const N: usize> {
    shape: [usize; N],
    nnz: usize,
    /// The entries: set when the array is made, except for a spread array, whose entries
    /// are set when serial code first needs them whole (its parts brought home), and
    /// after an `iter_mut()` call, when `values_away` holds them until something reads
    /// them.
    entries: OnceLock<Entries<T, N>>,
    /// On a cluster job's driver, the parts of an array made in place on the ranks.
    spread: Option<Spread<T, N>>,
    id: u64,
    /// Bumped whenever the values may change (`iter_mut`): with `id`, what a cluster
    /// worker's copy is cached under.
    values_version: u64,
    pub(crate) cache: PlanCache,
    /// Whether cluster workers hold a copy (dropped with this array).
    pub(crate) forget: crate::array::away::Forget,
    /// Whether the entries are in index order, found once (the keys never change).
    sorted: OnceLock<bool>,
    /// After an `iter_mut()` call: its values in its order, and on a cluster job's driver,
    /// after a call that crossed processes, the values of the entries other ranks ran,
    /// which stay there (`entries` is unset meanwhile).
    values_away: Option<ValuesAway<T, N>>,
    /// Copies of windows of a spread array's entries that serial code read by value
    /// (`byvalue.rs`).
    peeked: std::sync::Mutex<Vec<byvalue::Window<T, N>>>,
}

/// Values of a sparse array that other processes hold (an `iter_mut()` loop's, kept on
/// the ranks that ran their entries), and how to bring them home.
pub(crate) trait AwayValues<T>: Send + Sync {
    /// Puts the values the other ranks hold into `values` (the array's, by entry), the
    /// others left as they are. Fails the job when a rank cannot give them.
    fn bring_home(&self, values: &mut [T]);
    /// Their bytes, as they were sent.
    fn bytes(&self) -> u64;
    /// As `Any`, to take it back with its type.
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any>;
}

/// An array whose values are out of place after an `iter_mut()` call: its indices (shared
/// with the entries once they are back), the values this process holds (in the call's
/// order when there is one, else by entry; the entries other ranks hold are
/// placeholders), and the values away, if any. A next call in the same order takes the
/// values as they are, without ordering them again.
struct ValuesAway<T, const N: usize> {
    keys: Arc<Vec<[u32; N]>>,
    /// The values, and the order they are in. Taken when they come back.
    here: Mutex<Option<Here<T>>>,
    away: Option<Box<dyn AwayValues<T>>>,
}

/// Values out of place, and their order: `values[j]` is the value of entry `order[j]` (a
/// permutation of the entries), or with no order, of entry `j`.
type Here<T> = (Vec<T>, Option<Vec<u32>>);

/// How an `iter_mut()` call takes an array's values ([`SparseArray::take_for_call`]).
pub(crate) struct Lent<T> {
    /// The values, in entry order; empty when `ordered` holds them.
    pub values: Vec<T>,
    /// The values already in the call's order, as the last call left them.
    pub ordered: Option<Vec<T>>,
    /// The values the last call left on other ranks, and whether serial code read them
    /// home since (they are in `values` then, and the ranks' copies still equal them).
    pub away: Option<(Box<dyn AwayValues<T>>, bool)>,
}

/// A sparse array's entries: indices (which never change, shared with a `ValuesAway`)
/// and values.
struct Entries<T, const N: usize> {
    keys: Arc<Vec<[u32; N]>>,
    values: Vec<T>,
}

impl<T, const N: usize> SparseArray<T, N> {
    /// A sparse array of the given entries; fails when an index is outside `shape` or a
    /// dimension exceeds `u32::MAX + 1` (indices are stored as `u32`).
    ///
    /// On a cluster job's driver, an array of numbers of 1 MiB or more is made in parts, as
    /// [`from_entries_iter`](Self::from_entries_iter) says.
    pub fn from_entries(shape: [usize; N], entries: Vec<([usize; N], T)>) -> Result<Self>
    where
        T: 'static,
    {
        Self::from_entries_iter(shape, entries)
    }

    /// [`from_entries`](Self::from_entries) from an iterator: the entries go straight
    /// into the array, with no vector of them all besides (for a large array made entry
    /// by entry, that vector is as large again as the array).
    ///
    /// On a cluster job's driver, an array of numbers or of `Vec`s of numbers (1 to 4 dims)
    /// whose entries take 1 MiB or more ([`MADE_IN_PARTS_BYTES`](crate::cluster::MADE_IN_PARTS_BYTES),
    /// indices and values, a list counted as 8 bytes) is made in parts when the iterator says exactly how many entries it gives
    /// (`size_hint`, as a `Vec`'s or a range's mapped do): the entries, taken here in
    /// order, are split evenly over the ranks, the driver keeps the first share and sends
    /// every other rank its share 1 MiB at a time, so the array is *spread*, as a loader
    /// makes it (loops run over its parts where they are, and serial code that reads its
    /// entries brings them home). A panic in the iterator panics this function, and every
    /// rank lets go of what it received.
    ///
    /// ```
    /// use strads_runtime::SparseArray;
    /// let a = SparseArray::from_entries_iter([3, 3], (0..3).map(|i| ([i, 2 - i], i as f32)))?;
    /// assert_eq!(a.nnz(), 3);
    /// assert_eq!(a.entry(2), ([2, 0], &2.0));
    /// # Ok::<(), strads_runtime::Error>(())
    /// ```
    pub fn from_entries_iter(
        shape: [usize; N],
        entries: impl IntoIterator<Item = ([usize; N], T)>,
    ) -> Result<Self>
    where
        T: 'static,
    {
        if let Some(d) = shape.iter().find(|&&d| d > u32::MAX as usize + 1) {
            return Err(Error::Shape(format!(
                "sparse array dimension {d} exceeds the supported {}",
                u32::MAX as u64 + 1
            )));
        }
        let mut entries = entries.into_iter();
        if let Some(made) = crate::array::inparts::from_entries(shape, &mut entries) {
            return made;
        }
        let mut keys = Vec::with_capacity(entries.size_hint().0);
        let mut values = Vec::with_capacity(entries.size_hint().0);
        for (k, v) in entries {
            if k.iter().zip(&shape).any(|(i, s)| i >= s) {
                return Err(Error::OutOfBounds {
                    context: format!("entry {}: ", keys.len()),
                    index: k.to_vec(),
                    shape: shape.to_vec(),
                });
            }
            keys.push(k.map(|i| i as u32));
            values.push(v);
        }
        Ok(Self::from_raw(shape, keys, values))
    }

    /// A spread array: `nnz` entries in parts on the ranks of a cluster job (`sorted`:
    /// whether they are in index order), known to the ranks as `id`.
    pub(crate) fn from_spread(
        shape: [usize; N],
        nnz: usize,
        sorted: bool,
        id: u64,
        spread: Spread<T, N>,
    ) -> Self {
        let forget = crate::array::away::Forget::default();
        forget.shared(id);
        SparseArray {
            shape,
            nnz,
            entries: OnceLock::new(),
            spread: Some(spread),
            id,
            values_version: 0,
            cache: PlanCache::default(),
            forget,
            sorted: OnceLock::from(sorted),
            values_away: None,
            peeked: Default::default(),
        }
    }

    /// The parts on the ranks, while the array is spread and not yet brought home.
    pub(crate) fn spread(&self) -> Option<&Arc<dyn SpreadOps>> {
        match &self.spread {
            Some(s) if self.entries.get().is_none() => Some(&s.ops),
            _ => None,
        }
    }

    /// The entries, brought home first when the array is spread: every rank sends its part
    /// (the cost of a whole copy on this process); or when an `iter_mut()` call left
    /// its values in its order (put in entry order) or on other ranks (each sends those it
    /// holds).
    fn home(&self) -> &Entries<T, N> {
        if let Some(e) = self.entries.get() {
            return e;
        }
        // Reads by value (`byvalue.rs`) fetch windows from the parts under this lock: the
        // parts are not brought home (and let go on the ranks) meanwhile, and their copies
        // go once the entries are here.
        let mut peeked = self.peeked.lock().unwrap_or_else(|e| e.into_inner());
        peeked.clear();
        self.entries.get_or_init(|| {
            if let Some(va) = &self.values_away {
                let (mut values, order) = va
                    .here
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .expect("the values held here, until they are all home");
                if let Some(order) = order {
                    unpermute(&mut values, &order);
                }
                if let Some(away) = &va.away {
                    away.bring_home(&mut values);
                }
                return Entries {
                    keys: va.keys.clone(),
                    values,
                };
            }
            let spread = self
                .spread
                .as_ref()
                .expect("an array without entries is spread");
            let parts = spread.ops.gather();
            match (spread.decode)(parts, &self.shape) {
                Ok((keys, values)) => {
                    // The ranks let their parts go as they sent them (`strads::gather`);
                    // this process its blocks of the spread grid (a plan cached with them
                    // keeps them while it lives).
                    self.cache.drop_where(|k| k.starts_with("spread"));
                    Entries {
                        keys: Arc::new(keys),
                        values,
                    }
                }
                Err(e) => spread.ops.fail(e),
            }
        })
    }

    /// The entries to change: a spread array comes home and stops being spread (its parts
    /// on the ranks would be stale).
    /// Every value may change from here: workers' copies and the blocks a loop over the
    /// entries bucketed (`space/sparse.rs`: keys `buckets:..` and `by:..`, which copy the
    /// values) are stale; plans and the indices' buckets (`keys:..`) stay.
    fn home_mut(&mut self) -> &mut Entries<T, N> {
        self.home();
        self.spread = None;
        self.values_away = None;
        self.values_version += 1;
        self.cache
            .drop_where(|k| k.starts_with("buckets:") || k.starts_with("by:"));
        self.entries.get_mut().expect("brought home")
    }

    /// After an `iter_mut()` call: its values stay out of the entries until serial code
    /// reads them or the next call takes them: in the call's `order` (`values[j]` is entry
    /// `order[j]`'s, `order` a permutation of the entries), or by entry without one;
    /// `away`: the values of the entries other ranks ran stay there (brought home when
    /// something reads them).
    pub(crate) fn keep_out(
        &mut self,
        values: Vec<T>,
        order: Option<Vec<u32>>,
        away: Option<Box<dyn AwayValues<T>>>,
    ) {
        debug_assert!(order.as_ref().is_none_or(|o| o.len() == self.nnz));
        debug_assert_eq!(values.len(), self.nnz);
        let keys = self.home_mut().keys.clone();
        self.entries = OnceLock::new();
        self.values_away = Some(ValuesAway {
            keys,
            here: Mutex::new(Some((values, order))),
            away,
        });
    }

    /// The values for an `iter_mut()` call that takes them in `order`: as the last call
    /// left them when it took them in the same order (and serial code did not read them
    /// since), else in entry order; with the values the last call left on other ranks.
    /// The entries hold no values until the call gives them back.
    pub(crate) fn take_for_call(&mut self, order: &[u32]) -> Lent<T> {
        let mut ordered = None;
        let mut away = None;
        if let Some(va) = self.values_away.take() {
            if self.entries.get().is_some() {
                // Read home since: every value is in the entries, in entry order.
                away = va.away.map(|a| (a, true));
            } else {
                let (mut here, kept_order) = va
                    .here
                    .into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("the values held here");
                let values = match kept_order {
                    Some(o) if o.as_slice() == order => {
                        ordered = Some(here);
                        Vec::new()
                    }
                    Some(o) => {
                        unpermute(&mut here, &o);
                        here
                    }
                    None => here,
                };
                self.entries = OnceLock::from(Entries {
                    keys: va.keys,
                    values,
                });
                away = va.away.map(|a| (a, false));
            }
        }
        let values = self.take_values();
        Lent {
            values,
            ordered,
            away,
        }
    }

    /// Bytes of the entries on other ranks while the array is spread (not brought home):
    /// 0 otherwise.
    pub(crate) fn spread_bytes(&self) -> u64 {
        match self.spread() {
            Some(_) => (self.nnz as u64).saturating_mul((4 * N + std::mem::size_of::<T>()) as u64),
            None => 0,
        }
    }

    /// Whether an `iter_mut()` call left values of this array on other ranks (not yet
    /// brought home).
    pub fn values_away(&self) -> bool {
        self.values_away
            .as_ref()
            .is_some_and(|va| va.away.is_some())
            && self.entries.get().is_none()
    }

    /// Bytes of the values away (as they were sent), 0 when none are.
    pub(crate) fn values_away_bytes(&self) -> u64 {
        match &self.values_away {
            Some(va) if self.entries.get().is_none() => va.away.as_ref().map_or(0, |a| a.bytes()),
            _ => 0,
        }
    }

    /// Brings a spread array's entries home now (what serial code reading it does
    /// anyway): every rank sends this process its part; values an `iter_mut()` call left
    /// on other ranks come home too. Nothing happens when the entries are here already.
    pub fn gather(&self) {
        self.home();
    }

    /// Whether the entries are in parts on the ranks of a cluster job, not (yet) here.
    pub fn is_spread(&self) -> bool {
        self.spread().is_some()
    }

    /// The array's shape (the bounds of every index).
    pub fn shape(&self) -> [usize; N] {
        self.shape
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.nnz
    }

    /// Number of stored entries (same as [`nnz`](Self::nnz)).
    pub fn len(&self) -> usize {
        self.nnz
    }

    /// Whether no entry is stored.
    pub fn is_empty(&self) -> bool {
        self.nnz == 0
    }

    /// Entry `n` (in storage order). An array in parts on a cluster job's ranks comes home
    /// whole first; [`entry_value`](Self::entry_value) reads a copy instead.
    #[inline]
    pub fn entry(&self, n: usize) -> ([usize; N], &T) {
        let e = self.home();
        (e.keys[n].map(|i| i as usize), &e.values[n])
    }

    /// Entry `n` (in storage order), its value mutable.
    #[inline]
    pub fn entry_mut(&mut self, n: usize) -> ([usize; N], &mut T) {
        let e = self.home_mut();
        (e.keys[n].map(|i| i as usize), &mut e.values[n])
    }

    /// The stored entries in order, values mutable (the indices are fixed). A
    /// `#[parallel_for]` loop over `a.iter_mut()` gives each iteration its own value.
    pub fn iter_mut(&mut self) -> SparseIterMut<'_, T, N> {
        let e = self.home_mut();
        SparseIterMut {
            keys: e.keys.iter(),
            values: e.values.iter_mut(),
        }
    }

    /// Takes the values out (leaving none) and gives them back with
    /// [`restore_values`](Self::restore_values) (a checkpoint's restore; an `iter_mut()`
    /// call takes them with [`take_for_call`](Self::take_for_call)).
    pub(crate) fn take_values(&mut self) -> Vec<T> {
        std::mem::take(&mut self.home_mut().values)
    }

    pub(crate) fn restore_values(&mut self, values: Vec<T>) {
        let e = self.home_mut();
        debug_assert_eq!(values.len(), e.keys.len());
        e.values = values;
    }

    /// The stored entries in order. An array in parts on a cluster job's ranks comes home
    /// whole first; [`iter_values`](Self::iter_values) reads them a window at a time.
    pub fn iter(&self) -> SparseIter<'_, T, N> {
        let e = self.home();
        SparseIter {
            keys: e.keys.iter(),
            values: e.values.iter(),
        }
    }

    /// The same entries sorted by index (lexicographically, stable for equal indices).
    /// Ordered loops over a sparse array follow index order, so they need this.
    pub fn sorted(mut self) -> Self {
        let e = std::mem::replace(
            self.home_mut(),
            Entries {
                keys: Arc::from(Vec::new()),
                values: Vec::new(),
            },
        );
        let mut order: Vec<usize> = (0..e.keys.len()).collect();
        order.sort_by_key(|&i| e.keys[i]);
        let mut values: Vec<Option<T>> = e.values.into_iter().map(Some).collect();
        Self::from_raw(
            self.shape,
            order.iter().map(|&i| e.keys[i]).collect(),
            order
                .iter()
                .map(|&i| values[i].take().expect("each entry once"))
                .collect(),
        )
    }

    /// Whether the entries are in index order.
    pub fn is_sorted(&self) -> bool {
        *self.sorted.get_or_init(|| self.raw_keys().is_sorted())
    }

    /// The stored values in order.
    pub fn values(&self) -> &[T] {
        &self.home().values
    }

    /// Process-unique identity of this array (a clone gets a new one).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// `(id, 0)`: a sparse array's entries never change.
    pub fn contents_key(&self) -> (u64, u64) {
        (self.id, 0)
    }

    /// `(id, version)` of the entries and values: changes whenever a value may have.
    pub(crate) fn wire_key(&self) -> (u64, u64) {
        (self.id, self.values_version)
    }

    /// An array of these raw entries (a cluster worker's copy).
    pub(crate) fn from_raw(shape: [usize; N], mut keys: Vec<[u32; N]>, mut values: Vec<T>) -> Self {
        // The array keeps both vectors as they are: without more than an eighth spare
        // (a vector grown by pushing may hold twice its length).
        if keys.capacity() - keys.len() > keys.len() / 8 {
            keys.shrink_to_fit();
        }
        if values.capacity() - values.len() > values.len() / 8 {
            values.shrink_to_fit();
        }
        SparseArray {
            shape,
            nnz: keys.len(),
            entries: OnceLock::from(Entries {
                keys: Arc::new(keys),
                values,
            }),
            spread: None,
            id: fresh_id(),
            values_version: 0,
            cache: PlanCache::default(),
            forget: Default::default(),
            sorted: OnceLock::new(),
            values_away: None,
            peeked: Default::default(),
        }
    }

    /// How many values this process holds in the entries: `nnz`, or none in a worker's
    /// keys-only copy (an `iter_mut()` loop's array, whose values come with each call).
    pub(crate) fn values_held(&self) -> usize {
        self.entries.get().map_or(0, |e| e.values.len())
    }

    /// The indices (never fetched: values left on other ranks stay there).
    pub(crate) fn raw_keys(&self) -> &[[u32; N]] {
        match (self.entries.get(), &self.values_away) {
            (Some(e), _) => &e.keys,
            (None, Some(va)) => &va.keys,
            (None, None) => &self.home().keys,
        }
    }
}

impl<T: Clone, const N: usize> Clone for SparseArray<T, N> {
    /// A whole copy: a spread array comes home first.
    fn clone(&self) -> Self {
        let e = self.home();
        Self::from_raw(self.shape, e.keys.to_vec(), e.values.clone())
    }
}

impl<T, const N: usize> fmt::Debug for SparseArray<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SparseArray")
            .field("shape", &self.shape)
            .field("nnz", &self.nnz)
            .field("spread", &self.is_spread())
            .field("values_away", &self.values_away())
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
