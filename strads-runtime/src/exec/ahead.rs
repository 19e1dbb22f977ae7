//! `sync = "ssp(s)"`'s run-ahead: the order of a call's phases when its workers do not park
//! together at the application points (the buffers' side is `array/buffer/stale.rs`).
//!
//! At the end of its round `r` worker `w` publishes its difference, waits until merge
//! `r - s` is done (`B_{r + 1 - s}` is the value), rebuilds its replica for round `r + 1`
//! and goes on. One thread of the process (`merge_all`) runs merge `m` once every worker of
//! the process published round `m` and started round `m + s` (or its last), that is once
//! no worker still needs `B_m`, and across processes exchanges the round's differences
//! meanwhile (the other processes run the same merges in the same order). So a worker is
//! never more than `s` rounds ahead of the slowest, the merge of a round overlaps the next
//! rounds' compute, and every phase reads and writes what `stale.rs` says, whatever the
//! threads' timing: the same bits on every run, on threads and across processes, and in a
//! serialized replay.

use std::ops::Range;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::sync::{Parked, Peers, Phase, PhaseBarrier};

/// What runs a phase on the call's buffers (`rounds::ApplyFn`).
type ApplyFn<'r> = &'r (dyn Fn(&Parked<'_>) + Sync);

/// How long a waiter sleeps before it looks at the barrier again (a panicking worker breaks
/// it; waiters then leave).
const RECHECK: Duration = Duration::from_millis(20);

/// What the waits look at: per worker of this process, the rounds it published and the
/// round its replica was last rebuilt for (`rounds` once it published its last), and the
/// merges done.
struct Progress {
    published: Vec<usize>,
    started: Vec<usize>,
    merged: usize,
}

/// The run-ahead of one call in one process.
pub(crate) struct Ahead<'r> {
    call: u64,
    s: usize,
    rounds: usize,
    local: Range<usize>,
    apply: ApplyFn<'r>,
    peers: Option<&'r dyn Peers>,
    barrier: &'r PhaseBarrier,
    state: Mutex<Progress>,
    cv: Condvar,
}

impl<'r> Ahead<'r> {
    /// The run-ahead of call `call` with staleness `s` over `rounds` rounds (of the call's
    /// one applying step), this process running the workers `local`.
    pub(crate) fn new(
        call: u64,
        s: usize,
        rounds: usize,
        local: Range<usize>,
        apply: ApplyFn<'r>,
        peers: Option<&'r dyn Peers>,
        barrier: &'r PhaseBarrier,
    ) -> Self {
        Ahead {
            call,
            s,
            rounds: rounds.max(1),
            state: Mutex::new(Progress {
                published: vec![0; local.len()],
                started: vec![0; local.len()],
                merged: 0,
            }),
            local,
            apply,
            peers,
            barrier,
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn run(&self, phase: Phase) {
        (self.apply)(&Parked::at(self.call, self.peers, phase));
    }

    /// Worker `w` ended round `r`: publishes its difference and, unless it was its last,
    /// rebuilds its replica for round `r + 1` once merge `r - s` is done; after its last,
    /// waits for every merge. `false` when the call is being abandoned.
    pub(crate) fn end_round(&self, w: usize, r: usize) -> bool {
        let s = self.s;
        self.run(Phase::Publish {
            worker: w,
            round: r,
            stale: s,
        });
        let i = w - self.local.start;
        let last = r + 1 >= self.rounds;
        {
            let mut g = self.lock();
            g.published[i] = r + 1;
            if last {
                g.started[i] = self.rounds;
            }
        }
        self.cv.notify_all();
        let need = if last {
            self.rounds
        } else {
            (r + 1).saturating_sub(s)
        };
        if !self.wait_merged(need) {
            return false;
        }
        if !last {
            self.run(Phase::Rebuild {
                worker: w,
                round: r + 1,
                stale: s,
            });
            self.lock().started[i] = r + 1;
            self.cv.notify_all();
        }
        true
    }

    /// Waits until `need` merges are done; `false` when the call is being abandoned. The
    /// time counts as the workers' wait for other processes when there are some.
    fn wait_merged(&self, need: usize) -> bool {
        let mut g = self.lock();
        if g.merged >= need {
            return true;
        }
        let t0 = Instant::now();
        while g.merged < need {
            if self.barrier.is_broken() {
                return false;
            }
            g = self
                .cv
                .wait_timeout(g, RECHECK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(g);
        if let Some(peers) = self.peers {
            peers.waited(u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX));
        }
        true
    }

    /// Whether merge `m` may run: every worker published round `m`, and none will read
    /// `B_m` again (each started round `m + s`, or its last).
    fn ready(&self, g: &Progress, m: usize) -> bool {
        let reads_until = (m + self.s).min(self.rounds - 1);
        g.published.iter().all(|&p| p > m) && g.started.iter().all(|&k| k >= reads_until)
    }

    /// The merges of every round, in order, each once it may run: the body of the
    /// process's merging thread. Returns early when the call is being abandoned.
    pub(crate) fn merge_all(&self) {
        for m in 0..self.rounds {
            {
                let mut g = self.lock();
                while !self.ready(&g, m) {
                    if self.barrier.is_broken() {
                        return;
                    }
                    g = self
                        .cv
                        .wait_timeout(g, RECHECK)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
            self.run(Phase::MergeRound {
                round: m,
                stale: self.s,
            });
            self.lock().merged = m + 1;
            self.cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A log of the phases, with what each saw of the others.
    fn run_ahead(s: usize, rounds: usize, workers: usize, slow: usize) -> Vec<String> {
        let log = Mutex::new(Vec::new());
        let merged = AtomicUsize::new(0);
        let ahead_of_slowest = AtomicUsize::new(0);
        let progress: Vec<AtomicUsize> = (0..workers).map(|_| AtomicUsize::new(0)).collect();
        let apply = |p: &Parked<'_>| match p.phase() {
            Phase::Publish { worker, round, .. } => {
                progress[worker].store(round + 1, Ordering::SeqCst);
                let min = progress
                    .iter()
                    .map(|a| a.load(Ordering::SeqCst))
                    .min()
                    .unwrap_or(0);
                ahead_of_slowest.fetch_max(round + 1 - min, Ordering::SeqCst);
            }
            Phase::Rebuild { worker, round, .. } => {
                let m = merged.load(Ordering::SeqCst);
                log.lock()
                    .unwrap()
                    .push(format!("w{worker} starts {round} after {m} merges"));
            }
            Phase::MergeRound { round, .. } => {
                merged.store(round + 1, Ordering::SeqCst);
            }
            Phase::Merge => panic!("no merge of every copy"),
        };
        let barrier = PhaseBarrier::new(workers);
        let ahead = Ahead::new(1, s, rounds, 0..workers, &apply, None, &barrier);
        // The others can publish `s + 1` rounds before they need the slow worker's first.
        let bound = (s + 1).min(rounds);
        let others_at = |n: usize| {
            (0..workers)
                .filter(|&w| w != slow)
                .all(|w| progress[w].load(Ordering::SeqCst) == n)
        };
        std::thread::scope(|sc| {
            sc.spawn(|| ahead.merge_all());
            for w in 0..workers {
                let (ahead, others_at) = (&ahead, &others_at);
                sc.spawn(move || {
                    if w == slow {
                        // Before its first round: the others reach the bound, and stay there.
                        let t0 = Instant::now();
                        while !others_at(bound) {
                            assert!(t0.elapsed() < Duration::from_secs(20), "never reached");
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        std::thread::sleep(Duration::from_millis(30));
                        assert!(others_at(bound), "a worker went past the bound");
                    }
                    for r in 0..rounds {
                        assert!(ahead.end_round(w, r));
                    }
                });
            }
        });
        assert_eq!(merged.load(Ordering::SeqCst), rounds);
        let mut log = log.into_inner().unwrap();
        log.push(format!(
            "ahead at most {}",
            ahead_of_slowest.load(Ordering::SeqCst)
        ));
        log
    }

    #[test]
    fn a_worker_runs_at_most_s_rounds_ahead_and_starts_from_merge_k_minus_s() {
        for s in 1..=3 {
            let log = run_ahead(s, 8, 3, 2);
            // Round k starts from exactly the merges before k - s (a rebuild waits for
            // merge k - s - 1, and merge k - s waits for every rebuild of round k).
            for line in &log[..log.len() - 1] {
                let words: Vec<&str> = line.split(' ').collect();
                let (k, m): (usize, usize) = (words[2].parse().unwrap(), words[4].parse().unwrap());
                assert_eq!(m, k.saturating_sub(s), "{line} (s = {s})");
            }
            // The fast workers ran ahead of the slow one by s + 1 published rounds (s rounds
            // ahead in the one they are running), never more.
            assert_eq!(log.last().unwrap(), &format!("ahead at most {}", s + 1));
        }
    }

    #[test]
    fn one_round_merges_once_and_a_broken_call_releases_every_waiter() {
        let log = run_ahead(2, 1, 2, 0);
        assert_eq!(log, vec!["ahead at most 1"]);
        // A worker that gives up: the others and the merging thread leave.
        let apply = |_: &Parked<'_>| {};
        let barrier = PhaseBarrier::new(2);
        let ahead = Ahead::new(1, 1, 4, 0..2, &apply, None, &barrier);
        std::thread::scope(|sc| {
            let m = sc.spawn(|| ahead.merge_all());
            let w = sc.spawn(|| (0..4).all(|r| ahead.end_round(0, r)));
            std::thread::sleep(Duration::from_millis(30));
            barrier.break_all();
            assert!(!w.join().unwrap());
            m.join().unwrap();
        });
    }
}
