//! Whether a call runs its plan or the loop's original serial body: the cost model that
//! keeps a parallel loop from running slower than its serial self.
//!
//! Two kinds of decision, both said under `STRADS_EXPLAIN` (`strads cost <fn>: ..`):
//!
//! - **From the plan's shape**, the same in every run: a plan whose longest chain of tasks
//!   (per step, the longest task) holds nearly all iterations on several workers (one
//!   conflict component holding most of them, a wavefront one tile wide) cannot beat the
//!   serial loop, which runs instead. One worker is timed like any other count.
//! - **Before set-up**, for plans with the serial loop's bits only: a survey is made only
//!   for contents a recent call saw too (it serves only calls over the same contents), and
//!   a sparse space is bucketed on the second call over it, or when the measured serial
//!   loop costs more than the set-up would (`serial_before_setup`).
//! - **From measured times**, only for plans whose result is the original loop's bit for
//!   bit (1D, wavefronts, `ordered` 2D, reconnaissance without split components; no
//!   write-back buffer, no `+=`/`*=` reduction, whose folding order would differ), or
//!   depends on the threads' timing anyway (`sync = "hybrid"`). The
//!   model keeps, per loop, the nanoseconds per iteration of the plan's runs (planning
//!   included, weighted by how often the loop is planned again) and of the serial loop's,
//!   runs the cheaper, and tries the other again after enough calls that the trial costs
//!   at most [`TRIAL_BUDGET`](super::trial::TRIAL_BUDGET) of the time spent since. So a timing never changes what a
//!   program prints, and a loop that cannot pay (a small wavefront, a call too short for
//!   its barriers) falls back to its serial loop after one trial.
//!
//! `STRADS_COST=0` always runs the plan. Replays, recorded runs and a cluster worker's
//! part of the driver's call always run the plan they are given.

use std::sync::Mutex;
use std::time::Instant;

use super::place::Place;
pub(crate) use super::place::Where;
use super::trial::{Duel, average};
use crate::plan::{Schedule, Unit};

/// How many recent spaces or contents a loop remembers having seen.
const SEEN: usize = 64;

/// A longest chain of tasks holding more than this share of the iterations leaves the
/// other workers too little to pay for the plan's views and barriers.
const CHAIN_SHARE: f64 = 0.9;

/// Per loop: what the model measured and decided.
#[derive(Debug)]
pub(crate) struct Cost(Mutex<Model>);

#[derive(Debug)]
struct Model {
    /// Nanoseconds per iteration of the plan's runs (planning apart), moving average.
    plan_run: Option<f64>,
    /// Nanoseconds per iteration spent planning, per call that planned, moving average.
    planning: f64,
    /// Share of the plan's calls after its first that planned again (moving average).
    replans: f64,
    /// Calls that ran the plan.
    plan_calls: u64,
    /// Nanoseconds per iteration of the serial loop's runs, moving average.
    serial: Option<f64>,
    /// The plan (first) against the serial loop, once both were measured.
    duel: Duel,
    /// Decision lines printed (a few at most).
    said: u8,
    /// The last reason given, printed when it changes.
    last_reason: String,
    /// What recent calls ran over that a new plan pays set-up for: a sparse space's
    /// identity (bucketing its entries), or the hash of the contents that steer a
    /// reconnaissance loop's accesses (its survey); the most recent last, at most
    /// [`SEEN`]. A set, not the last call's alone, so that calls from several threads
    /// over data of their own each see their own again, whatever their interleaving.
    seen: std::collections::VecDeque<u64>,
    /// Nanoseconds per iteration of a static plan's set-up, when one was made.
    setup: Option<f64>,
    /// On a cluster job's driver: where the plan runs (see [`Place`]).
    place: Place,
}

impl Cost {
    pub(crate) const fn new() -> Self {
        Cost(Mutex::new(Model {
            plan_run: None,
            planning: 0.0,
            replans: 0.0,
            plan_calls: 0,
            serial: None,
            duel: Duel::new(),
            said: 0,
            last_reason: String::new(),
            seen: std::collections::VecDeque::new(),
            setup: None,
            place: Place::new(),
        }))
    }

    fn model(&self) -> std::sync::MutexGuard<'_, Model> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A call the cost model sent to the loop's original serial body: the generated code runs
/// it, then calls [`finish`](SerialRun::finish) so its time counts.
#[derive(Debug)]
#[must_use = "the generated code runs the serial loop and finishes it"]
pub struct SerialRun {
    cost: Option<(&'static super::LoopState, usize)>,
    start: Instant,
}

impl SerialRun {
    /// The serial loop run because the program asked for it (`STRADS_SERIAL=1`): not
    /// measured.
    pub fn requested() -> Self {
        SerialRun {
            cost: None,
            start: Instant::now(),
        }
    }

    /// The serial loop ended: its time per iteration joins the loop's model.
    pub fn finish(self) {
        if let Some((state, len)) = self.cost
            && len > 0
        {
            let ns = self.start.elapsed().as_nanos() as f64 / len as f64;
            let mut m = state.cost().model();
            m.serial = Some(average(m.serial, ns));
        }
    }
}

/// What a call did: ran its plan, or handed the loop back to its serial body.
#[derive(Debug)]
#[must_use = "a call handed back runs the original loop"]
pub struct Ran(Option<SerialRun>);

impl Ran {
    /// The plan ran.
    pub(crate) fn plan() -> Self {
        Ran(None)
    }

    /// The serial loop runs instead.
    pub(crate) fn handed_back(s: SerialRun) -> Self {
        Ran(Some(s))
    }

    /// The serial loop must run instead (`None`: the plan ran).
    pub fn serial(self) -> Option<SerialRun> {
        self.0
    }
}

/// What the model needs to know of a plan.
pub(crate) struct Shape {
    /// Iterations of the call.
    pub(crate) len: usize,
    /// Workers of the plan.
    pub(crate) workers: usize,
    /// Iterations on the plan's longest chain of tasks.
    pub(crate) chain: usize,
    /// A timing may choose the way: the plan's result is the original loop's, bit for bit,
    /// or depends on the threads' timing anyway (`sync = "hybrid"`).
    pub(crate) timed: bool,
    /// Why the plan runs every iteration on one worker for a reason of the data, when it
    /// does: the serial loop is then the same run, without the plan's views.
    pub(crate) alone: Option<&'static str>,
    /// The plan gives the serial loop's bits, but the serial loop would bring home more of
    /// the call's arrays than the driver may hold (`Call::may_time_with`): the plan runs
    /// where they are, whatever its shape.
    pub(crate) kept_away: bool,
}

/// The iterations on a schedule's longest chain: per step, its longest task.
pub(crate) fn chain(schedule: &Schedule, block_len: impl Fn(usize) -> usize) -> usize {
    (0..schedule.steps.len())
        .map(|t| {
            (0..schedule.workers)
                .map(|w| match schedule.task(t, w).map(|task| task.unit) {
                    Some(Unit::Ids(k)) => schedule.lists[k].len(),
                    Some(Unit::Block(id)) => block_len(id),
                    None => 0,
                })
                .max()
                .unwrap_or(0)
        })
        .sum()
}

/// Whether a plan whose longest chain of tasks runs `chain` of its `len` iterations
/// cannot pay.
pub(crate) fn hopeless(chain: usize, len: usize) -> bool {
    len > 0 && chain as f64 > CHAIN_SHARE * len as f64
}

/// Whether the cost model decides a call on `side`: not under `STRADS_COST=0` or
/// `testing::plans_always`, not in a replay, a recorded run or a worker rank's part of
/// the driver's call (it runs the plan the driver chose).
pub(crate) fn decides(side: &super::Side) -> bool {
    !matches!(side, super::Side::Replay(_) | super::Side::Worker(_))
        && crate::config::get().cost
        && !crate::testing::plans_always()
        && !crate::trace::recording()
}

impl super::LoopState {
    /// Before planning: the serial loop when the plan cannot pay whatever it is (one
    /// worker), or when the measurements chose it and no trial of the plan is due (a
    /// reconnaissance loop then records nothing).
    pub(crate) fn serial_before_plan(&'static self, len: usize) -> Option<SerialRun> {
        // One worker is measured like any other count: its plan may beat the serial loop
        // (a 2D plan's block order and prefetch), or not.
        let mut m = self.cost().model();
        let d = &mut m.duel;
        if d.chose_first == Some(false) && d.since + 1 < d.trial_after {
            d.since += 1;
            drop(m);
            return Some(self.measured_serial(len));
        }
        None
    }

    /// Before a plan that needs set-up (bucketing a sparse space) or a survey
    /// (reconnaissance) is made for `seen` (the space's identity, or the steering
    /// contents' hash): the serial loop, when the plan would not be used enough to pay for
    /// it. A survey pays only for calls over the same contents, so a reconnaissance loop
    /// surveys only contents a recent call saw too (`survey`); a sparse space's set-up is
    /// paid on the second call over it, or on any call where the serial loop, measured,
    /// costs more per iteration than the set-up and the plan's run would save: only for
    /// plans that give the serial loop's bits (the caller's part; others always run theirs).
    /// The survey rule depends only on the sequence of calls, never on a timing, and the
    /// same sequence runs on threads and across processes.
    pub(crate) fn serial_before_setup(
        &'static self,
        seen: u64,
        len: usize,
        workers: usize,
        survey: bool,
    ) -> Option<SerialRun> {
        let mut m = self.cost().model();
        let again = match m.seen.iter().position(|&s| s == seen) {
            Some(k) => {
                m.seen.remove(k);
                true
            }
            None => false,
        };
        if m.seen.len() == SEEN {
            m.seen.pop_front();
        }
        m.seen.push_back(seen);
        if again {
            return None;
        }
        if survey {
            drop(m);
            return Some(self.serial_for(len, || {
                "the contents that steer its accesses are new (a first call, or changed \
                 since the last): a survey would serve this call alone, so the serial loop \
                 runs; a call over the same contents as the one before it surveys"
                    .into()
            }));
        }
        // Only plans with the serial loop's bits get here: a timing may choose.
        let saves = |serial: f64| serial * (1.0 - 1.0 / workers.max(1) as f64);
        match (m.serial, m.setup) {
            (Some(serial), Some(setup)) if saves(serial) > setup => None,
            (serial, _) => {
                drop(m);
                Some(self.serial_for(len, || {
                    match serial {
                        None => "a first call over these entries: the serial loop runs, measured, \
                             before the plan's set-up (its blocks) is paid; a call over the same \
                             entries plans"
                            .into(),
                        Some(_) => "new entries whose set-up would cost more than the plan saves \
                                (measured)"
                            .into(),
                    }
                }))
            }
        }
    }

    /// A static plan's set-up took `ns` for `len` iterations.
    pub(crate) fn made_setup(&self, len: usize, ns: u64) {
        if len > 0 {
            let mut m = self.cost().model();
            m.setup = Some(average(m.setup, ns as f64 / len as f64));
        }
    }

    /// With the plan: the serial loop when its shape cannot pay, or when measurements say
    /// so (see the module). `None`: run the plan, then [`ran_plan`](Self::ran_plan).
    pub(crate) fn serial_with_plan(&'static self, shape: &Shape) -> Option<SerialRun> {
        if let Some(why) = shape.alone {
            return Some(self.serial_for(shape.len, || why.to_string()));
        }
        // (A plan alone on one worker would bring every part to it anyway: the serial loop
        // above, which then lets the ranks' parts go, is no worse.)
        if shape.kept_away {
            return None;
        }
        // One worker's chain is all its iterations: whether it pays is for the timings.
        if shape.workers > 1 && hopeless(shape.chain, shape.len) {
            let pct = 100.0 * shape.chain as f64 / shape.len as f64;
            return Some(self.serial_for(shape.len, || {
                format!(
                    "the plan's longest chain of tasks holds {pct:.0}% of the {} iterations \
                     on {} workers (one conflict component or a narrow wavefront); would \
                     help: `buffer(..)` for arrays every iteration updates, or `sync = \"bsp\"`",
                    shape.len, shape.workers
                )
            }));
        }
        let mut m = self.cost().model();
        if !shape.timed {
            return None;
        }
        let (Some(run), Some(serial)) = (m.plan_run, m.serial) else {
            // The plan has run once: try the serial loop once.
            return if m.plan_run.is_some() && m.serial.is_none() {
                drop(m);
                Some(self.measured_serial(shape.len))
            } else {
                None
            };
        };
        let plan = run + m.planning * m.replans;
        let (plan_runs, changed) = m.duel.pick(plan, serial, 1.0);
        drop(m);
        if let Some(after) = changed {
            self.say(|| {
                format!(
                    "{} (measured: the plan {plan:.1} ns per iteration, the serial loop \
                     {serial:.1}; the other is tried again after {after} calls)",
                    if plan_runs {
                        "runs its plan"
                    } else {
                        "runs its serial loop"
                    }
                )
            });
        }
        (!plan_runs).then(|| self.measured_serial(shape.len))
    }

    /// The plan ran `len` iterations in `run_ns`, after planning for `planned_ns` (0 when
    /// the plan was cached).
    pub(crate) fn ran_plan(&self, len: usize, run_ns: u64, planned_ns: Option<u64>) {
        if len == 0 {
            return;
        }
        let mut m = self.cost().model();
        // On a cluster's driver, the plan costs what its cheaper place measured: a trial of
        // the other place says nothing of the plan against the serial loop.
        let per = run_ns as f64 / len as f64;
        let per = m.place.best().map_or(per, |b| per.min(b));
        m.plan_run = Some(average(m.plan_run, per));
        if let Some(p) = planned_ns {
            m.planning = p as f64 / len as f64;
        }
        // The first plan is made whatever the way; later ones count against the plan.
        if m.plan_calls > 0 {
            m.replans = 0.5 * m.replans + if planned_ns.is_some() { 0.5 } else { 0.0 };
        }
        m.plan_calls += 1;
    }

    /// On a cluster job's driver, for a call whose arrays fit the driver (nothing forces
    /// it across): where its plan runs, and why (said under `STRADS_EXPLAIN`
    /// when the decision changes). See [`Place`].
    pub(crate) fn place(&self, workers: usize, one_host: bool, roomy: bool) -> Where {
        if one_host {
            if self.cost().model().place.first_on_one_host() {
                self.say(|| {
                    format!(
                        "runs on the driver's threads as the job's {workers} workers: every \
                         rank is on this machine, whose cores they share, and the driver's \
                         threads do the same work without the network (STRADS_COST=0 crosses)"
                    )
                });
            }
            return Where::Driver;
        }
        let (at, line) = self.cost().model().place.next(workers, roomy);
        if let Some(line) = line {
            self.say(|| line);
        }
        at
    }

    /// A call's plan ran `len` iterations in `ns`, where `at` says.
    pub(crate) fn ran_at(&self, at: Where, len: usize, ns: u64) {
        if len > 0 {
            self.cost().model().place.ran(at, ns as f64 / len as f64);
        }
    }

    /// Crossing was refused for this loop (`cluster::call::plan_call`'s reason, said
    /// apart): the driver's threads run its calls from now on.
    pub(crate) fn refused_crossing(&self) {
        self.cost().model().place.refuse();
    }

    /// The serial loop, for `reason` (made and said only under `STRADS_EXPLAIN`).
    pub(crate) fn serial_for(
        &'static self,
        len: usize,
        reason: impl FnOnce() -> String,
    ) -> SerialRun {
        self.say(|| format!("runs its serial loop: {}", reason()));
        self.measured_serial(len)
    }

    fn measured_serial(&'static self, len: usize) -> SerialRun {
        crate::testing::note_handed_back();
        SerialRun {
            cost: Some((self, len)),
            start: Instant::now(),
        }
    }

    /// Under `STRADS_EXPLAIN`, a decision line (when it changes; a few per loop); `line` is
    /// made only then.
    fn say(&self, line: impl FnOnce() -> String) {
        if !crate::config::explains() {
            return;
        }
        let line = line();
        let mut m = self.cost().model();
        if m.last_reason == line || m.said >= 4 {
            return;
        }
        m.said += 1;
        m.last_reason = line.clone();
        crate::log::say!(Explain, "strads cost {}: {line}", self.spec().name);
    }
}
