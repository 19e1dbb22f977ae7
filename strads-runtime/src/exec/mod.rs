//! Running loop calls: the one entry point generated code calls ([`Call`]), the plans it
//! caches per loop ([`LoopState`]), and the executor that runs a [`Schedule`] on threads.
//!
//! - `state`: [`LoopState`], the typed plan cache.
//! - `block`: [`Block`], one task as the generated code sees it.
//! - `threads`: the executor (live and serialized replay alike).
//! - `rounds`: where buffers are applied within tasks, and a replay's turns.
//! - `recon`: reconnaissance's survey pass, its plans and their ownership tables.

mod block;
pub(crate) mod cost;
mod recon;
mod rounds;
mod served;
mod state;
mod staticplan;
mod survey;
mod threads;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use strads_analysis::LoopSpec;

pub use block::Block;
pub use cost::{Ran, SerialRun};
pub use state::LoopState;
pub(crate) use staticplan::StaticPlan;
pub use survey::{Survey, SurveyView};

use crate::cluster::{self, call::Shipment};
use crate::plan::{self, ApplyPoints, Schedule};

/// The application points of a plan for `spec` on `p` workers: `None` without buffers.
pub(crate) fn apply_points(spec: &LoopSpec, p: usize) -> Option<ApplyPoints> {
    (!spec.buffers.is_empty()).then(|| ApplyPoints::new(spec.max_delay, p))
}
use crate::pool::{current_threads, in_worker};
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
    replay: Option<LoopRun>,
    apply: Option<&'a (dyn Fn(&Parked<'_>) + Sync)>,
    /// What crosses processes when the call runs on a cluster.
    ship: Option<Shipment<'a>>,
}

impl std::fmt::Debug for Call<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("loop", &self.state.spec().name)
            .field("workers", &self.workers)
            .field("replay", &self.replay.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> Call<'a> {
    /// A call of loop `state` on arrays of shapes `shapes` (in the spec's order).
    pub fn new(state: &'static LoopState, shapes: &'a [&'a [usize]]) -> Self {
        let replay = trace::next_replay(&state.spec().name);
        let workers = match &replay {
            Some(run) => run.steps.first().map_or(1, Vec::len).max(1),
            // A loop called from inside another loop's worker runs on that worker.
            None if in_worker() => 1,
            // A worker rank serving the driver: the driver's layout.
            None => match (cluster::call::serving(), cluster::session::worker()) {
                (Some(msg), Some(s)) => s.size() * msg.threads,
                // The driver (the first call starts the cluster, if the process is in one;
                // a worker rank starts serving there and never returns).
                _ => cluster::session::get().map_or_else(current_threads, |s| s.workers()),
            },
        };
        Call {
            state,
            shapes,
            workers,
            replay,
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
        arrays: &[&'a dyn cluster::wire::WireArray],
        parts: Option<&'a dyn cluster::call::PartsWire>,
    ) -> Self
    where
        Sp: serde::Serialize,
    {
        let remote = cluster::call::serving().is_some()
            || cluster::session::current().is_some_and(|s| s.size() > 1);
        if remote && self.replay.is_none() {
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

    /// Whether the call replays a recorded one.
    pub(crate) fn replays(&self) -> bool {
        self.replay.is_some()
    }

    /// Workers the call may run on: the copies a write-back buffer needs.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The loop's write-back buffers: `apply` applies them, every worker parked, at each
    /// application point of the schedule (see `plan::apply`).
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
        let decides = cost::decides(self.replay.is_some());
        if decides && let Some(serial) = state.serial_before_plan(len) {
            return Ran::handed_back(serial);
        }
        if decides && let Some(serial) = self.serial_before_setup(space) {
            return Ran::handed_back(serial);
        }
        let job = self.prepare(space);
        if decides && let Some(serial) = state.serial_with_plan(&job.shape(space)) {
            return Ran::handed_back(serial);
        }
        // A static plan is made once per space and shapes: its planning (bucketing a
        // sparse space, say) is not a cost of later calls, so the run alone is timed.
        let t = std::time::Instant::now();
        job.run(space, &f);
        if decides {
            state.ran_plan(len, t.elapsed().as_nanos() as u64, None);
        }
        Ran::plan()
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
        if let Some(plan) = served::by_blocks(&self, space) {
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
        if let Some(run) = &self.replay {
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
        keys: &'a dyn cluster::wire::WireArray,
        values: Option<&'a dyn cluster::call::ValuesWire>,
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
    pub(crate) fn shape<S: Space<Blocks = B>>(&self, space: &S) -> cost::Shape {
        let schedule = self.schedule();
        cost::Shape {
            len: space.len(),
            workers: schedule.workers,
            chain: cost::chain(schedule, |id| {
                self.blocks().map_or(0, |b| space.block_len(b, id))
            }),
            timed: self.plan.as_ref().is_some_and(|p| p.timed),
            alone: self.plan.as_ref().and_then(|p| p.alone),
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
        if let Some(ship) = &self.call.ship
            && !replaying
            && self.run_cluster(&exec, f, ship)
        {
            return;
        }
        let steps = threads::execute(&exec, f);
        if let Some(plan) = &self.plan {
            self.call.push_trace(&plan.summary, &plan.schedule, steps);
        }
    }
}

impl<B: Send + Sync + 'static> Job<'_, B> {
    /// Runs the call across processes when the program is a cluster job: as the driver,
    /// or as a worker serving the driver's call. `false`: run it in this process alone.
    fn run_cluster<S, F>(&self, base: &Execution<'_, S>, f: &F, ship: &Shipment<'_>) -> bool
    where
        S: Space<Blocks = B>,
        F: Fn(&mut Block<'_, S>) + Sync,
    {
        let space = base.space;
        // The driver of a call over a sparse space of numbers sends each rank only the
        // blocks it runs; the space array crosses as its shape.
        let index = self.call.state.spec().space_array();
        if let (Some(blocks), Some(i)) = (self.blocks(), index)
            && cluster::call::serving().is_none()
            && space.blocks_bytes(blocks, &[]).is_some()
            && let Some(meta) = ship.arrays.get(i).and_then(|a| a.meta(false))
        {
            let by_blocks = served::SpaceBlocks {
                space,
                blocks,
                key: (meta.id, meta.version),
            };
            let shape = cluster::wire::ShapeWire(ship.arrays[i]);
            let mut arrays = ship.arrays.clone();
            arrays[i] = &shape;
            let ship = Shipment {
                name: ship.name,
                captured: ship.captured.clone(),
                space: ship.space.clone(),
                arrays,
                parts: ship.parts,
                values: ship.values,
                blocks: Some(&by_blocks),
            };
            return across(base, &ship, f);
        }
        across(base, ship, f)
    }
}

/// Runs `base` across processes when the program is a cluster job: as the driver (when
/// the call can cross), or as a worker serving the driver's call, each process running
/// its workers of the schedule with the hooks that meet the others. `false`: run it in
/// this process alone.
pub(crate) fn across<S, F>(base: &Execution<'_, S>, ship: &Shipment<'_>, f: &F) -> bool
where
    S: Space,
    F: Fn(&mut Block<'_, S>) + Sync,
{
    let (state, schedule) = (base.state, base.schedule);
    let mut go = |peers: &dyn crate::sync::Peers| {
        let exec = Execution {
            peers: Some(peers),
            serialized: false,
            tracing: false,
            ..*base
        };
        threads::execute(&exec, f);
    };
    if let (Some(msg), Some(s)) = (cluster::call::serving(), cluster::session::worker()) {
        cluster::call::work(s, &msg, schedule, ship, &mut go);
        return true;
    }
    let Some(s) = cluster::session::current().filter(|s| s.size() > 1) else {
        return false;
    };
    if schedule.workers != s.workers() {
        return false;
    }
    let crossing = match cluster::call::plan_call(state.spec(), schedule, ship, s) {
        Ok(c) => c,
        Err(why) => {
            explain_local(state, &why);
            return false;
        }
    };
    let (sent, received) = s.bytes();
    cluster::call::drive(
        s,
        ship.name,
        state.spec(),
        schedule,
        ship,
        crossing,
        &mut go,
    );
    let (sent2, received2) = s.bytes();
    state.explain_cluster(|| {
        format!(
            "{} processes x {} threads; the driver sent {} and received {} bytes in the first call",
            s.size(),
            s.threads,
            sent2 - sent,
            received2 - received
        )
    });
    true
}

/// In a cluster job, says (once, under `STRADS_EXPLAIN`) that the loop runs on the
/// driver's threads alone, as many workers as the job has, and why.
pub(crate) fn explain_local(state: &LoopState, why: &str) {
    if cluster::call::serving().is_some() {
        return;
    }
    if let Some(s) = cluster::session::current().filter(|s| s.size() > 1) {
        state.explain_cluster(|| {
            format!(
                "runs on the driver's threads as the job's {} workers ({why})",
                s.workers()
            )
        });
    }
}
