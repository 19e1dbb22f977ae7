//! What workers of one loop call wait on: a barrier that breaks when a worker panics,
//! per-task done signals, the turns of a serialized replay, and `Parked`, the proof that
//! every worker waits at an application point. Depends on nothing else in the crate.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks `m`, also after a worker panicked while holding it (the state it guards stays
/// consistent: every writer leaves it whole before it can panic).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A number for a new loop call: never 0, never repeated.
pub(crate) fn next_call() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(1);
    CALLS.fetch_add(1, Ordering::Relaxed)
}

/// Proof that no worker of a loop call is touching its write-back buffers or the arrays
/// their apply functions update: every worker waits at an application point (or, in one
/// worker's run and in a serial replay, the one thread is between two iterations). Only
/// the runtime makes one; [`Buffered::apply`](crate::Buffered::apply) and
/// [`SharedMut::exclusive`](crate::SharedMut::exclusive) need it. Under `sync = "ssp(s)"`
/// a token may instead name one phase of the run-ahead (`Phase`), which touches only what
/// the phase names; `exclusive` refuses such a token.
///
/// Each token is a new *application point*: an array lends itself exclusively
/// ([`SharedMut::exclusive`](crate::SharedMut::exclusive)) at most once per token.
///
/// A token belongs to one loop call (the buffers and arrays it may apply are those the
/// call's blocks use, see [`Lender`]) and stays on the thread that made it (it is neither
/// `Send` nor `Sync`).
///
/// In a call across processes the token also reaches the workers of the other processes
/// (parked at the same point of their own run): a buffer exchanges its workers' copies
/// with theirs before it merges them.
pub struct Parked<'a> {
    point: u64,
    call: u64,
    peers: Option<&'a dyn Peers>,
    phase: Phase,
    _here: PhantomData<*const ()>,
}

/// What an application point asks of the buffers. Every worker parked: [`Phase::Merge`].
/// Under `sync = "ssp(s)"` (`exec/ahead.rs`) the workers do not park together: each keeps
/// its round's difference and rebuilds its own replica, and one thread of the process
/// merges the rounds in order, each worker then touching only its own copy and the merges
/// only the value, in the order the call's `Ahead` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Every worker parked: the copies merge into the value and start again from it.
    Merge,
    /// Worker `worker` ended round `round`: its replica's difference since it started the
    /// round is kept (with its last `stale` rounds' before it).
    Publish {
        worker: usize,
        round: usize,
        stale: usize,
    },
    /// Worker `worker` starts round `round`: its replica becomes the value (the merge of
    /// every round before `round - stale`) plus its own differences since.
    Rebuild {
        worker: usize,
        round: usize,
        stale: usize,
    },
    /// Round `round`'s differences of every worker merge into the value.
    MergeRound { round: usize, stale: usize },
}

impl std::fmt::Debug for Parked<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked")
            .field("point", &self.point)
            .field("call", &self.call)
            .field("across_processes", &self.peers.is_some())
            .finish()
    }
}

impl<'a> Parked<'a> {
    /// A token for a new application point of loop call `call`, whose workers in other
    /// processes (if any) are `peers`.
    pub(crate) fn next(call: u64, peers: Option<&'a dyn Peers>) -> Parked<'a> {
        Parked::at(call, peers, Phase::Merge)
    }

    /// A token for a new point of loop call `call` in `phase` (`ssp(s)`'s run-ahead,
    /// `exec/ahead.rs`, which orders the phases so that they touch disjoint copies).
    pub(crate) fn at(call: u64, peers: Option<&'a dyn Peers>, phase: Phase) -> Parked<'a> {
        static POINTS: AtomicU64 = AtomicU64::new(1);
        Parked {
            point: POINTS.fetch_add(1, Ordering::Relaxed),
            call,
            peers,
            phase,
            _here: PhantomData,
        }
    }

    /// What the point asks of the buffers.
    pub(crate) fn phase(&self) -> Phase {
        self.phase
    }

    /// The call's workers in other processes, parked at the same point.
    pub(crate) fn peers(&self) -> Option<&'a dyn Peers> {
        self.peers
    }

    /// The proof from exclusive access to whatever the application touches (a call of its
    /// own).
    #[cfg(test)]
    pub(crate) fn exclusive<X: ?Sized>(_: &mut X) -> Parked<'static> {
        Parked::next(next_call(), None)
    }

    /// A new application point of the same call as `self`.
    #[cfg(test)]
    pub(crate) fn again(&self) -> Parked<'a> {
        Parked::next(self.call, self.peers)
    }

    /// This application point's number (never 0).
    pub(crate) fn point(&self) -> u64 {
        self.point
    }

    /// The loop call whose workers are parked.
    pub(crate) fn call(&self) -> u64 {
        self.call
    }
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// What a block shows the buffers it views: its worker and its loop call. Implemented
/// only by the runtime's blocks, which exist only while their call runs (or is replayed).
pub trait Lender: sealed::Sealed {
    /// `(worker, call)`.
    fn lender(&self) -> (usize, u64);
    /// The first worker of this process (0 in a call on one process): whose copy the
    /// process's workers share in `sync = "hybrid"`.
    fn home(&self) -> usize;
}

/// A barrier whose wait fails once a participant gave up (its worker panicked), so the
/// others return instead of waiting forever.
pub(crate) struct PhaseBarrier {
    state: Mutex<(usize, usize, bool)>, // (arrived, generation, broken)
    cv: Condvar,
    n: usize,
    /// `state.2`, readable without the lock by workers spinning on a signal.
    broken: AtomicBool,
}

impl PhaseBarrier {
    pub(crate) fn new(n: usize) -> Self {
        PhaseBarrier {
            state: Mutex::new((0, 0, false)),
            cv: Condvar::new(),
            n,
            broken: AtomicBool::new(false),
        }
    }

    /// Whether a participant gave up.
    pub(crate) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// Waits for all `n`, the last to arrive running `action` first (while every other
    /// participant waits); `false` when the barrier is broken.
    pub(crate) fn wait_and(&self, action: impl FnOnce()) -> bool {
        let mut g = lock(&self.state);
        if g.2 {
            return false;
        }
        g.0 += 1;
        if g.0 == self.n {
            action();
            g.0 = 0;
            g.1 += 1;
            self.cv.notify_all();
            return true;
        }
        let generation = g.1;
        while g.1 == generation && !g.2 {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        !g.2
    }

    /// Waits for all `n`; `false` when the barrier is broken.
    pub(crate) fn wait(&self) -> bool {
        self.wait_and(|| ())
    }

    pub(crate) fn break_all(&self) {
        let mut g = lock(&self.state);
        g.2 = true;
        self.broken.store(true, Ordering::Relaxed);
        self.cv.notify_all();
    }
}

/// Breaks the barrier if dropped during a panic.
pub(crate) struct BreakOnPanic<'a>(pub(crate) &'a PhaseBarrier);

impl Drop for BreakOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.break_all();
        }
    }
}

/// One flag per task of a call: set when the task is done (Release), waited for by the
/// tasks after it (Acquire). A waiter spins briefly, then sleeps until a flag is set.
pub(crate) struct Signals {
    done: Box<[AtomicBool]>,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Signals {
    pub(crate) fn new(n: usize) -> Self {
        Signals {
            done: (0..n).map(|_| AtomicBool::new(false)).collect(),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Marks task `i` done and wakes whoever waits.
    pub(crate) fn set(&self, i: usize) {
        self.done[i].store(true, Ordering::Release);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.lock);
            self.cv.notify_all();
        }
    }

    /// Wakes every sleeper (a worker gave up: they re-check `barrier`).
    pub(crate) fn wake_all(&self) {
        let _g = lock(&self.lock);
        self.cv.notify_all();
    }

    /// Waits until task `i` is done; `false` when `barrier` broke meanwhile (a worker
    /// panicked, so the task may never be done).
    pub(crate) fn wait(&self, i: usize, barrier: &PhaseBarrier) -> bool {
        for _ in 0..256 {
            if self.done[i].load(Ordering::Acquire) {
                return true;
            }
            std::hint::spin_loop();
        }
        for _ in 0..16 {
            if self.done[i].load(Ordering::Acquire) {
                return true;
            }
            std::thread::yield_now();
        }
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut g = lock(&self.lock);
        let ok = loop {
            if self.done[i].load(Ordering::Acquire) {
                break true;
            }
            if barrier.is_broken() {
                break false;
            }
            // The timeout only bounds the wait for a broken barrier, which sets no flag.
            g = self
                .cv
                .wait_timeout(g, std::time::Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(g);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        ok
    }
}

/// The turns of a serialized run: segment `k` may run only after segments `0..k` ran, one
/// at a time, whatever thread each runs on. A replay runs the recorded schedule on its
/// workers' threads this way, so that it is one serial order.
pub(crate) struct Turns {
    next: Mutex<usize>,
    cv: Condvar,
}

impl Turns {
    pub(crate) fn new() -> Self {
        Turns {
            next: Mutex::new(0),
            cv: Condvar::new(),
        }
    }

    /// Waits until it is segment `k`'s turn; `false` when `barrier` broke meanwhile.
    pub(crate) fn wait(&self, k: usize, barrier: &PhaseBarrier) -> bool {
        let mut g = lock(&self.next);
        while *g != k {
            if barrier.is_broken() {
                return false;
            }
            g = self
                .cv
                .wait_timeout(g, std::time::Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }

    /// Segment `k` is done: the next may run.
    pub(crate) fn done(&self, k: usize) {
        let mut g = lock(&self.next);
        debug_assert_eq!(*g, k, "turns are taken in order");
        *g = k + 1;
        self.cv.notify_all();
    }
}

/// Workers of a call that live in other processes, as the thread executor sees them
/// (implemented by the cluster runtime): the executor runs this process's workers and
/// calls these around each task and at each barrier. Failure is fail-stop: an
/// implementation that cannot go on ends the process with an error naming the rank.
pub(crate) trait Peers: Sync {
    /// The workers of this process.
    fn local(&self) -> std::ops::Range<usize>;
    /// The number of processes (each runs as many workers as this one).
    fn ranks(&self) -> usize;
    /// Before task `(t, w)` runs: waits for the tasks of other processes it comes after and
    /// puts the elements they sent into the arrays.
    fn before(&self, t: usize, w: usize);
    /// After it ran: sends the elements other processes need from it and says it is done.
    fn after(&self, t: usize, w: usize);
    /// The barrier after step `t` across processes (one local worker calls it, between two
    /// local barriers).
    fn barrier(&self, t: usize);
    /// At an application point (this process's workers parked, the last to arrive
    /// calling): sends `mine`, this process's workers' copies of one buffer, to every
    /// other process and returns theirs, `(their workers, bytes)` in rank order. Every
    /// process calls it the same number of times per call, in the same order, so the
    /// `n`-th calls meet.
    fn merge(&self, mine: Vec<u8>) -> Vec<(std::ops::Range<usize>, Vec<u8>)> {
        let me = self.local().start / self.local().len().max(1);
        by_workers(
            self.exchange(to_others(mine, self.ranks(), me)),
            self.local().len(),
        )
    }
    /// At an application point, like [`merge`](Self::merge) (and counted with it): sends
    /// `to[r]` to process `r` (`to` has one entry per process; this process's own is
    /// dropped) and returns what every other process sent this one, `(rank, bytes)` in rank
    /// order. A collective's round, where each process gets bytes of its own.
    fn exchange(&self, to: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)>;
    /// [`merge`](Self::merge) (and counted with it) off the workers' path: `ssp(s)`'s merges
    /// run on a thread of their own while the workers go on, so the time it waits is not
    /// the workers' wait.
    fn merge_behind(&self, mine: Vec<u8>) -> Vec<(std::ops::Range<usize>, Vec<u8>)> {
        self.merge(mine)
    }
    /// [`exchange`](Self::exchange) off the workers' path, as
    /// [`merge_behind`](Self::merge_behind).
    fn exchange_behind(&self, to: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)> {
        self.exchange(to)
    }
    /// Adds `ns` to the time this process's workers waited for other processes (a worker
    /// waiting for a merge `ssp(s)` runs behind it).
    fn waited(&self, ns: u64) {
        let _ = ns;
    }
    /// Stops the job with `message` (something another process sent does not fit).
    fn fail(&self, message: String) -> !;
    /// The lease this call holds on the arrays it reads with parts away (0: none): its
    /// workers read their home parts without fetching the rest (`array::away`).
    fn lease(&self) -> u64 {
        0
    }
}

/// The same bytes for every process but `me` (whose entry is empty): `ranks - 2` copies of
/// `mine` and `mine` itself, instead of one copy per process.
pub(crate) fn to_others(mine: Vec<u8>, ranks: usize, me: usize) -> Vec<Vec<u8>> {
    let mut to: Vec<Vec<u8>> = vec![Vec::new(); ranks];
    let last = (0..ranks).rev().find(|&r| r != me);
    for (r, slot) in to.iter_mut().enumerate() {
        if r != me && Some(r) != last {
            *slot = mine.clone();
        }
    }
    if let Some(last) = last {
        to[last] = mine;
    }
    to
}

/// What every other process sent, `(rank, bytes)`, as `(its workers, bytes)`: each process
/// runs `threads` workers, rank `r` the workers `r * threads..(r + 1) * threads`.
pub(crate) fn by_workers(
    theirs: Vec<(usize, Vec<u8>)>,
    threads: usize,
) -> Vec<(std::ops::Range<usize>, Vec<u8>)> {
    theirs
        .into_iter()
        .map(|(r, bytes)| (r * threads..(r + 1) * threads, bytes))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_for_the_others_leave_this_process_out() {
        assert_eq!(to_others(vec![7], 3, 1), [vec![7], vec![], vec![7]]);
        assert_eq!(to_others(vec![7], 2, 1), [vec![7], vec![]]);
        assert_eq!(to_others(vec![7], 1, 0), [Vec::<u8>::new()]);
    }

    #[test]
    fn the_last_arrival_acts_while_the_others_wait() {
        let b = PhaseBarrier::new(3);
        let acted = AtomicUsize::new(0);
        let seen: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        assert!(b.wait_and(|| {
                            acted.fetch_add(1, Ordering::SeqCst);
                        }));
                        acted.load(Ordering::SeqCst)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // Every participant left after the one action.
        assert_eq!(seen, vec![1, 1, 1]);
    }

    #[test]
    fn a_broken_barrier_releases_waiters() {
        let b = PhaseBarrier::new(2);
        let sig = Signals::new(1);
        std::thread::scope(|s| {
            let w = s.spawn(|| b.wait());
            let v = s.spawn(|| sig.wait(0, &b));
            std::thread::sleep(std::time::Duration::from_millis(20));
            b.break_all();
            sig.wake_all();
            assert!(!w.join().unwrap());
            assert!(!v.join().unwrap());
        });
        assert!(!b.wait());
    }

    #[test]
    fn signals_order_a_write_before_the_read() {
        let b = PhaseBarrier::new(2);
        let sig = Signals::new(2);
        let cell = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(sig.wait(0, &b));
                assert_eq!(cell.load(Ordering::Relaxed), 7);
                sig.set(1);
            });
            std::thread::sleep(std::time::Duration::from_millis(10));
            cell.store(7, Ordering::Relaxed);
            sig.set(0);
            assert!(sig.wait(1, &b));
        });
    }

    #[test]
    fn turns_run_segments_in_order_across_threads() {
        let b = PhaseBarrier::new(3);
        let turns = Turns::new();
        let log = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for w in 0..3usize {
                let (turns, log, b) = (&turns, &log, &b);
                s.spawn(move || {
                    // Worker w owns segments w, w + 3, w + 6.
                    for k in (w..9).step_by(3) {
                        assert!(turns.wait(k, b));
                        lock(log).push(k);
                        turns.done(k);
                    }
                });
            }
        });
        assert_eq!(*lock(&log), (0..9).collect::<Vec<_>>());
    }
}
