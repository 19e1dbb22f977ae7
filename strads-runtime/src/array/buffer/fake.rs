//! Processes as threads for the buffers' unit tests: [`Peers`] whose exchanges meet in a
//! shared mailbox.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use crate::sync::Peers;

/// Processes as threads: each exchange's bytes wait in a shared mailbox under `(key,
/// from, to)`.
#[derive(Default)]
pub(super) struct Hub {
    boxes: Mutex<HashMap<(u64, usize, usize), Vec<u8>>>,
    cv: Condvar,
    /// A process failed (or panicked in an exchange): the others' exchanges fail too,
    /// instead of waiting forever.
    failed: std::sync::atomic::AtomicBool,
}

/// Marks the hub failed when the process (or exchange) it guards panics: the other
/// processes' exchanges then fail instead of waiting for it forever.
pub(super) struct FailOnPanic<'h>(&'h Hub);

impl Hub {
    /// A guard for one process's run: a panic in it fails the others' exchanges.
    pub(super) fn guard(&self) -> FailOnPanic<'_> {
        FailOnPanic(self)
    }

    /// Processes `0..ranks` on this hub, each running `threads` workers.
    pub(super) fn processes(&self, ranks: usize, threads: usize) -> Vec<Fake<'_>> {
        (0..ranks)
            .map(|rank| Fake::new(self, rank, ranks, threads))
            .collect()
    }
}

/// Runs `run` for every process of `fakes` at once, each on a thread of its own under
/// its hub's guard (a process that panics fails the others' exchanges instead of leaving
/// them waiting); their results, in process order.
pub(super) fn each<'h, R: Send>(fakes: &[Fake<'h>], run: impl Fn(&Fake<'h>) -> R + Sync) -> Vec<R> {
    std::thread::scope(|s| {
        let hs: Vec<_> = fakes
            .iter()
            .map(|f| {
                let run = &run;
                s.spawn(move || {
                    let _guard = f.hub.guard();
                    run(f)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

impl Drop for FailOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.failed.store(true, Ordering::SeqCst);
            self.0.cv.notify_all();
        }
    }
}

/// One process of `ranks`, running `threads` workers.
pub(super) struct Fake<'h> {
    hub: &'h Hub,
    rank: usize,
    ranks: usize,
    threads: usize,
    key: AtomicU64,
    /// Bytes this process sent, and the rounds of each kind.
    pub(super) sent: AtomicU64,
    pub(super) all_to_all: AtomicU64,
    pub(super) exchanges: AtomicU64,
}

impl<'h> Fake<'h> {
    /// Process `rank` of `ranks` on `hub`, with `threads` workers.
    pub(super) fn new(hub: &'h Hub, rank: usize, ranks: usize, threads: usize) -> Self {
        Fake {
            hub,
            rank,
            ranks,
            threads,
            key: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            all_to_all: AtomicU64::new(0),
            exchanges: AtomicU64::new(0),
        }
    }
}

impl Fake<'_> {
    fn trade(&self, to: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)> {
        let key = self.key.fetch_add(1, Ordering::Relaxed);
        let mut boxes = self.hub.boxes.lock().unwrap();
        for (r, bytes) in to.into_iter().enumerate().filter(|&(r, _)| r != self.rank) {
            self.sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
            boxes.insert((key, self.rank, r), bytes);
        }
        self.hub.cv.notify_all();
        let _guard = FailOnPanic(self.hub);
        let mut got = Vec::new();
        for q in (0..self.ranks).filter(|&q| q != self.rank) {
            loop {
                if let Some(b) = boxes.remove(&(key, q, self.rank)) {
                    got.push((q, b));
                    break;
                }
                assert!(
                    !self.hub.failed.load(Ordering::SeqCst),
                    "another process failed"
                );
                boxes = self
                    .hub
                    .cv
                    .wait_timeout(boxes, std::time::Duration::from_millis(50))
                    .unwrap()
                    .0;
            }
        }
        got
    }
}

impl Peers for Fake<'_> {
    fn local(&self) -> Range<usize> {
        self.rank * self.threads..(self.rank + 1) * self.threads
    }
    fn ranks(&self) -> usize {
        self.ranks
    }
    fn before(&self, _: usize, _: usize) {}
    fn after(&self, _: usize, _: usize) {}
    fn barrier(&self, _: usize) {}
    fn merge(&self, mine: Vec<u8>) -> Vec<(Range<usize>, Vec<u8>)> {
        self.all_to_all.fetch_add(1, Ordering::Relaxed);
        let to = crate::sync::to_others(mine, self.ranks, self.rank);
        crate::sync::by_workers(self.trade(to), self.threads)
    }
    fn exchange(&self, to: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)> {
        self.exchanges.fetch_add(1, Ordering::Relaxed);
        self.trade(to)
    }
    fn fail(&self, message: String) -> ! {
        self.hub.failed.store(true, Ordering::SeqCst);
        self.hub.cv.notify_all();
        panic!("{message}")
    }
}
