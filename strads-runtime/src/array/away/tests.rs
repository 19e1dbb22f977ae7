use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use super::*;
use crate::array::DistArray;
use crate::array::view::SharedMut;

/// Leaves `a` away with a fetch that writes `value` into its elements 2..4 and
/// counts its runs.
fn leave(a: &mut DistArray<f32, 1>, value: f32, runs: &Arc<AtomicUsize>) {
    let runs = runs.clone();
    let s = SharedMut::new(a);
    let base = s.raw().0 as usize;
    s.leave(Box::new(super::Whole(move || {
        runs.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the lent array's 6 elements; no reference to them exists while they
        // are away.
        let d = unsafe { std::slice::from_raw_parts_mut(base as *mut f32, 6) };
        d[2..4].fill(value);
    })));
}

#[test]
fn readers_on_many_threads_fetch_once_and_see_the_parts() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut a = DistArray::<f32, 1>::zeros([6]);
    leave(&mut a, 7.0, &runs);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(a.as_slice(), &[0.0, 0.0, 7.0, 7.0, 0.0, 0.0]));
        }
    });
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert_eq!(a[3], 7.0);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[test]
fn writers_clones_and_views_fetch_first_and_a_claim_does_not() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut a = DistArray::<f32, 1>::zeros([6]);
    leave(&mut a, 1.0, &runs);
    a[2] += 1.0;
    assert_eq!(a.as_slice(), &[0.0, 0.0, 2.0, 1.0, 0.0, 0.0]);
    leave(&mut a, 3.0, &runs);
    let b = a.clone();
    assert_eq!(b.as_slice(), &[0.0, 0.0, 3.0, 3.0, 0.0, 0.0]);
    leave(&mut a, 5.0, &runs);
    {
        // A loop that runs on this process alone: its views see the parts.
        let s = SharedMut::new(&mut a);
        let w = crate::array::view::Window::All { writable: false };
        assert_eq!(s.view("a", &w, None)[3], 5.0);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    leave(&mut a, 9.0, &runs);
    {
        // A call across processes takes the parts from where they are.
        let s = SharedMut::new(&mut a);
        assert!(s.is_away());
        assert!(s.claim());
        assert!(!s.is_away());
    }
    assert_eq!(a[3], 5.0);
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

/// A fetch by windows: what it wrote, and where (element ranges).
struct Windows {
    base: usize,
    len: usize,
    value: f32,
    wrote: Arc<Mutex<Vec<(usize, usize)>>>,
    /// Elements below are here (never away).
    away_from: usize,
    /// The windows copied (`peek`).
    peeked: Arc<Mutex<Vec<(usize, usize)>>>,
    /// The windows serial code took home to write (no longer away).
    taken: Vec<(usize, usize)>,
}

impl Windows {
    fn write(&self, ranges: &[(u64, u64)]) {
        for &(lo, hi) in ranges {
            let (lo, hi) = (lo as usize, hi as usize);
            self.wrote.lock().unwrap().push((lo, hi));
            // SAFETY: elements `lo..hi` of the test's array (`base`, `len`); they are
            // away and not read home, so no reference to them exists.
            let d = unsafe { std::slice::from_raw_parts_mut(self.base as *mut f32, self.len) };
            d[lo..hi].fill(self.value);
        }
    }
}

impl Fetcher for Windows {
    fn all(self: Box<Self>, read: &Spans) {
        // Not the windows brought before: read ones are current, taken ones written.
        let mut before = Spans::default();
        for &(a, b) in self.wrote.lock().unwrap().iter() {
            before.insert(a, b);
        }
        let rest: Vec<(u64, u64)> = read
            .outside(&[(0, self.len as u64)])
            .into_iter()
            .flat_map(|r| before.outside(&[r]))
            .collect();
        self.write(&rest);
    }

    fn around(&mut self, lo: usize, hi: usize, read: &Spans) -> Option<(usize, usize)> {
        let (a, b) = crate::array::spans::window(&[self.len / 64, 64], 4, lo, hi);
        // A window taken home is no longer away: nothing to bring.
        if !self.taken.contains(&(a, b)) {
            self.write(&read.outside(&[(a as u64, b as u64)]));
        }
        Some((a, b))
    }

    fn away_within(&self, lo: usize, hi: usize) -> bool {
        hi > self.away_from && !self.taken.iter().any(|&(a, b)| a <= lo && hi <= b)
    }

    fn peek(&self, lo: usize, hi: usize, read: &Spans) -> Option<super::Copied> {
        let (a, b) = crate::array::spans::window(&[self.len / 64, 64], 4, lo, hi);
        self.peeked.lock().unwrap().push((a, b));
        let ranges = read.outside(&[(a.max(self.away_from) as u64, b as u64)]);
        let n: u64 = ranges.iter().map(|&(x, y)| y - x).sum();
        Some(super::Copied {
            window: (a as u64, b as u64),
            ranges,
            bytes: self.value.to_le_bytes().repeat(n as usize),
        })
    }

    fn take(&mut self, lo: usize, hi: usize, read: &Spans, _: u64) -> Option<(usize, usize)> {
        // A window taken is home for good: written once (serial code writes it after).
        let (a, b) = crate::array::spans::window(&[self.len / 64, 64], 4, lo, hi);
        if !self.wrote.lock().unwrap().contains(&(a, b)) {
            self.write(&read.outside(&[(a as u64, b as u64)]));
        }
        self.taken.push((a, b));
        Some((a, b))
    }
}

/// `a`'s elements from `away_from` on are away, fetched by [`Windows`] (every value 7.0,
/// `len` elements), which logs each range it writes into `wrote`.
fn leave_windows(
    a: &mut DistArray<f32, 2>,
    wrote: &Arc<Mutex<Vec<(usize, usize)>>>,
    len: usize,
    away_from: usize,
) {
    let s = SharedMut::new(a);
    let base = s.raw().0 as usize;
    s.leave(Box::new(Windows {
        base,
        len,
        value: 7.0,
        wrote: wrote.clone(),
        away_from,
        peeked: Default::default(),
        taken: Vec::new(),
    }));
}

/// Reads by value copy the windows of elements away, write nothing into the array and
/// keep at most `PEEKED_BYTES` of copies (the least recently read go); elements here, or
/// read home, are read where they are; new parts away forget the copies.
#[test]
fn reads_by_value_copy_windows_into_a_bounded_cache() {
    // 8 MiB of `f32`, windows of 256 rows (64 KiB); rows from 256 on are away.
    let rows = 1 << 15;
    let mut a = DistArray::<f32, 2>::zeros([rows, 64]);
    let wrote = Arc::new(Mutex::new(Vec::new()));
    let peeked = Arc::new(Mutex::new(Vec::new()));
    let leave = |a: &mut DistArray<f32, 2>, value: f32| {
        let s = SharedMut::new(a);
        let base = s.raw().0 as usize;
        s.leave(Box::new(Windows {
            base,
            len: rows * 64,
            value,
            wrote: wrote.clone(),
            away_from: 256 * 64,
            peeked: peeked.clone(),
            taken: Vec::new(),
        }));
    };
    leave(&mut a, 7.0);
    let copies = || peeked.lock().unwrap().len();
    // One element of every window away: 127 windows, 8 MiB, of which 4 MiB are kept.
    for r in (256..rows).step_by(256) {
        assert_eq!(a.value([r + 1, 2]), 7.0);
    }
    assert_eq!(copies(), 127);
    assert!(
        wrote.lock().unwrap().is_empty(),
        "a read by value wrote the array"
    );
    assert_eq!(a.away().peeked_bytes(), PEEKED_BYTES);
    // The last windows are kept; the first went.
    assert_eq!(a.value([rows - 1, 63]), 7.0);
    assert_eq!(copies(), 127);
    assert_eq!(a.value([256, 0]), 7.0);
    assert_eq!(copies(), 128);
    assert_eq!(a.row_values(257), vec![7.0; 64]);
    assert_eq!(copies(), 128);
    // A reference brings its window home; reads by value there read it in place.
    assert_eq!(a[[5000, 0]], 7.0);
    assert_eq!(wrote.lock().unwrap().len(), 1);
    assert_eq!(a.value([5001, 3]), 7.0);
    assert_eq!(copies(), 128);
    // Serial code writes an element it read a copy of: its window comes home, and the
    // copies are forgotten; the written value is read where it is.
    assert_eq!(a.value([9000, 1]), 7.0);
    a[[9000, 1]] = 3.0;
    assert_eq!(a.away().peeked_bytes(), 0);
    assert_eq!(a.value([9000, 1]), 3.0);
    assert_eq!(a.value([9001, 2]), 7.0, "the window taken home");
    assert_eq!(copies(), 129);
    // Parts that left anew (a call wrote them): the copies are forgotten.
    leave(&mut a, 9.0);
    assert_eq!(a.away().peeked_bytes(), 0);
    assert_eq!(a.value([rows - 1, 63]), 9.0);
    assert_eq!(copies(), 130);
    // An element here is read where it is (no copy; this fake's window brings its
    // neighbours as a real fetch brings those away).
    a.value([3, 5]);
    assert_eq!(copies(), 130);
}

/// Serial reads bring home only the windows around them, and references to what they
/// read stay valid while the rest comes home: no later fetch writes a window read.
#[test]
fn reads_bring_windows_and_a_whole_fetch_skips_them() {
    let mut a = DistArray::<f32, 2>::zeros([1000, 64]);
    let wrote = Arc::new(Mutex::new(Vec::new()));
    leave_windows(&mut a, &wrote, 64_000, 0);
    let first = &a[[3, 5]];
    assert_eq!(*first, 7.0);
    assert_eq!(*wrote.lock().unwrap(), vec![(0, 256 * 64)]);
    let row = a.row(600);
    assert_eq!(row, &[7.0; 64][..]);
    assert_eq!(a.get([2, 1]), Some(&7.0));
    assert_eq!(
        wrote.lock().unwrap().len(),
        2,
        "a read of a window home fetched"
    );
    // The rest comes home around the two windows read, which stay as they were.
    assert!(a.as_slice().iter().all(|&x| x == 7.0));
    assert_eq!(
        *wrote.lock().unwrap(),
        vec![
            (0, 16_384),
            (32_768, 49_152),
            (16_384, 32_768),
            (49_152, 64_000)
        ]
    );
    assert_eq!((*first, row[63]), (7.0, 7.0));
}

/// A lease: its threads read the home parts without fetching; another reader waits
/// for the lease to end, then fetches once; a part written under the lease is there.
#[test]
fn a_lease_keeps_parts_away_for_its_threads_and_others_wait_for_it() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mut a = DistArray::<f32, 1>::zeros([6]);
    leave(&mut a, 4.0, &runs);
    let lease = a.away().lease(42).expect("parts are away");
    // Under the lease, the part a worker reads is written in first.
    // SAFETY: element 0 is not referenced (the array is away and no lease thread runs).
    unsafe { *(lease.base() as *mut f32) = 1.0 };
    let waited = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let _mine = crate::pool::enter_lease(42);
            assert_eq!(a[0], 1.0);
            assert_eq!(runs.load(Ordering::SeqCst), 0, "a lease thread fetched");
        })
        .join()
        .unwrap();
        let other = s.spawn(|| {
            let v = a[3];
            assert!(waited.load(Ordering::SeqCst), "read before the lease ended");
            v
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited.store(true, Ordering::SeqCst);
        lease.settle(None);
        drop(lease);
        // The lease settled with nothing away: the other reader reads what is here.
        assert_eq!(other.join().unwrap(), 0.0);
    });
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert!(a.away().lease(43).is_none(), "nothing is away to lease");
    leave(&mut a, 6.0, &runs);
    let lease = a.away().lease(44).unwrap();
    let fetch_runs = runs.clone();
    lease.settle(Some(Box::new(super::Whole(move || {
        fetch_runs.fetch_add(10, Ordering::SeqCst);
    }))));
    drop(lease);
    assert_eq!(a[2], 0.0);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        10,
        "the settled fetch ran once"
    );
}

/// Serial code that walks an array, window after window, brings the rest home at once
/// after `WALK` windows in a row (reads and writes alike); reads that skip about bring
/// only their windows.
#[test]
fn a_walk_over_the_windows_brings_the_rest_home() {
    let leave_from =
        |a: &mut DistArray<f32, 2>, wrote: &Arc<Mutex<Vec<(usize, usize)>>>, away_from: usize| {
            leave_windows(a, wrote, 64 * 64 * 256, away_from)
        };
    let leave_windows = |a: &mut DistArray<f32, 2>, wrote: &Arc<Mutex<Vec<(usize, usize)>>>| {
        leave_from(a, wrote, 0)
    };
    // 64 windows of 256 rows of 64 elements.
    let rows_per_window = 256;
    let mut a = DistArray::<f32, 2>::zeros([64 * rows_per_window, 64]);
    let wrote = Arc::new(Mutex::new(Vec::new()));
    leave_windows(&mut a, &wrote);
    // Every other window: no walk.
    for w in (0..40).step_by(2) {
        assert_eq!(a[[w * rows_per_window + 3, 1]], 7.0);
    }
    assert_eq!(wrote.lock().unwrap().len(), 20);
    assert!(a.away().is_away());
    // Row after row from window 41: window 41 starts a walk, the 16th window in a row
    // brings the rest home.
    let mut sum = 0.0;
    for r in 41 * rows_per_window..64 * rows_per_window {
        sum += a[[r, 0]];
        if r == 56 * rows_per_window - 1 {
            assert!(a.away().is_away(), "15 windows in a row are not yet a walk");
            assert_eq!(wrote.lock().unwrap().len(), 35);
        }
    }
    assert!(!a.away().is_away());
    assert_eq!(sum, 7.0 * (23 * rows_per_window) as f32);
    // 20 + 16 windows, then the rest in the ranges no window read.
    assert_eq!(wrote.lock().unwrap().len(), 36 + 21);
    assert!(a.as_slice().iter().all(|&x| x == 7.0));

    // Writes alike: the 16th window written in a row takes the rest.
    let wrote = Arc::new(Mutex::new(Vec::new()));
    leave_windows(&mut a, &wrote);
    for r in 0..16 * rows_per_window {
        a[[r, 2]] = 1.0;
        assert_eq!(a.away().is_away(), r < 15 * rows_per_window, "row {r}");
    }
    assert_eq!(a[[16 * rows_per_window, 2]], 7.0);
    assert_eq!(a[[3, 2]], 1.0);

    // A scan over the rows that are here (the first 40 windows) is no walk: the rest
    // stays away; the walk starts where the parts away do.
    let wrote = Arc::new(Mutex::new(Vec::new()));
    leave_from(&mut a, &wrote, 40 * rows_per_window * 64);
    for r in 0..40 * rows_per_window {
        let _ = a[[r, 0]];
    }
    assert!(a.away().is_away());
    for r in 40 * rows_per_window..56 * rows_per_window {
        let _ = a[[r, 0]];
    }
    assert!(!a.away().is_away());
}

/// An array created in place small enough to be made whole at its first read is home
/// after it: later reads take the plain path (no lock), and hold the recipe's values.
#[test]
fn a_small_array_made_whole_at_its_first_read_is_home() {
    let len = 100 * 10;
    let data = crate::array::pages::zeroed::<f32>(len).expect("zeroed pages of f32");
    let recipe = crate::array::made::Recipe::full(&2.5f32).expect("a fill of f32");
    let a = DistArray::<f32, 2>::in_place(data, [100, 10], recipe);
    assert!(a.away().is_away());
    assert_eq!(a[[3, 3]], 2.5);
    assert!(!a.away().is_away(), "made whole, the array is home");
    assert!(a.as_slice().iter().all(|&x| x == 2.5));
    // A large one keeps the rest away after a read of one window.
    let len = 1 << 21;
    let data = crate::array::pages::zeroed::<f32>(len).expect("zeroed pages of f32");
    let b = DistArray::<f32, 2>::in_place(data, [1 << 14, 128], recipe);
    assert_eq!(b[[5, 7]], 2.5);
    assert!(b.away().is_away());
}

/// Reads inside what serial code read home take the lock-free path (`Away::readable`),
/// which covers the run of windows read home and nothing a fetch may still write, and is
/// forgotten when the parts leave anew.
#[test]
fn reads_inside_a_window_read_home_skip_the_lock() {
    let mut a = DistArray::<f32, 2>::zeros([1000, 64]);
    let wrote = Arc::new(Mutex::new(Vec::new()));
    let leave = |a: &mut DistArray<f32, 2>, wrote: &Arc<Mutex<Vec<(usize, usize)>>>| {
        leave_windows(a, wrote, 64_000, 0)
    };
    leave(&mut a, &wrote);
    assert!(!a.away().readable(0, 1), "nothing read yet");
    assert_eq!(a[[3, 5]], 7.0);
    // The window fetched around row 3 (rows 0..256), and nothing past it.
    assert!(a.away().readable(0, 256 * 64));
    assert!(!a.away().readable(0, 256 * 64 + 1));
    // The next window, adjacent, joins the run.
    assert_eq!(a[[300, 0]], 7.0);
    assert!(a.away().readable(10, 512 * 64));
    assert!(!a.away().readable(10, 512 * 64 + 1));
    let fetched = wrote.lock().unwrap().len();
    assert_eq!(a.row(100), &[7.0; 64][..]);
    assert_eq!(
        wrote.lock().unwrap().len(),
        fetched,
        "a read inside fetched"
    );
    // The parts leave anew (a call wrote them): nothing is readable as it was.
    leave(&mut a, &wrote);
    assert!(!a.away().readable(0, 1));
    assert_eq!(a[[3, 5]], 7.0);
}

#[test]
fn packed_runs_lie_inside_their_range() {
    use super::{pack, unpack};
    assert_eq!(unpack(pack(0, 64)), (0, 64));
    assert_eq!(unpack(pack(1, 200)), (64, 192));
    assert_eq!(unpack(pack(10, 100)), (1, 0), "no whole run: empty");
    assert_eq!(unpack(0), (1, 0));
    let huge = (u64::from(u32::MAX) + 1) << super::RUN_BITS;
    assert_eq!(
        unpack(pack(0, huge as usize)),
        (1, 0),
        "beyond 32 bits of runs: empty"
    );
}

/// A read inside what serial code read home takes no lock: it goes on while a call's lease
/// holds the array (a read elsewhere waits for the lease to end); a read back in an
/// earlier run read home makes that run the readable one again.
#[test]
fn reads_inside_a_window_read_home_go_on_under_a_lease() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut a = DistArray::<f32, 2>::zeros([1000, 64]);
    let wrote = Arc::new(Mutex::new(Vec::new()));
    leave_windows(&mut a, &wrote, 64_000, 0);
    assert_eq!(a[[3, 5]], 7.0);
    assert_eq!(a[[900, 0]], 7.0);
    assert!(
        !a.away().readable(0, 64),
        "the run around row 900 is the readable one"
    );
    assert_eq!(a[[3, 1]], 7.0);
    assert!(a.away().readable(0, 256 * 64));
    let lease = a.away().lease(42).expect("parts are away");
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(a[[4, 0]], 7.0);
            done.store(true, Ordering::SeqCst);
        });
        let start = std::time::Instant::now();
        while !done.load(Ordering::SeqCst) && start.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let went_on = done.load(Ordering::SeqCst);
        drop(lease);
        assert!(
            went_on,
            "a read inside a window read home waited for the lease"
        );
    });
}

/// A fetch whose elements 2..4 and 5..6 are on "other ranks", which hold `remote`: it
/// gives their checksums, and fails the test if anything would come home.
struct Digests {
    remote: Vec<f32>,
}

impl Fetcher for Digests {
    fn all(self: Box<Self>, _: &Spans) {
        panic!("a checksum brought the parts home");
    }

    fn around(&mut self, _: usize, _: usize, _: &Spans) -> Option<(usize, usize)> {
        panic!("a checksum brought a window home");
    }

    fn digest_away(&self, read: &Spans) -> Option<Vec<(u64, u64, crate::checkpoint::Poly)>> {
        Some(
            read.outside(&[(5, 6), (2, 4)])
                .into_iter()
                .map(|(lo, hi)| {
                    let part = &self.remote[lo as usize..hi as usize];
                    (lo, hi, crate::array::le::digest(part))
                })
                .collect(),
        )
    }
}

#[test]
fn a_checksum_composes_the_parts_away_with_those_at_home() {
    let values = [1.5f32, -2.0, 3.25, 4.0, 0.5, 7.0];
    let whole = DistArray::from_vec([6], values.to_vec()).unwrap();
    let mut a = DistArray::from_vec([6], vec![1.5f32, -2.0, 0.0, 0.0, 0.5, 0.0]).unwrap();
    SharedMut::new(&mut a).leave(Box::new(Digests {
        remote: values.to_vec(),
    }));
    assert!(a.away().is_away());
    assert_eq!(a.checksum(), whole.checksum());
    assert_eq!(
        whole.checksum(),
        Some(crate::array::le::digest(&values[..])),
        "the whole's checksum is its bytes'"
    );
    // Another value on a rank changes it.
    let mut b = DistArray::from_vec([6], vec![1.5f32, -2.0, 0.0, 0.0, 0.5, 0.0]).unwrap();
    let mut other = values.to_vec();
    other[5] = 7.5;
    SharedMut::new(&mut b).leave(Box::new(Digests { remote: other }));
    assert_ne!(b.checksum(), whole.checksum());
    assert!(
        a.away().is_away() && b.away().is_away(),
        "nothing came home"
    );
}
