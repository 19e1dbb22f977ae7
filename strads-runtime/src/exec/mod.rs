//! Running loop calls: the one entry point generated code calls ([`Call`]), the plans it
//! caches per loop ([`LoopState`]), and the executor that runs a [`Schedule`] on threads.
//!
//! - `across`: everything `exec/` knows of the cluster: the call's [`Side`](across::Side)
//!   (local, replay, driver, worker), running a call across processes, and a sparse
//!   space's blocks that cross rank by rank.
//! - `state`: [`LoopState`], the typed plan cache.
//! - `block`: [`Block`], one task as the generated code sees it.
//! - `threads`: the executor (live and serialized replay alike).
//! - `rounds`: where buffers are applied within tasks, and a replay's turns.
//! - `recon`: reconnaissance's survey pass, its plans and their ownership tables.

mod across;
mod ahead;
mod block;
pub(crate) mod cost;
mod place;
mod recon;
mod rounds;
mod state;
mod staticplan;
mod survey;
mod threads;
mod trial;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use strads_analysis::LoopSpec;

pub use block::Block;
pub use cost::{Ran, SerialRun};
pub use state::LoopState;
pub(crate) use staticplan::StaticPlan;
pub use survey::{Survey, SurveyView};

use crate::plan::{self, ApplyPoints, Schedule};
use across::{PartsWire, Served, Shipment, ValuesWire, WireArray};
pub(crate) use across::{Side, explain_local};

/// The application points of a plan for `spec` on `p` workers: `None` without buffers.
pub(crate) fn apply_points(spec: &LoopSpec, p: usize) -> Option<ApplyPoints> {
    (!spec.buffers.is_empty()).then(|| ApplyPoints::new(spec.max_delay, p))
}
use crate::space::Space;
use crate::sync::Parked;
use crate::trace::{self, LoopRun};
use state::PlanKey;
pub(crate) use threads::Execution;

/// Whether the original serial loops should run: `STRADS_SERIAL=1`, or inside
/// [`testing::serial`](crate::testing::serial).
pub fn serial_env() -> bool {
    crate::config::get().serial || trace::forced_serial()
}

/// One call of a `#[parallel_for]` loop: what generated code builds and runs.
///
/// `Call::new` decides how the call runs: on the pool's workers, or, inside
/// [`testing::replay`](crate::testing::replay), as the serial replay of the next recorded
/// call. [`workers`](Call::workers) tells how many copies write-back buffers need;
/// [`buffered`](Call::buffered) names the function that applies them at the schedule's
/// application points. Then one of [`run`](Call::run) (a static plan),
/// [`run_surveyed`](Call::run_surveyed) (reconnaissance) or [`run_mut`](Call::run_mut)
/// (`iter_mut()` loops) runs it; each runs a [`Schedule`], live or replayed, with the same
/// executor.
pub struct Call<'a> {
    pub(crate) state: &'static LoopState,
    shapes: &'a [&'a [usize]],
    workers: usize,
    /// Where the call runs, decided once by its constructor.
    pub(crate) side: Side,
    apply: Option<&'a (dyn Fn(&Parked<'_>) + Sync)>,
    /// What crosses processes when the call runs on a cluster.
    ship: Option<Shipment<'a>>,
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("loop", &self.state.spec().name)
            .field("workers", &self.workers)
            .field("side", &self.side)
            .finish_non_exhaustive()
    }
}

impl<'a> Call<'a> {
    /// A call of loop `state` on arrays of shapes `shapes` (in the spec's order), made by
    /// the program: on this process's workers, the replay of a recorded call, or, on a
    /// cluster job's driver, across every rank (its first call starts the job).
    pub fn new(state: &'static LoopState, shapes: &'a [&'a [usize]]) -> Self {
        let (side, workers) = Side::of_program(&state.spec().name);
        Call::with_side(state, shapes, side, workers)
    }

    /// A worker rank's part of the driver's call `served`: what the generated serve
    /// function makes, with the context the worker's serve loop gave it.
    pub fn served(state: &'static LoopState, shapes: &'a [&'a [usize]], served: Served) -> Self {
        let (side, workers) = Side::of_served(served);
        Call::with_side(state, shapes, side, workers)
    }

    fn with_side(
        state: &'static LoopState,
        shapes: &'a [&'a [usize]],
        side: Side,
        workers: usize,
    ) -> Self {
        Call {
            state,
            shapes,
            workers,
            side,
            apply: None,
            ship: None,
        }
    }

    /// What the call sends to other processes when it runs on a cluster: the loop struct
    /// (registered as `name`, encoded by `lp` only when the call ships), the iteration
    /// space when it is not an array, the arrays in the spec's order and the reductions'
    /// parts. Nothing is encoded when the program runs as one process.
    pub fn cluster<Sp>(
        mut self,
        name: &'static str,
        lp: impl FnOnce() -> Option<Vec<u8>>,
        space: Option<&Sp>,
        arrays: &[&'a dyn WireArray],
        parts: Option<&'a dyn PartsWire>,
    ) -> Self
    where
        Sp: serde::Serialize,
    {
        if self.side.remote() {
            // `None` only in a build that fails (captured values that do not serialize).
            let Some(captured) = lp() else { return self };
            self.ship = Some(Shipment {
                name,
                captured,
                space: space
                    .map(|s| postcard::to_allocvec(s).expect("spaces serialize"))
                    .unwrap_or_default(),
                arrays: arrays.to_vec(),
                parts,
                values: None,
                blocks: None,
            });
        }
        self
    }

    /// Workers the call may run on: the copies a write-back buffer needs.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The loop's write-back buffers: `apply` applies them, every worker parked, at each
    /// application point of the schedule (see `plan::apply`); under `sync = "ssp(s)"` it
    /// also runs the run-ahead's phases (`Parked` says which), each touching what it names.
    pub fn buffered(mut self, apply: &'a (dyn Fn(&Parked<'_>) + Sync)) -> Self {
        self.apply = Some(apply);
        self
    }

    /// Runs the call with a plan from the loop's static strategy (cached per space, shapes
    /// and worker count), or hands it back to the loop's serial body when the plan cannot
    /// pay (`cost`). `f` runs one block.
    pub fn run<S, F>(self, space: &S, f: F) -> Ran
    where
        S: Space,
        F: Fn(&mut Block<'_, S>) + Sync,
    {
        let (state, len) = (self.state, space.len());
        let decides = cost::decides(&self.side);
        // A spread space's entries would come home for the serial loop too.
        let times = decides && self.may_time_with(space.away_bytes());
        if times && let Some(serial) = state.serial_before_plan(len) {
            return Ran::handed_back(serial);
        }
        if times && let Some(serial) = self.serial_before_setup(space) {
            return Ran::handed_back(serial);
        }
        let job = self.prepare(space);
        if decides && let Some(serial) = state.serial_with_plan(&job.shape(space, times)) {
            return Ran::handed_back(serial);
        }
        // A static plan is made once per space and shapes: its planning (bucketing a
        // sparse space, say) is not a cost of later calls, so the run alone is timed.
        let t = std::time::Instant::now();
        job.run(space, &f);
        if times {
            state.ran_plan(len, t.elapsed().as_nanos() as u64, None);
        }
        Ran::plan()
    }

    /// Whether the cost model may choose this call's way by timings and set-up costs
    /// (the rules under which both ways give the same bits): not on a cluster job's driver
    /// when arrays of the call with parts on other ranks (or created in place and not made
    /// yet) hold more than `across::HOME_BUDGET` bytes. The serial loop would bring each
    /// such array home whole, which is what parts are for not to do; the plan runs where
    /// the parts are instead. Smaller ones may come home when that pays. The rules from
    /// the plan's shape, whose ways differ in bits, still apply (`cost::decides`), so a
    /// call prints what the same worker count prints on threads.
    /// (`extra`: bytes away besides the arrays' parts: a spread space's entries, an
    /// `iter_mut()` loop's values left on the ranks.)
    pub(crate) fn may_time_with(&self, extra: u64) -> bool {
        self.ship
            .as_ref()
            .is_none_or(|ship| across::may_come_home_with(ship, extra))
    }

    /// The static plan's key for `space`.
    fn key<S: Space>(&self, space: &S) -> PlanKey {
        PlanKey {
            space: space.identity(),
            workers: self.workers,
            shapes: self.shapes.iter().map(|s| s.to_vec()).collect(),
            contents: None,
        }
    }

    /// The serial loop, when the static plan for `space` is not made yet and its set-up
    /// would not pay (see `cost`). Only for plans with the serial loop's bits: a plan with
    /// other bits always runs, so whether a call ran it never depends on the calls before
    /// it (threads and processes, which make their plans at other times, print the same).
    pub(crate) fn serial_before_setup<S: Space>(&self, space: &S) -> Option<cost::SerialRun> {
        let (state, spec) = (self.state, self.state.spec());
        // As `StaticPlan::timed`, for every candidate the plan may take.
        let keeps_order = spec.ordered
            || state.analysis().candidates.iter().all(|c| {
                matches!(
                    c.strategy,
                    strads_analysis::Strategy::OneD { .. }
                        | strads_analysis::Strategy::Wavefront { .. }
                )
            });
        if !staticplan::timed(spec, keeps_order) || !space.needs_setup() {
            return None;
        }
        let key = self.key(space);
        if state.cached(&key, |_: &StaticPlan<S::Blocks>| true) {
            return None;
        }
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.space.hash(&mut h);
        state.serial_before_setup(h.finish(), space.len(), self.workers, false)
    }

    /// The call's schedule: the static plan's (made or cached), or the replay's; on a
    /// worker rank whose space crosses by blocks, the driver's, with this rank's blocks.
    pub(crate) fn prepare<S: Space>(self, space: &S) -> Job<'a, S::Blocks> {
        if let Some(plan) = across::by_blocks(&self, space) {
            return Job {
                call: self,
                plan: Some(Arc::new(plan)),
                replayed: None,
            };
        }
        self.plan_here(space)
    }

    /// The call's schedule, planned in this process (or the replay's).
    fn plan_here<S: Space>(self, space: &S) -> Job<'a, S::Blocks> {
        if let Some(run) = self.side.replay() {
            let schedule = plan::replay::schedule(
                &run.steps,
                &run.applied,
                run.max_delay,
                self.apply.is_some(),
                self.state.spec().arrays.len(),
            );
            return Job {
                call: self,
                plan: None,
                replayed: Some(schedule),
            };
        }
        let state = self.state;
        let key = self.key(space);
        let plan = state.plan(
            key,
            |_: &StaticPlan<S::Blocks>| true,
            || {
                let t = std::time::Instant::now();
                let plan = StaticPlan::new(state, space, self.shapes, self.workers);
                state.made_setup(space.len(), t.elapsed().as_nanos() as u64);
                plan
            },
        );
        state.explain_once(|| plan::summary::with_buffers(state.spec(), &plan.summary));
        Job {
            call: self,
            plan: Some(plan),
            replayed: None,
        }
    }

    /// Replays the recorded call serially, on its workers' threads one segment at a time.
    fn replay<S, F>(self, space: &S, f: &F)
    where
        S: Space,
        F: Fn(&mut Block<'_, S>) + Sync,
    {
        self.prepare(space).run(space, f);
    }

    /// Under `testing::record`, keeps what the workers ran.
    fn push_trace(&self, summary: &str, schedule: &Schedule, steps: Vec<Vec<Vec<usize>>>) {
        if !trace::recording() {
            return;
        }
        let spec = self.state.spec();
        let buffered = self.apply.is_some();
        trace::push_run(LoopRun {
            loop_name: spec.name.to_string(),
            plan: plan::summary::with_buffers(spec, summary),
            applied: schedule
                .steps
                .iter()
                .map(|s| buffered && s.applies)
                .collect(),
            max_delay: spec.max_delay.filter(|_| buffered),
            steps,
        });
    }
}

/// A loop's static plan for a space, as data: what [`LoopState::planned`] returns.
#[derive(Clone, Debug)]
pub struct Planned {
    /// The schedule.
    pub schedule: Schedule,
    /// `iterations[t][w]`: the iteration ids (positions in the serial order) of the task
    /// worker `w` runs at step `t`, in the order it runs them.
    pub iterations: Vec<Vec<Vec<usize>>>,
    /// The plan line (`STRADS_EXPLAIN`).
    pub summary: String,
}

impl LoopState {
    /// The static plan a call of this loop over `space` (arrays of shapes `shapes`) gets on
    /// `workers` workers, as data: its schedule and each task's iterations. Made (and
    /// cached) as a call would.
    ///
    /// # Panics
    /// As a call does: when the loop has no static plan (reconnaissance plans are made
    /// from a survey pass, by a call), or an ordered loop iterates unsorted entries.
    pub fn planned<S: Space>(
        &'static self,
        space: &S,
        shapes: &[&[usize]],
        workers: usize,
    ) -> Planned {
        let key = PlanKey {
            space: space.identity(),
            workers,
            shapes: shapes.iter().map(|s| s.to_vec()).collect(),
            contents: None,
        };
        let plan = self.plan(
            key,
            |_: &StaticPlan<S::Blocks>| true,
            || StaticPlan::new(self, space, shapes, workers),
        );
        let sched = &plan.schedule;
        let iterations = (0..sched.steps.len())
            .map(|t| {
                (0..sched.workers)
                    .map(|w| {
                        let mut ids = Vec::new();
                        match sched.task(t, w).map(|task| task.unit) {
                            Some(plan::Unit::Block(id)) => {
                                space.for_each_in(&plan.blocks, id, Some(&mut ids), |_| ())
                            }
                            Some(plan::Unit::Ids(k)) => {
                                ids.extend(sched.lists[k].iter().map(|&i| i as usize))
                            }
                            None => {}
                        }
                        ids
                    })
                    .collect()
            })
            .collect();
        Planned {
            schedule: sched.clone(),
            iterations,
            summary: plan.summary.clone(),
        }
    }
}

/// A call with its schedule, ready to run.
pub(crate) struct Job<'a, B> {
    call: Call<'a>,
    /// The static plan; `None` in a replay.
    plan: Option<Arc<StaticPlan<B>>>,
    /// The replay's schedule.
    replayed: Option<Schedule>,
}

impl<'a, B> Job<'a, B> {
    /// Where the call runs.
    pub(crate) fn side(&self) -> &Side {
        &self.call.side
    }

    /// Whether the call ships to other processes when it can.
    pub(crate) fn ships(&self) -> bool {
        self.call.ship.is_some()
    }

    /// Runs the call in this process alone.
    pub(crate) fn stay_local(&mut self) {
        self.call.ship = None;
    }

    /// An `iter_mut()` call: array `space` crosses as `keys` (its indices), its values as
    /// `values`.
    pub(crate) fn iterated(
        &mut self,
        space: usize,
        keys: &'a dyn WireArray,
        values: Option<&'a dyn ValuesWire>,
    ) {
        if let Some(ship) = &mut self.call.ship
            && let Some(slot) = ship.arrays.get_mut(space)
        {
            *slot = keys;
            ship.values = values;
        }
    }
}

impl<B: Send + Sync + 'static> Job<'_, B> {
    /// The schedule it runs.
    pub(crate) fn schedule(&self) -> &Schedule {
        match (&self.plan, &self.replayed) {
            (Some(plan), _) => &plan.schedule,
            (None, Some(schedule)) => schedule,
            (None, None) => unreachable!("a job has a plan or replays"),
        }
    }

    /// The blocks the schedule's tasks name (a static plan's).
    pub(crate) fn blocks(&self) -> Option<&B> {
        self.plan.as_ref().map(|p| &*p.blocks)
    }

    /// What the cost model weighs of the plan.
    /// `times`: whether the cost model may time the call (`Call::may_time_with`).
    pub(crate) fn shape<S: Space<Blocks = B>>(&self, space: &S, times: bool) -> cost::Shape {
        let schedule = self.schedule();
        cost::Shape {
            len: space.len(),
            workers: schedule.workers,
            chain: cost::chain(schedule, |id| {
                self.blocks().map_or(0, |b| space.block_len(b, id))
            }),
            timed: times && self.plan.as_ref().is_some_and(|p| p.timed),
            alone: self.plan.as_ref().and_then(|p| p.alone),
            // `times` is false here (the cost model deciding) only for arrays away beyond
            // the driver's share; a timing-dependent plan (`hybrid`) is not the serial
            // loop's bits.
            kept_away: !times
                && self.plan.as_ref().is_some_and(|p| p.timed)
                && !staticplan::timing_dependent(self.call.state.spec()),
        }
    }

    /// Runs it: live, or serialized when it replays a recorded call.
    pub(crate) fn run<S, F>(&self, space: &S, f: &F)
    where
        S: Space<Blocks = B>,
        F: Fn(&mut Block<'_, S>) + Sync,
    {
        let replaying = self.plan.is_none();
        let exec = Execution {
            state: self.call.state,
            space,
            blocks: self.blocks(),
            schedule: self.schedule(),
            owners: None,
            apply: self.call.apply,
            serialized: replaying,
            tracing: !replaying && trace::recording(),
            peers: None,
        };
        let crossed = match &self.call.ship {
            Some(ship) if !replaying => self.run_cluster(&exec, f, ship),
            _ => None,
        };
        let steps = match crossed {
            Some(steps) => steps,
            None => {
                // `iter_mut()` values an earlier call left on other ranks come home first.
                if let Some(v) = self.call.ship.as_ref().and_then(|s| s.values) {
                    v.home();
                }
                threads::execute(&exec, f)
            }
        };
        if let Some(plan) = &self.plan {
            self.call.push_trace(&plan.summary, &plan.schedule, steps);
        }
    }
}
