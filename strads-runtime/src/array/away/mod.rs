//! Elements of a driver's array that other processes of a cluster job hold
//! (docs/design.md, "Across processes", arrays in parts: written parts stay where they
//! were last written between loops, and come back
//! before serial code touches the array).
//!
//! A [`DistArray`](super::DistArray) carries an [`Away`] cell. The cluster runtime sets it
//! after a call that left parts on other ranks, with the function that fetches them; every
//! accessor of the array's elements first brings them home (once), so serial code always
//! sees the values the loops wrote. The next call across processes *claims* the cell
//! instead: its plan takes the parts from where they are.
//!
//! The invariant that makes the fetch through `&self` sound: while the cell is set, no
//! reference to the array's elements exists. It is set only through a `SharedMut` (which
//! borrows the array mutably) after the call's views are gone, and an accessor hands out a
//! reference only after it found the cell clear (`Acquire`) or cleared it itself, under
//! the cell's lock, after the fetch wrote the elements. The fetch writes them through the
//! pointer the lending took (`Vec::as_mut_ptr`, valid for writes while the `Vec` is
//! neither dropped, which drops the fetch, nor reallocated, which a `DistArray` never is);
//! the array's own fields are never written through `&self`, so reading them costs what
//! it did.
//!
//! Serial code that reads single elements or rows (`a[[i, j]]`, `get`, `row`) brings home
//! only a window of whole rows around them (about 64 KiB, `Fetcher::around`); the rest
//! stays away. What it read home is recorded (`Cell::read`): a reference may point there,
//! so no fetch or lease writes those elements again while the parts are away (they are
//! current: their owners change them only in a call that lends the array mutably, which
//! forgets the record first). A write from serial code (`a[[i, j]] = x`, `get_mut`,
//! `row_mut`; the array borrowed mutably) brings the window around it home for good
//! (`Fetcher::take`): the fetch and the cluster's directory drop it from the parts away,
//! so the next call takes it from the driver. Whole-array access (`as_slice`,
//! `as_mut_slice`, iteration, a clone) brings the rest home, and so does a walk: serial
//! code that reads (or writes) [`WALK`](walk::WALK) windows in a row, each next to the one before and
//! each holding elements away, is taken to go through the whole array, which then comes
//! home at once instead of window by window with every access on the slow path. A read
//! whose window holds every element still away (a small array, brought whole) leaves the
//! array home too.
//!
//! Reads by value, and writes by value of elements other ranks hold (`DistArray::value`,
//! `set`), bring nothing home (`peek`).
//!
//! A call across processes that only reads the array takes a *lease* instead of bringing
//! it home: the parts stay where they are. The call first writes into the array the parts
//! its own workers read (transfers, under the lease, before any of its tasks starts), and
//! its workers (the threads that carry the lease's number, `pool::current_lease`) read
//! the array without fetching; they touch only those parts (the plan's windows). Any
//! other thread that reads the array meanwhile waits for the lease to end, then fetches
//! as usual. So no reference to an element that is away exists outside the lease's
//! workers, and those never reach one, while the fetch can still write it.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

use super::spans::Spans;

mod peek;
mod walk;

pub(crate) use peek::{Copied, PEEKED_BYTES};
use walk::Walk;

/// Fetches the parts held elsewhere into the array's elements (through the pointer its
/// lending took), failing the job when it cannot: all of them, or those around elements
/// serial code reads.
///
/// `read` is what serial code has read home since the parts left: elements a reference may
/// point to, which a fetcher never writes (they are current: the parts' owners did not
/// change them, or the array would have been lent mutably and `read` emptied).
pub(crate) trait Fetcher: Send {
    /// Brings home every element that is away, but those in `read`.
    fn all(self: Box<Self>, read: &Spans);
    /// Brings home the elements of `lo..hi` that are away and not in `read`, with some
    /// around them: the range now readable (holding `lo..hi`), or `None` when this fetch
    /// brings only the whole array.
    fn around(&mut self, lo: usize, hi: usize, read: &Spans) -> Option<(usize, usize)>;
    /// Serial code is about to write elements `lo..hi` (the array borrowed mutably, now
    /// at `version`): brings home the window [`around`](Fetcher::around) would, which
    /// lives here from now on (its owners' copies are stale: the fetch and the directory
    /// drop it); the window, or `None` when this fetch brings only the whole array.
    fn take(&mut self, lo: usize, hi: usize, read: &Spans, version: u64) -> Option<(usize, usize)> {
        let _ = (lo, hi, read, version);
        None
    }
    /// Whether some of elements `lo..hi` are away (not yet here): what makes a window
    /// brought for them a step of a walk ([`WALK`](walk::WALK)). Unknown: yes.
    fn away_within(&self, lo: usize, hi: usize) -> bool {
        let _ = (lo, hi);
        true
    }
    /// Has the ranks that hold the elements away (but those in `read`) write them to the
    /// files `path_of(rank, piece)` names, leaving them where they are: a checkpoint's
    /// pieces; `meanwhile` runs while they do, with the pieces' index ranges. `None` when
    /// this fetch cannot (the caller then copies the array).
    fn save_into(
        &self,
        read: &Spans,
        path_of: &dyn Fn(usize, usize) -> String,
        meanwhile: Meanwhile<'_>,
    ) -> Option<Vec<SavedAway>> {
        let _ = (read, path_of, meanwhile);
        None
    }
    /// A copy of the elements away in the window around `lo..hi` (but those in `read`),
    /// leaving them where they are and writing nothing here (parts made nowhere yet are
    /// copied from the recipe). `None` when this fetch cannot (elements without bytes).
    fn peek(&self, lo: usize, hi: usize, read: &Spans) -> Option<Copied> {
        let _ = (lo, hi, read);
        None
    }
    /// Serial code wrote elements away (the array now at `version`): sets those of `items`
    /// (offset, little-endian bytes) it can where they are held, and removes them.
    fn write_through(&mut self, items: &mut Vec<(usize, Vec<u8>)>, version: u64) {
        let _ = (items, version);
    }
    /// The checksums of the elements away (but those in `read`), each range taken by the
    /// rank that holds it, leaving them where they are: `(lo, hi, checksum)` a range, in
    /// no order. `None` when this fetch cannot (some are made nowhere yet).
    fn digest_away(&self, read: &Spans) -> Option<Vec<(u64, u64, crate::checkpoint::Poly)>> {
        let _ = read;
        None
    }
}

/// What runs while other ranks save their pieces, given the pieces' index ranges.
pub(crate) type Meanwhile<'a> = &'a mut dyn FnMut(&[&[(u64, u64)]]);

/// A piece of an array a rank that holds it wrote for a checkpoint (`resume`).
#[derive(Clone, Debug)]
pub struct SavedAway {
    /// The rank.
    pub rank: usize,
    /// The elements it holds, as index ranges, in the file's order.
    pub region: Vec<(u64, u64)>,
    /// The bytes of those elements (the file holds them and then their checksum).
    pub len: u64,
}

/// Tells the cluster that serial code wrote a window of an array created in place that no
/// call has used yet: `(id, version, regions still to be made)`, the regions `None` when
/// they did not change. Set once, when a driver's session starts.
static MADE_WRITTEN: OnceLock<MadeWritten> = OnceLock::new();

/// What [`made_written`] calls: `(id, version, regions still to be made)`.
pub(crate) type MadeWritten = fn(u64, u64, Option<Vec<(u64, u64)>>);

/// Sets what [`made_written`] calls.
pub(crate) fn on_made_written(f: MadeWritten) {
    let _ = MADE_WRITTEN.set(f);
}

/// Serial code wrote a window of array `id` (created in place, now at `version`): the
/// regions `left` are still to be made where they are needed (`None`: as before).
pub(crate) fn made_written(id: u64, version: u64, left: Option<Vec<(u64, u64)>>) {
    if let Some(f) = MADE_WRITTEN.get() {
        f(id, version, left);
    }
}

/// A [`Fetcher`], boxed.
pub(crate) type Fetch = Box<dyn Fetcher>;

/// A fetch that brings only the whole array, by a function that writes every element
/// that is away: for arrays serial code has read nothing of since the parts left.
#[cfg(test)]
pub(crate) struct Whole<F>(pub F);

#[cfg(test)]
impl<F: FnOnce() + Send> Fetcher for Whole<F> {
    fn all(self: Box<Self>, read: &Spans) {
        // A whole fetch would rewrite what serial code may be reading: the fetches that
        // let serial code read parts (`around`) are those that skip them.
        assert!(
            read.is_empty(),
            "strads: a whole fetch over parts serial code has read"
        );
        (self.0)()
    }

    fn around(&mut self, _: usize, _: usize, _: &Spans) -> Option<(usize, usize)> {
        None
    }
}

/// The fetch of an array with parts away, and what serial code has read home since.
#[derive(Default)]
struct Cell {
    fetch: Option<Fetch>,
    read: Spans,
    /// Serial code's walks over the windows it reads, and over those it writes.
    reads: Walk,
    writes: Walk,
    /// Copies of elements away that serial code read by value (`DistArray::value`).
    peeked: peek::Peeked,
}

impl Cell {
    /// Brings every part still away home (skipping what serial code read, which is home
    /// already); nothing is away afterwards, for the caller to say.
    fn all_home(&mut self) {
        if let Some(f) = self.fetch.take() {
            f.all(&self.read);
        }
        self.forget();
    }

    /// A new fetch, or none: what serial code read, and its walks, start again.
    fn forget(&mut self) {
        self.read.clear();
        self.reads = Walk::default();
        self.writes = Walk::default();
        self.peeked.clear();
    }
}

/// What the cluster runtime does when an array other processes hold copies of is dropped
/// (tells them to drop theirs); set once, when a driver's session starts.
static FORGET: OnceLock<fn(u64)> = OnceLock::new();

/// Sets what [`Forget`] calls.
pub(crate) fn on_forget(f: fn(u64)) {
    let _ = FORGET.set(f);
}

/// Whether other processes hold a copy of an array (its cluster id, or 0): when the array
/// is dropped they are told to drop theirs, so a worker keeps only arrays the driver still
/// has.
///
/// It also says whether checkpoints track the array (its id, or 0), so that they stop
/// waiting for it when it is dropped (module `resume`).
#[derive(Default)]
pub(crate) struct Forget(AtomicU64, AtomicU64);

/// What module `resume` does when an array it tracks is dropped; set once, when
/// checkpoints start.
static UNTRACK: OnceLock<fn(u64)> = OnceLock::new();

/// Sets what a tracked array's drop calls.
pub(crate) fn on_untrack(f: fn(u64)) {
    let _ = UNTRACK.set(f);
}

impl Forget {
    /// Other processes now hold a copy of the array, known to them as `id`.
    pub(crate) fn shared(&self, id: u64) {
        self.0.store(id, Ordering::Relaxed);
    }

    /// Checkpoints track the array, of id `id`.
    pub(crate) fn tracked(&self, id: u64) {
        self.1.store(id, Ordering::Relaxed);
    }
}

impl Drop for Forget {
    fn drop(&mut self) {
        let id = *self.0.get_mut();
        if id != 0
            && let Some(f) = FORGET.get()
        {
            f(id);
        }
        let kept = *self.1.get_mut();
        if kept != 0
            && let Some(f) = UNTRACK.get()
        {
            f(kept);
        }
    }
}

impl std::fmt::Debug for Forget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Forget").finish()
    }
}

/// Elements are packed into [`Away::readable`] by runs of this many (64).
const RUN_BITS: u32 = 6;

/// `[a, b)` packed as the whole runs of `2^RUN_BITS` elements inside it (the first run's and
/// the end's numbers, 32 bits each): 0, nothing, when it holds no whole run or ends
/// beyond what 32 bits number.
fn pack(a: usize, b: usize) -> u64 {
    let first = (a as u64).div_ceil(1 << RUN_BITS);
    let end = b as u64 >> RUN_BITS;
    if first >= end || end > u64::from(u32::MAX) {
        return 0;
    }
    first << 32 | end
}

/// The range [`pack`] packed, empty for 0.
#[inline]
fn unpack(v: u64) -> (usize, usize) {
    if v == 0 {
        return (1, 0);
    }
    (
        ((v >> 32) << RUN_BITS) as usize,
        ((v & u64::from(u32::MAX)) << RUN_BITS) as usize,
    )
}

/// Whether some elements of an array are current only on other processes, and how to
/// fetch them.
#[derive(Default)]
pub(crate) struct Away {
    away: AtomicBool,
    fetch: Mutex<Cell>,
    /// A range of elements serial code has read home while parts are away (inside the
    /// cell's `read`, so nothing writes it until the parts leave again), packed by
    /// [`pack`]: reads inside it skip the cell's lock. 0 (empty) when none.
    readable: AtomicU64,
    /// Whether other processes hold copies (to drop with the array).
    pub(crate) forget: Forget,
    /// How the array was created in place, if it was: what makes the parts no rank has
    /// written since (module `made`).
    recipe: OnceLock<super::made::Recipe>,
    /// The lease a call reading the array holds (0: none), and where other readers wait
    /// for it to end.
    lease: AtomicU64,
    leased: Condvar,
    /// The array's elements, as a pointer taken when it was made (its buffer never moves):
    /// what a lease writes the parts its workers read through.
    base: AtomicUsize,
}

impl Away {
    /// The array was created in place by `recipe`.
    pub(crate) fn made_by(&self, recipe: super::made::Recipe) {
        let _ = self.recipe.set(recipe);
    }

    /// How the array was created in place, if it was.
    pub(crate) fn recipe(&self) -> Option<super::made::Recipe> {
        self.recipe.get().copied()
    }

    /// Whether parts are held elsewhere.
    #[inline]
    pub(crate) fn is_away(&self) -> bool {
        self.away.load(Ordering::Acquire)
    }

    /// Whether elements `lo..hi` were read home while the parts are away (a reference may
    /// point there, so no fetch writes them again until the parts leave anew): reading
    /// them needs no lock.
    #[inline]
    pub(crate) fn readable(&self, lo: usize, hi: usize) -> bool {
        let (a, b) = unpack(self.readable.load(Ordering::Acquire));
        a <= lo && hi <= b
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cell> {
        self.fetch.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cell, once no lease is held (a fetch waits for the lease's call to end).
    ///
    /// # Panics
    /// When an earlier fetch panicked part way (its lock is poisoned): the elements are
    /// not current, and saying so beats returning them.
    fn unleased(&self) -> std::sync::MutexGuard<'_, Cell> {
        let mut cell = self.fetch.lock().unwrap_or_else(|_| failed_fetch());
        while self.lease.load(Ordering::Acquire) != 0 {
            cell = self.leased.wait(cell).unwrap_or_else(|_| failed_fetch());
        }
        cell
    }

    /// Brings the parts home (the first caller; later ones wait for it and find them
    /// home).
    #[cold]
    #[inline(never)]
    pub(crate) fn bring_home(&self) {
        // Under the cell's lock to the end: a lease (taken under it) sees the array away
        // with its fetch, or home, never home-but-marked-away.
        let mut cell = self.unleased();
        cell.all_home();
        self.readable.store(0, Ordering::Release);
        self.away.store(false, Ordering::Release);
        drop(cell);
    }

    /// Makes elements `lo..hi` readable while the rest may stay away: they are home
    /// already, or come home with some around them (the fetch's choice), or, when the
    /// fetch brings only the whole array, everything comes home.
    #[cold]
    #[inline(never)]
    pub(crate) fn bring_range(&self, lo: usize, hi: usize) {
        let mut cell = self.unleased();
        if !self.away.load(Ordering::Acquire) {
            return;
        }
        if cell.read.covers(lo, hi) {
            // Read home already, in another run than the one `readable` holds: it holds
            // this one now (inside `read`, under the lock).
            if let Some((a, b)) = cell.read.containing(lo, hi) {
                self.readable.store(pack(a, b), Ordering::Release);
            }
            return;
        }
        let Cell {
            fetch, read, reads, ..
        } = &mut *cell;
        // Only windows that brought something count: a scan over parts already here (the
        // driver's own rows) is no walk over the rest.
        let away = fetch.as_ref().is_some_and(|f| f.away_within(lo, hi));
        let walked = match fetch.as_mut().and_then(|f| f.around(lo, hi, read)) {
            Some((a, b)) => {
                read.insert(a, b);
                // The run of what was read home that holds this window: serial code that
                // goes on reading inside it (the driver's own rows, say) takes no lock.
                if let Some((a, b)) = read.containing(a, b) {
                    self.readable.store(pack(a, b), Ordering::Release);
                }
                // A window that holds every element away (a small array made or fetched
                // whole at its first read): the array is home, and later reads are plain.
                let rest = fetch
                    .as_ref()
                    .is_some_and(|f| f.away_within(0, a) || f.away_within(b, usize::MAX));
                !rest || (away && reads.step(a, b))
            }
            None => true,
        };
        if walked {
            cell.all_home();
            self.readable.store(0, Ordering::Release);
            self.away.store(false, Ordering::Release);
        }
    }

    /// Serial code is about to write elements `lo..hi` (the array borrowed mutably, now at
    /// `version`): they come home with a window around them, which stays home; the rest
    /// stays away. When the fetch brings only the whole array, everything comes home.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_range(&mut self, lo: usize, hi: usize, version: u64) {
        let cell = self.fetch.get_mut().unwrap_or_else(|_| failed_fetch());
        // Copies of what is written are stale: all go (serial writes are rare).
        cell.peeked.clear();
        let Cell {
            fetch,
            read,
            writes,
            ..
        } = &mut *cell;
        let away = fetch.as_ref().is_some_and(|f| f.away_within(lo, hi));
        let walked = match fetch.as_mut().and_then(|f| f.take(lo, hi, read, version)) {
            Some((a, b)) => away && writes.step(a, b),
            None => true,
        };
        if walked {
            cell.all_home();
            *self.readable.get_mut() = 0;
            *self.away.get_mut() = false;
        }
    }

    /// [`bring_home`](Away::bring_home) with the array borrowed mutably.
    #[cold]
    #[inline(never)]
    pub(crate) fn bring_home_mut(&mut self) {
        self.fetch
            .get_mut()
            .unwrap_or_else(|_| failed_fetch())
            .all_home();
        *self.readable.get_mut() = 0;
        *self.away.get_mut() = false;
    }

    /// Whether this thread may read the array's home parts as they are: it works for the
    /// call that holds the array's lease.
    #[inline]
    pub(crate) fn leased_here(&self) -> bool {
        let lease = self.lease.load(Ordering::Acquire);
        lease != 0 && crate::pool::current_lease() == lease
    }

    /// The array's elements were made at `base` (see the field).
    pub(crate) fn set_base(&mut self, base: usize) {
        *self.base.get_mut() = base;
    }

    /// A call across processes that reads the array takes lease `id` (not 0) while its
    /// parts stay away; `None` (nothing to lease) when they are home.
    pub(crate) fn lease(&self, id: u64) -> Option<Lease<'_>> {
        let cell = self.lock();
        if !self.away.load(Ordering::Acquire) {
            return None;
        }
        self.lease.store(id, Ordering::Release);
        Some(Lease {
            away: self,
            read: cell.read.clone(),
        })
    }

    /// Whether parts are held elsewhere, with the array borrowed mutably (a plain load).
    #[inline]
    pub(crate) fn is_away_mut(&mut self) -> bool {
        *self.away.get_mut()
    }

    /// Parts are held elsewhere from now on; `fetch` brings them home. Called only while
    /// the array is lent mutably and no view of it is alive (so no reference to what
    /// serial code read before exists either).
    pub(crate) fn leave(&self, fetch: Fetch) {
        let mut cell = self.lock();
        cell.fetch = Some(fetch);
        cell.forget();
        self.readable.store(0, Ordering::Release);
        self.away.store(true, Ordering::Release);
    }

    /// Runs `f` with the fetch (`None` when nothing is away) and what serial code read
    /// home, under the cell's lock once no lease is held: no fetch writes the elements
    /// meanwhile.
    pub(crate) fn locked<R>(&self, f: impl FnOnce(Option<&dyn Fetcher>, &Spans) -> R) -> R {
        let cell = self.unleased();
        f(cell.fetch.as_deref().map(|b| b as &dyn Fetcher), &cell.read)
    }

    /// A call across processes takes the parts from where they are: the cell is cleared
    /// without fetching (the array is lent mutably: what serial code read is forgotten).
    /// Returns whether parts were away.
    pub(crate) fn claim(&self) -> bool {
        let mut cell = self.lock();
        let had = cell.fetch.take().is_some();
        cell.forget();
        self.readable.store(0, Ordering::Release);
        self.away.store(false, Ordering::Release);
        had
    }
}

/// A call's lease on an array whose parts stay away while the call reads it (see the
/// module docs); it ends when dropped, and readers waiting for it go on.
pub(crate) struct Lease<'a> {
    away: &'a Away,
    /// What serial code had read home when the lease began: current, and maybe
    /// referenced, so the lease writes none of it.
    read: Spans,
}

impl Lease<'_> {
    /// Elements serial code had read home when the lease began, which it must not write.
    pub(crate) fn read(&self) -> &Spans {
        &self.read
    }

    /// The array's elements, to write the parts this process's workers read before they
    /// start: no reference to an element that is away exists, and none is made before
    /// the lease's workers start.
    pub(crate) fn base(&self) -> usize {
        self.away.base.load(Ordering::Relaxed)
    }

    /// After the call: `fetch` brings home what is still away (`None`: nothing is).
    pub(crate) fn settle(&self, fetch: Option<Fetch>) {
        let mut cell = self.away.lock();
        let away = fetch.is_some();
        cell.fetch = fetch;
        // Copies are of the fetch they came from.
        cell.peeked.clear();
        if !away {
            cell.forget();
            self.away.readable.store(0, Ordering::Release);
        }
        self.away.away.store(away, Ordering::Release);
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let _fetch = self.away.lock();
        self.away.lease.store(0, Ordering::Release);
        self.away.leased.notify_all();
    }
}

/// An earlier fetch of an array's parts panicked part way.
#[cold]
fn failed_fetch() -> ! {
    panic!(
        "strads: fetching this array's parts from other ranks failed earlier; its elements \
         are not current"
    )
}

impl std::fmt::Debug for Away {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Away")
            .field("away", &self.is_away())
            .finish()
    }
}

#[cfg(test)]
mod tests;
