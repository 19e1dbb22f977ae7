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
//!   at most [`TRIAL_BUDGET`] of the time spent since. So a timing never changes what a
//!   program prints, and a loop that cannot pay (a small wavefront, a call too short for
//!   its barriers) falls back to its serial loop after one trial.
//!
//! `STRADS_COST=0` always runs the plan. Replays, recorded runs and a cluster worker's
//! part of the driver's call always run the plan they are given.

use std::sync::Mutex;
use std::time::Instant;

use crate::plan::{Schedule, Unit};

/// The share of the time spent since the last trial that a trial of the losing way may
/// cost.
const TRIAL_BUDGET: f64 = 0.02;

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
    /// Whether both ways were measured and compared, and the way chosen then (`true`:
    /// the serial loop).
    decided: bool,
    chose_serial: bool,
    /// Calls since the way was chosen, and after how many the other is tried again.
    since: u64,
    trial_after: u64,
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

/// On a cluster job's driver, where a call's plan runs: across the ranks, or on the
/// driver's threads as the job's workers (the same schedule, so the same bits). Measured
/// like the serial loop against the plan: nanoseconds per iteration of each way, the
/// cheaper chosen, the other tried again after calls that make the trial cost at most
/// [`TRIAL_BUDGET`] of the time since. When every rank is on the driver's machine the
/// driver's threads always run it: they share its cores with the other ranks, and do the
/// same work without the network. Before any measurement a call runs on the driver (a
/// crossing's first call pays the shipping of everything it reads: it can cost many times
/// the loop itself); crossing is tried on the next call. Only calls whose arrays fit the
/// driver are placed (`exec::across::HOME_BUDGET`); others run where their parts are.
#[derive(Debug, Default)]
struct Place {
    cross: Option<f64>,
    local: Option<f64>,
    decided: bool,
    chose_local: bool,
    since: u64,
    trial_after: u64,
    /// The way of the last call, and whether it was the first after a switch of way: a
    /// warm-up (crossing after the driver's threads re-ships what came home; the driver's
    /// threads after crossing fetch what stayed away), not recorded; the next call then
    /// runs the same way (`repeat`) and is.
    last: Option<Where>,
    warm: bool,
    repeat: Option<Where>,
    /// Crossing was refused (captured values too large, ...): the driver's threads run
    /// every call.
    refused: bool,
    /// Whether the one-machine decision was said.
    said_one_host: bool,
}

/// With a core for every worker of the job on the driver's machine, crossing is first
/// tried after this many calls on the driver's threads (a trial of up to twice their time
/// then costs at most [`TRIAL_BUDGET`] of the time spent).
const FIRST_TRIAL_ROOMY: u64 = 50;

impl Place {
    /// Where the next call runs, and the decision line when the decision changes. `roomy`:
    /// the driver's machine has a core for every worker of the job, so its threads run
    /// the job's workers at full speed and crossing can only gain by other machines'
    /// memory and caches: it is first tried only after [`FIRST_TRIAL_ROOMY`] calls.
    fn next(&mut self, workers: usize, roomy: bool) -> (Where, Option<String>) {
        if self.refused {
            return (Where::Driver, None);
        }
        if let Some(w) = self.repeat.take() {
            self.last = Some(w);
            return (w, None);
        }
        let (w, line) = self.choose(workers, roomy);
        if self.last.is_some_and(|l| l != w) {
            self.warm = true;
            self.repeat = Some(w);
        }
        self.last = Some(w);
        (w, line)
    }

    fn choose(&mut self, workers: usize, roomy: bool) -> (Where, Option<String>) {
        let (cross, local) = match (self.cross, self.local) {
            (Some(c), Some(l)) => (c, l),
            (None, None) => {
                let when = if roomy {
                    format!(
                        "after {FIRST_TRIAL_ROOMY} calls (this machine has a core for each \
                         worker)"
                    )
                } else {
                    "on the next call".to_string()
                };
                let line = format!(
                    "runs on the driver's threads as the job's {workers} workers: a first \
                     call, whose arrays fit the driver (crossing would first ship them \
                     out); crossing is tried {when}, timed twice"
                );
                return (Where::Driver, Some(line));
            }
            (None, Some(_)) => {
                self.since += 1;
                if roomy && self.since < FIRST_TRIAL_ROOMY {
                    return (Where::Driver, None);
                }
                self.since = 0;
                return (Where::Across, None);
            }
            (Some(_), None) => return (Where::Driver, None),
        };
        let local_wins = local <= cross;
        let way = |local: bool| if local { Where::Driver } else { Where::Across };
        if !self.decided || local_wins != self.chose_local {
            self.decided = true;
            self.chose_local = local_wins;
            self.since = 0;
            let (lo, hi) = if local_wins {
                (local, cross)
            } else {
                (cross, local)
            };
            // A trial is two calls (a warm-up and a measured one).
            self.trial_after = ((2.0 * (hi / lo.max(1e-9) - 1.0)) / TRIAL_BUDGET)
                .ceil()
                .clamp(2.0, 10_000.0) as u64;
            let line = format!(
                "{} (measured: across the ranks {cross:.1} ns per iteration, on the driver's \
                 threads as the job's {workers} workers {local:.1}; the other is tried again \
                 after {} calls)",
                if local_wins {
                    "runs on the driver's threads"
                } else {
                    "runs across the ranks"
                },
                self.trial_after
            );
            return (way(local_wins), Some(line));
        }
        self.since += 1;
        let trial = self.since >= self.trial_after;
        if trial {
            self.since = 0;
        }
        (way(local_wins != trial), None)
    }

    /// A call ran `per` nanoseconds per iteration `at` its place: recorded unless it was a
    /// warm-up.
    fn ran(&mut self, at: Where, per: f64) {
        if std::mem::take(&mut self.warm) {
            return;
        }
        let slot = match at {
            Where::Across => &mut self.cross,
            Where::Driver => &mut self.local,
        };
        *slot = Some(average(*slot, per));
    }

    /// The cheaper way measured, per iteration, once both were.
    fn best(&self) -> Option<f64> {
        Some(self.cross?.min(self.local?))
    }
}

/// Where the driver runs a call's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Where {
    /// Across the job's ranks.
    Across,
    /// On the driver's threads, as the job's workers.
    Driver,
}

/// Moving average of measurements: recent calls count most.
fn average(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |o| 0.5 * o + 0.5 * new)
}

impl Cost {
    pub(crate) const fn new() -> Self {
        Cost(Mutex::new(Model {
            plan_run: None,
            planning: 0.0,
            replans: 0.0,
            plan_calls: 0,
            serial: None,
            decided: false,
            chose_serial: false,
            since: 0,
            trial_after: 0,
            said: 0,
            last_reason: String::new(),
            seen: std::collections::VecDeque::new(),
            setup: None,
            place: Place {
                cross: None,
                local: None,
                decided: false,
                chose_local: false,
                since: 0,
                trial_after: 0,
                last: None,
                warm: false,
                repeat: None,
                refused: false,
                said_one_host: false,
            },
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
        if m.decided && m.chose_serial && m.since + 1 < m.trial_after {
            m.since += 1;
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
        let serial_wins = serial < plan;
        if !m.decided || serial_wins != m.chose_serial {
            m.decided = true;
            m.chose_serial = serial_wins;
            m.since = 0;
            let (lo, hi) = if serial_wins {
                (serial, plan)
            } else {
                (plan, serial)
            };
            m.trial_after = ((hi / lo - 1.0) / TRIAL_BUDGET).ceil().clamp(2.0, 10_000.0) as u64;
            let line = format!(
                "{} (measured: the plan {plan:.1} ns per iteration, the serial loop \
                 {serial:.1}; the other is tried again after {} calls)",
                if serial_wins {
                    "runs its serial loop"
                } else {
                    "runs its plan"
                },
                m.trial_after
            );
            drop(m);
            self.say(|| line);
            return serial_wins.then(|| self.measured_serial(shape.len));
        }
        m.since += 1;
        // A trial of the losing way when it is due.
        let trial = m.since >= m.trial_after;
        if trial {
            m.since = 0;
        }
        drop(m);
        (serial_wins != trial).then(|| self.measured_serial(shape.len))
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

    /// On a cluster job's driver, whose data all live on the driver (nothing forces the
    /// call across): where this call's plan runs, and why (said under `STRADS_EXPLAIN`
    /// when the decision changes). See [`Place`].
    pub(crate) fn place(&self, workers: usize, one_host: bool, roomy: bool) -> Where {
        if one_host {
            let first = !std::mem::replace(&mut self.cost().model().place.said_one_host, true);
            if first {
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
        self.cost().model().place.refused = true;
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

#[cfg(test)]
mod tests {
    use super::{Place, Where};

    /// The first call runs on the driver, then two crossings (a warm-up, then one
    /// measured), then the cheaper way, the other tried again (twice) after the calls its
    /// cost allows; with a core for every worker, crossing waits 50 calls.
    #[test]
    fn the_driver_first_then_two_crossings_then_the_cheaper_with_trials() {
        let mut p = Place::default();
        let (at, line) = p.next(2, false);
        assert_eq!(at, Where::Driver);
        assert!(line.unwrap().contains("a first call"));
        p.ran(Where::Driver, 10.0);
        assert_eq!(p.next(2, false), (Where::Across, None));
        p.ran(Where::Across, 1000.0); // the warm-up: not recorded
        assert_eq!(p.cross, None);
        assert_eq!(p.next(2, false), (Where::Across, None));
        p.ran(Where::Across, 30.0);
        // Crossing costs 3x: the driver wins, crossing tried after 2 (3 - 1) / 2% = 200.
        let (at, line) = p.next(2, false);
        assert_eq!(at, Where::Driver);
        assert!(line.unwrap().contains("after 200 calls"));
        p.ran(Where::Driver, 10.0); // the warm-up back on the driver
        assert_eq!(p.local, Some(10.0));
        assert_eq!(p.next(2, false), (Where::Driver, None)); // its repeat
        p.ran(Where::Driver, 10.0);
        let ways: Vec<Where> = (0..200).map(|_| p.next(2, false).0).collect();
        assert!(ways[..199].iter().all(|w| *w == Where::Driver));
        assert_eq!(ways[199], Where::Across);
        assert_eq!(p.next(2, false), (Where::Across, None)); // the trial's second call
        // Crossing measured cheaper now: it wins, said once.
        p.cross = Some(5.0);
        let (at, line) = p.next(2, false);
        assert_eq!(at, Where::Across);
        assert!(line.unwrap().starts_with("runs across the ranks"));
        assert_eq!(p.best(), Some(5.0));

        let mut roomy = Place::default();
        assert!(roomy.next(2, true).1.unwrap().contains("after 50 calls"));
        roomy.ran(Where::Driver, 10.0);
        let ways: Vec<Where> = (0..50).map(|_| roomy.next(2, true).0).collect();
        assert!(ways[..49].iter().all(|w| *w == Where::Driver));
        assert_eq!(ways[49], Where::Across);
        roomy.refused = true;
        assert_eq!(roomy.next(2, true), (Where::Driver, None));
    }
}
