//! The thread executor: runs a [`Schedule`] on the pool, one thread per worker.
//!
//! Each worker walks the steps in order: it writes its claims when a step has some (then
//! all wait), waits for the tasks its task comes after (hand-offs, pieces), runs it, marks
//! it done, and waits for all when the step ends with a barrier. Buffers are applied at
//! the rounds of applying steps, with every worker parked ([`Segments`]). A serialized
//! run (the replay) takes the same path, one segment at a time.

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering;

use crate::array::view::Owners;
use crate::exec::block::Block;
use crate::exec::rounds::Segments;
use crate::exec::state::LoopState;
use crate::plan::{Claim, Schedule, Unit, stamp};
use crate::pool::{as_worker, broadcast};
use crate::space::Space;
use crate::sync::{BreakOnPanic, Parked, Peers, PhaseBarrier, Signals, Turns, next_call};

/// One call to execute.
pub(crate) struct Execution<'a, S: Space> {
    pub(crate) state: &'static LoopState,
    pub(crate) space: &'a S,
    /// The blocks that [`Unit::Block`] tasks name.
    pub(crate) blocks: Option<&'a S::Blocks>,
    pub(crate) schedule: &'a Schedule,
    /// Reconnaissance: the ownership table and this call's number among the plan's.
    pub(crate) owners: Option<Owners<'a>>,
    /// Applies the write-back buffers.
    pub(crate) apply: Option<&'a (dyn Fn(&Parked<'_>) + Sync)>,
    /// One segment at a time, in the serial order (a replay).
    pub(crate) serialized: bool,
    /// Keep the ids each task ran (`testing::record`).
    pub(crate) tracing: bool,
    /// Workers in other processes (a cluster call): this process runs `peers.local()`.
    pub(crate) peers: Option<&'a dyn Peers>,
}

/// Runs the call; returns, when tracing, the ids each worker ran per step
/// (`steps[t][w]`).
pub(crate) fn execute<S, F>(x: &Execution<'_, S>, f: &F) -> Vec<Vec<Vec<usize>>>
where
    S: Space,
    F: Fn(&mut Block<'_, S>) + Sync,
{
    let sched = x.schedule;
    let p = sched.workers;
    let call = next_call();
    let local = x.peers.map_or(0..p, |peers| peers.local());
    let barrier = PhaseBarrier::new(local.len());
    let turns = (x.serialized && p > 1).then(Turns::new);
    let len = |t: usize, w: usize| match sched.task(t, w).map(|task| task.unit) {
        Some(Unit::Ids(k)) => sched.lists[k].len(),
        Some(Unit::Block(id)) => x.blocks.map_or(0, |b| x.space.block_len(b, id)),
        None => 0,
    };
    // Hand-made specs may name no buffers: the call's own points then.
    let mut points = sched.apply.or_else(|| {
        x.apply
            .map(|_| crate::plan::ApplyPoints::new(x.state.spec().max_delay, p))
    });
    // `sync = "hybrid"` in one process: the workers share the one replica, and a merge
    // would do nothing; no point parks them before the end of their tasks.
    if x.peers.is_none()
        && crate::exec::staticplan::timing_dependent(x.state.spec())
        && let Some(points) = &mut points
    {
        points.every = None;
    }
    let segments = Segments::new(
        call,
        sched,
        len,
        points,
        x.apply,
        &barrier,
        turns.as_ref(),
        x.peers,
    )
    .run_ahead(x.state.spec().staleness(), local.clone());
    let signals = Signals::new(sched.steps.len() * p);
    let claim = |c: &Claim| {
        if let Some(o) = &x.owners {
            let s = stamp(o.call, c.batch, c.claimant, p);
            for &e in &c.rows {
                o.table[e as usize].store(s, Ordering::Relaxed);
            }
        }
    };
    let worker = |w: usize| -> Vec<(usize, Vec<usize>)> {
        let _guard = BreakOnPanic(&barrier);
        let mut mine = Vec::new();
        as_worker(x.peers.map_or(0, |p| p.lease()), || {
            for (t, step) in sched.steps.iter().enumerate() {
                if p > 1 && !step.claims.is_empty() {
                    step.claims.iter().filter(|c| c.worker == w).for_each(claim);
                    if !barrier.wait() {
                        return;
                    }
                }
                match &step.tasks[w] {
                    Some(task) => {
                        for &(u, v) in &task.after {
                            if local.contains(&v) && !signals.wait(u * p + v, &barrier) {
                                return;
                            }
                        }
                        if let Some(peers) = x.peers {
                            peers.before(t, w);
                        }
                        if let Some(c) = &task.claim {
                            claim(c);
                        }
                        let seq = (t, w);
                        if !segments.wait_turn(seq, 0) {
                            return;
                        }
                        let (blocks, list, id) = match task.unit {
                            Unit::Block(id) => (x.blocks, None, id),
                            Unit::Ids(k) => (None, Some(sched.lists[k].as_slice()), 0),
                        };
                        let mut blk = Block {
                            state: x.state,
                            space: x.space,
                            blocks,
                            list,
                            id,
                            seq,
                            windows: &sched.windows[task.windows],
                            owners: x.owners,
                            trace: x.tracing.then(Vec::new),
                            segments: Some(&segments),
                            round: Cell::new(0),
                            finished: Cell::new(false),
                            streams: RefCell::default(),
                            call,
                            viewed: RefCell::default(),
                            home: local.start,
                        };
                        f(&mut blk);
                        if barrier.is_broken() {
                            return;
                        }
                        if let Some(peers) = x.peers {
                            peers.after(t, w);
                        }
                        if segments.applying(t) {
                            if !blk.finished.get() {
                                segments.finish(seq, &blk.round, &blk.finished);
                            }
                        } else {
                            segments.done_turn(seq, 0);
                        }
                        signals.set(t * p + w);
                        if x.tracing {
                            mine.push((t, blk.trace.take().unwrap_or_default()));
                        }
                    }
                    None if segments.applying(t) => {
                        // No task in this step: take part in its application points.
                        for r in 0..segments.rounds(t) {
                            if !segments.point(w, r) {
                                return;
                            }
                        }
                    }
                    None => {}
                }
                if p > 1 && step.barrier_after {
                    if !barrier.wait() {
                        return;
                    }
                    if let Some(peers) = x.peers {
                        if w == local.start {
                            peers.barrier(t);
                        }
                        if !barrier.wait() {
                            return;
                        }
                    }
                }
            }
        });
        mine
    };
    let workers = || -> Vec<Vec<(usize, Vec<usize>)>> {
        if local.len() == 1 {
            vec![worker(local.start)]
        } else {
            broadcast(local.len(), |i| {
                let r = worker(local.start + i);
                if barrier.is_broken() {
                    signals.wake_all();
                }
                r
            })
        }
    };
    let per_worker = match segments.ahead() {
        // `ssp(s)`: the rounds merge on a thread of their own, behind the workers.
        Some(ahead) => std::thread::scope(|sc| {
            let merging = std::thread::Builder::new()
                .name("strads-merge".into())
                .spawn_scoped(sc, || {
                    let _guard = BreakOnPanic(&barrier);
                    ahead.merge_all();
                })
                .unwrap_or_else(|e| panic!("strads: cannot start the merging thread: {e}"));
            let per_worker = workers();
            if let Err(payload) = merging.join() {
                std::panic::resume_unwind(payload);
            }
            per_worker
        }),
        None => workers(),
    };
    if !x.tracing {
        return Vec::new();
    }
    let mut steps = vec![vec![Vec::new(); p]; sched.steps.len()];
    for (w, tasks) in local.clone().zip(per_worker) {
        for (t, ids) in tasks {
            steps[t][w] = ids;
        }
    }
    steps
}
