//! The segments of a call: where a task stops for the write-back buffers to be applied
//! (the rule is [`ApplyPoints`]'), and, in a serialized replay, whose turn it is.
//!
//! A segment is round `r` of worker `w`'s task at step `t` (a whole task when its step
//! applies no buffers). In a replay, segments run one at a time in the order
//! `(step, round, worker)`: the serial order the run is equivalent to.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::ahead::Ahead;
use crate::plan::{ApplyPoints, Schedule};
use crate::sync::{Parked, Peers, PhaseBarrier, Turns};

/// What applies a call's write-back buffers, every worker parked.
pub(crate) type ApplyFn<'r> = &'r (dyn Fn(&Parked<'_>) + Sync);

/// The segments of one call.
pub(crate) struct Segments<'r> {
    call: u64,
    workers: usize,
    /// Where buffers are applied, and how; `None` without buffers.
    apply: Option<(ApplyPoints, ApplyFn<'r>)>,
    barrier: &'r PhaseBarrier,
    /// The call's workers in other processes: buffers exchange copies with them.
    peers: Option<&'r dyn Peers>,
    /// One worker: iterations so far in the call.
    count: AtomicUsize,
    /// A serialized replay's turns.
    turns: Option<&'r Turns>,
    /// Per step: whether buffers are applied in its rounds (several workers), its rounds,
    /// its first segment number, and each worker's rank among the step's tasks.
    applying: Vec<bool>,
    rounds: Vec<usize>,
    base: Vec<usize>,
    rank: Vec<Vec<Option<usize>>>,
    /// `sync = "ssp(s)"`: the workers run ahead instead of parking at the points.
    ahead: Option<Ahead<'r>>,
}

impl<'r> Segments<'r> {
    /// The segments of `schedule`, whose task at `(step, worker)` has `len(step, worker)`
    /// iterations (asked only with `max_delay`). Every process of a call across processes
    /// makes the same segments (`len` covers every worker), so their application points
    /// meet.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        call: u64,
        schedule: &Schedule,
        len: impl Fn(usize, usize) -> usize,
        points: Option<ApplyPoints>,
        apply: Option<ApplyFn<'r>>,
        barrier: &'r PhaseBarrier,
        turns: Option<&'r Turns>,
        peers: Option<&'r dyn Peers>,
    ) -> Self {
        let p = schedule.workers;
        let apply = apply.and_then(|f| points.map(|pts| (pts, f)));
        let mut applying = Vec::with_capacity(schedule.steps.len());
        let mut rounds = Vec::with_capacity(schedule.steps.len());
        let mut base = Vec::with_capacity(schedule.steps.len());
        let mut rank = Vec::with_capacity(schedule.steps.len());
        let mut next = 0;
        for (t, step) in schedule.steps.iter().enumerate() {
            let applies = p > 1 && step.applies && apply.is_some();
            let r = match apply {
                Some((pts, _)) if applies && pts.every.is_some() => pts.rounds(
                    (0..p)
                        .filter(|&w| step.tasks[w].is_some())
                        .map(|w| len(t, w)),
                ),
                _ => 1,
            };
            let mut k = 0;
            let ranks: Vec<Option<usize>> = step
                .tasks
                .iter()
                .map(|task| {
                    task.as_ref().map(|_| {
                        k += 1;
                        k - 1
                    })
                })
                .collect();
            applying.push(applies);
            rounds.push(r);
            base.push(next);
            rank.push(ranks);
            next += r * k;
        }
        Segments {
            call,
            workers: p,
            apply,
            barrier,
            peers,
            count: AtomicUsize::new(0),
            turns,
            applying,
            rounds,
            base,
            rank,
            ahead: None,
        }
    }

    /// Under `sync = "ssp(s)"` (`s > 0`): the workers run up to `s` rounds ahead of the
    /// slowest (`ahead.rs`), when the call has several workers and one step, which applies
    /// (a `sync` loop's plan); otherwise the points park every worker, as `bsp` does, which
    /// is within the same bound. `local` are this process's workers.
    pub(crate) fn run_ahead(mut self, s: usize, local: std::ops::Range<usize>) -> Self {
        if let Some((_, f)) = self.apply
            && s > 0
            && self.workers > 1
            && self.applying.len() == 1
            && self.applying[0]
        {
            // With `s` at least the rounds but one, every round starts from the first
            // value: the same as `rounds - 1`, which keeps fewer differences.
            let s = s.min(self.rounds[0].saturating_sub(1)).max(1);
            self.ahead = Some(Ahead::new(
                self.call,
                s,
                self.rounds[0],
                local,
                f,
                self.peers,
                self.barrier,
            ));
        }
        self
    }

    /// The run-ahead, when the call runs ahead: its merging thread runs
    /// [`Ahead::merge_all`].
    pub(crate) fn ahead(&self) -> Option<&Ahead<'r>> {
        self.ahead.as_ref()
    }

    /// Whether step `t` applies buffers at its rounds' ends.
    pub(crate) fn applying(&self, t: usize) -> bool {
        self.applying[t]
    }

    /// Rounds of step `t`.
    pub(crate) fn rounds(&self, t: usize) -> usize {
        self.rounds[t]
    }

    /// Whether a task's iterations must be counted (buffers applied within tasks).
    pub(crate) fn counts(&self) -> bool {
        match self.apply {
            Some((pts, _)) if self.workers == 1 => pts.every.is_some(),
            Some(_) => true,
            None => false,
        }
    }

    fn ticket(&self, (t, w): (usize, usize), r: usize) -> usize {
        let n = self.rank[t].iter().flatten().count();
        self.base[t] + r * n + self.rank[t][w].expect("a segment of a task")
    }

    /// Waits for the turn of round `r` of the task at `seq` (replays only); `false` when
    /// the call is being abandoned.
    pub(crate) fn wait_turn(&self, seq: (usize, usize), r: usize) -> bool {
        match self.turns {
            Some(turns) => turns.wait(self.ticket(seq, r), self.barrier),
            None => true,
        }
    }

    /// Round `r` of the task at `seq` is done (replays only).
    pub(crate) fn done_turn(&self, seq: (usize, usize), r: usize) {
        if let Some(turns) = self.turns {
            turns.done(self.ticket(seq, r));
        }
    }

    /// Worker `w` at the end of round `r` of the applying step: every worker parks and the
    /// last to arrive applies the buffers, or under `ssp(s)` the worker goes on once the
    /// merge its next round starts from is done. `false` when the call is being abandoned.
    pub(crate) fn point(&self, w: usize, r: usize) -> bool {
        match &self.ahead {
            Some(ahead) => ahead.end_round(w, r),
            None => self.sync(),
        }
    }

    /// Every worker parked, the last to arrive applies the buffers; `false` when the
    /// call is being abandoned.
    fn sync(&self) -> bool {
        match self.apply {
            Some((_, f)) => self
                .barrier
                .wait_and(|| f(&Parked::next(self.call, self.peers))),
            None => self.barrier.wait(),
        }
    }

    /// Before iteration `i` of the task at `seq`: applies the buffers if a point is here.
    /// `false` when the call is being abandoned (another worker panicked).
    #[inline]
    pub(crate) fn before(&self, seq: (usize, usize), i: usize, round: &Cell<usize>) -> bool {
        let Some((pts, f)) = self.apply else {
            return true;
        };
        if self.workers == 1 {
            // One thread: a plain load and store, no read-modify-write.
            let c = self.count.load(Ordering::Relaxed);
            self.count.store(c + 1, Ordering::Relaxed);
            if pts.before(c) {
                f(&Parked::next(self.call, None));
            }
            return true;
        }
        if !self.applying[seq.0] {
            return true;
        }
        if self.barrier.is_broken() {
            return false;
        }
        if !pts.before(i) {
            return true;
        }
        let r = round.get();
        self.done_turn(seq, r);
        if !self.point(seq.1, r) {
            return false;
        }
        round.set(r + 1);
        self.wait_turn(seq, r + 1)
    }

    /// After the last iteration of the task at `seq`: ends its round and takes part in
    /// the step's remaining rounds.
    pub(crate) fn finish(&self, seq: (usize, usize), round: &Cell<usize>, finished: &Cell<bool>) {
        finished.set(true);
        if self.workers == 1 || !self.applying[seq.0] {
            return;
        }
        let r = round.get();
        self.done_turn(seq, r);
        if !self.point(seq.1, r) {
            return;
        }
        for rr in r + 1..self.rounds[seq.0] {
            if !self.wait_turn(seq, rr) {
                return;
            }
            self.done_turn(seq, rr);
            if !self.point(seq.1, rr) {
                return;
            }
        }
    }
}
