//! Reconnaissance: on the first call with given contents, a survey pass runs the body over
//! every iteration through survey views; the touches make task groups (see
//! `plan::recon`), cached while the contents that steer the accesses stay the same.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::block::Block;
use super::cost::{self, Ran};
use super::state::PlanKey;
use super::threads::{self, Execution};
use super::{Call, LoopState};
use crate::array::view::Owners;
use crate::exec::survey::Survey;
use crate::plan;
use crate::space::Space;

/// A reconnaissance plan: its schedule and the ownership table its runs claim.
pub(crate) struct ReconPlan {
    schedule: plan::Schedule,
    owners: Arc<[AtomicU64]>,
    /// Held while a call runs: two calls of the loop on the same data (from two threads)
    /// share the ownership table, so they take turns.
    running: Mutex<()>,
    /// Calls so far: part of every stamp, so a stale claim never looks current.
    calls: AtomicU64,
    summary: String,
    /// The key bytes of the captured values the plan was recorded with.
    captured: Box<[u8]>,
    /// Running it gives the original loop's bits: no component was split (each keeps its
    /// iterations' order on one worker) and merges are exact (see `cost`).
    timed: bool,
    /// Not a plan: a sample of the survey showed that the loop cannot pay, and why.
    hopeless: Option<String>,
}

/// Iterations per batch: small batches cut conflict components (Cyclades), large ones
/// cost fewer barriers.
fn batch_size(n: usize, p: usize) -> usize {
    (n / 32).max(512 * p).max(1)
}

impl Call<'_> {
    /// Runs the call with a plan made by reconnaissance: on the first call with these
    /// contents, `survey` runs the body over every iteration through survey views; the
    /// recorded touches make task groups, cached for later calls while `keys` (the ids and
    /// versions of the arrays the loop reads), `captured` (the key bytes of the captured
    /// values that may steer the accesses, see [`capture_key`](crate::capture_key)) and
    /// the shapes are the same. `f` runs one block.
    pub fn run_surveyed<S, R, F>(
        self,
        space: &S,
        keys: &[(u64, u64)],
        captured: &[u8],
        survey: R,
        f: F,
    ) -> Ran
    where
        S: Space,
        R: Fn(&Survey<'_, S>),
        F: Fn(&mut Block<'_, S>) + Sync,
    {
        if self.side.replay().is_some() {
            self.replay(space, &f);
            return Ran::plan();
        }
        // A worker rank serving the driver's call runs the schedule the driver recorded.
        if let Some(ship) = &self.ship
            && self.side.served().is_some()
        {
            self.serve_surveyed(space, ship, &f);
            return Ran::plan();
        }
        let state = self.state;
        let spec = state.spec();
        // Measured calls: a loop whose serial body was found cheaper records nothing.
        let decides = cost::decides(&self.side);
        // (A spread space comes home for a survey whatever runs the call: it reads every
        // iteration here.)
        let times = decides && self.may_time_with(0);
        if times && let Some(serial) = state.serial_before_plan(space.len()) {
            return Ran::handed_back(serial);
        }
        let t = std::time::Instant::now();
        let planned = std::cell::Cell::new(None);
        // The plan depends on the contents of the arrays whose values steer what the body
        // touches, and on the iteration space's array (its keys are the iterations); the
        // contents of any other array change no touch (a written one reads as stand-ins).
        let space_array = spec.space_array();
        let read_keys: Vec<(u64, u64)> = keys
            .iter()
            .enumerate()
            .filter(|(a, _)| spec.arrays[*a].steers || space_array == Some(*a))
            .map(|(_, k)| *k)
            .collect();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        captured.hash(&mut h);
        let key = PlanKey {
            space: space.identity(),
            workers: self.workers,
            shapes: self.shapes.iter().map(|s| s.to_vec()).collect(),
            contents: Some((read_keys, h.finish())),
        };
        // A sample's verdict serves only calls the cost model decides.
        let accept =
            |plan: &ReconPlan| *plan.captured == *captured && (decides || plan.hopeless.is_none());
        // Only where the plan gives the serial loop's bits but for split components (no
        // buffer, exact merges): whether a call ran serially must not show in what the
        // program prints.
        let exact = spec.buffers.is_empty() && super::staticplan::merges_exactly(spec);
        // The survey rule depends only on the sequence of calls, and a split plan's bits
        // differ from the serial loop's: it applies wherever the model decides, on a
        // cluster too (where the serial loop then brings the arrays home).
        if decides && exact && !state.cached(&key, accept) {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            key.contents.hash(&mut h);
            if let Some(serial) =
                state.serial_before_setup(h.finish(), space.len(), self.workers, true)
            {
                return Ran::handed_back(serial);
            }
        }
        let plan = state.plan(key, accept, || {
            let plan = plan_by_survey(
                state,
                space,
                (self.shapes, self.workers),
                captured,
                &survey,
                decides,
            );
            planned.set(Some(t.elapsed().as_nanos() as u64));
            plan
        });
        state.explain_once(|| plan::summary::with_buffers(spec, &plan.summary));
        if let Some(reason) = &plan.hopeless {
            return Ran::handed_back(state.serial_for(space.len(), || reason.clone()));
        }
        let schedule = &plan.schedule;
        if decides {
            let shape = cost::Shape {
                len: space.len(),
                workers: schedule.workers,
                chain: cost::chain(schedule, |_| 0),
                timed: times && plan.timed,
                alone: None,
                kept_away: !times && plan.timed,
            };
            if let Some(serial) = state.serial_with_plan(&shape) {
                return Ran::handed_back(serial);
            }
        }
        let t = std::time::Instant::now();
        let _turn = plan.running.lock().unwrap_or_else(|e| e.into_inner());
        let owners = Owners {
            table: &plan.owners,
            call: plan.calls.fetch_add(1, Ordering::Relaxed) + 1,
            workers: schedule.workers,
            strict: false,
        };
        let exec = Execution {
            state,
            space,
            blocks: None,
            schedule,
            owners: Some(owners),
            apply: self.apply,
            serialized: false,
            tracing: crate::trace::recording(),
            peers: None,
        };
        // Across processes, a row another rank claims is not current here: reads need the
        // claim too.
        if let Some(ship) = &self.ship {
            let strict = Execution {
                owners: Some(Owners {
                    strict: true,
                    ..owners
                }),
                ..exec
            };
            if let Some(steps) = super::across::across(&self.side, &strict, ship, &f) {
                self.push_trace(&plan.summary, schedule, steps);
                if times {
                    state.ran_plan(space.len(), t.elapsed().as_nanos() as u64, planned.get());
                }
                return Ran::plan();
            }
        }
        let steps = threads::execute(&exec, &f);
        self.push_trace(&plan.summary, schedule, steps);
        if times {
            state.ran_plan(space.len(), t.elapsed().as_nanos() as u64, planned.get());
        }
        Ran::plan()
    }

    /// A worker rank's part of the driver's call: the driver's recorded schedule, with an
    /// ownership table of this rank's own (its workers' claims; reads need them too).
    fn serve_surveyed<S, F>(&self, space: &S, ship: &super::across::Shipment<'_>, f: &F)
    where
        S: Space,
        F: Fn(&mut Block<'_, S>) + Sync,
    {
        let state = self.state;
        let served = self
            .side
            .served()
            .expect("only a worker rank's call serves a surveyed plan");
        let schedule = served.schedule();
        let (_, n_elems) = ownership_bases(state.spec(), self.shapes);
        if let Err(e) = schedule.check_against(self.shapes.len(), space.len(), n_elems) {
            served.fail(format!(
                "loop `{}`: the driver's schedule does not fit this rank's data ({e}; a \
                 different data set or binary?)",
                state.spec().name
            ));
        }
        let table: Vec<AtomicU64> = (0..n_elems).map(|_| AtomicU64::new(0)).collect();
        let exec = Execution {
            state,
            space,
            blocks: None,
            schedule: &schedule,
            owners: Some(Owners {
                table: &table,
                call: 1,
                workers: schedule.workers,
                strict: true,
            }),
            apply: self.apply,
            serialized: false,
            tracing: false,
            peers: None,
        };
        super::across::across(&self.side, &exec, ship, f);
    }
}

/// Where each array's rows start in a loop's ownership table (one entry per row of each
/// array the loop writes, the iterated array aside), and the table's length.
fn ownership_bases(spec: &strads_analysis::LoopSpec, shapes: &[&[usize]]) -> (Vec<u64>, u64) {
    let mut bases = Vec::with_capacity(shapes.len());
    let mut n_elems = 0u64;
    for (a, shape) in shapes.iter().enumerate() {
        bases.push(n_elems);
        // Ownership is per row (first index): one entry per row.
        if spec.arrays[a].mutable && spec.space_array() != Some(a) {
            n_elems += shape.first().copied().unwrap_or(0) as u64;
        }
    }
    (bases, n_elems)
}

/// The survey pass and the plan it makes.
///
/// With `sample` (the cost model decides the call) and many iterations, the first
/// iterations (at most a batch) are surveyed alone first: when their plan's longest chain
/// holds nearly all of them (one conflict component: hub features), the loop cannot pay
/// and the rest is not surveyed; the plan then only says why (`hopeless`), and calls with
/// these contents run the serial loop. A sample can misjudge a loop whose later iterations spread; that costs
/// time, never a result.
fn plan_by_survey<S: Space>(
    state: &'static LoopState,
    space: &S,
    (shapes, p): (&[&[usize]], usize),
    captured: &[u8],
    pass: &dyn Fn(&Survey<'_, S>),
    sample: bool,
) -> ReconPlan {
    let spec = state.spec();
    let t = std::time::Instant::now();
    crate::testing::note_survey();
    let (bases, n_elems) = ownership_bases(spec, shapes);
    let survey = |upto: usize| {
        let rec = Survey {
            state,
            space,
            acc: std::cell::RefCell::new(strads_analysis::Accesses::new()),
            bases: bases.clone(),
            stale: std::cell::Cell::new(None),
            upto,
        };
        pass(&rec);
        rec
    };
    // A sample of at most the smallest batch: fewer iterations conflict less, so a sample
    // that is one component says so of its batch too.
    let first = batch_size(space.len(), p).min(512 * p);
    if sample && p > 1 && space.len() >= 4 * first {
        let rec = survey(first);
        let acc = rec.acc.into_inner();
        let p1 = if rec.stale.get().is_some() { 1 } else { p };
        let groups = strads_analysis::plan_groups_with(
            &acc,
            n_elems,
            p1,
            acc.len(),
            crate::config::get().split && spec.max_delay.is_none(),
            spec.ordered,
        );
        let schedule = plan::recon::schedule(spec, groups, &bases, p1);
        let chain = super::cost::chain(&schedule, |_| 0);
        if super::cost::hopeless(chain, acc.len()) {
            let summary = format!(
                "reconnaissance workers={p} surveyed={} of {} (a sample: one conflict \
                 component; no plan)",
                acc.len(),
                space.len()
            );
            return ReconPlan {
                schedule,
                owners: Arc::new([]),
                running: Mutex::new(()),
                calls: AtomicU64::new(0),
                summary,
                captured: captured.into(),
                timed: false,
                hopeless: Some(format!(
                    "in a survey of its first {} of {} iterations, the plan's longest chain \
                     of tasks holds {:.0}% of them on {p} workers (one conflict component); \
                     would help: `buffer(..)` for arrays every iteration updates, or \
                     `sync = \"bsp\"`",
                    acc.len(),
                    space.len(),
                    100.0 * chain as f64 / acc.len().max(1) as f64
                )),
            };
        }
    }
    let rec = survey(usize::MAX);
    // An iteration read, to decide what it touches, a value an earlier iteration writes:
    // no plan recorded before the run can know the value, so the iterations run on one
    // worker, in their order.
    let stale = rec.stale.get();
    let acc = rec.acc.into_inner();
    let recorded = t.elapsed();
    let p = if stale.is_some() { 1 } else { p };
    let groups = strads_analysis::plan_groups_with(
        &acc,
        n_elems,
        p,
        batch_size(acc.len(), p),
        crate::config::get().split && spec.max_delay.is_none(),
        spec.ordered,
    );
    let (max, mean) = groups.load_balance(&acc);
    let mut why = strads_analysis::fallback_note(spec, state.analysis())
        .map(|note| format!(" ({note})"))
        .unwrap_or_default();
    if let Some((array, row)) = stale {
        why.push_str(&format!(
            " (one worker: an iteration decides what it touches from row {row} of `{}`, \
             which an earlier iteration writes; compute such subscripts in a loop of \
             their own before this one to run in parallel)",
            spec.arrays[array].name
        ));
    }
    let summary = format!(
        "reconnaissance workers={p} batches={} groups={} largest_group={} split={} \
         load_max/mean={:.2} surveyed={} touches={} survey_ms={:.1} plan_ms={:.1}{why}",
        groups.batches.len(),
        groups.batches.iter().map(|b| b.groups).sum::<usize>(),
        groups.batches.iter().map(|b| b.largest).max().unwrap_or(0),
        groups.batches.iter().map(|b| b.split).sum::<usize>(),
        if mean > 0.0 { max as f64 / mean } else { 1.0 },
        acc.len(),
        (0..acc.len()).map(|i| acc.weight(i)).sum::<usize>(),
        recorded.as_secs_f64() * 1e3,
        (t.elapsed() - recorded).as_secs_f64() * 1e3,
    );
    let timed =
        groups.batches.iter().all(|b| b.split == 0) && super::staticplan::merges_exactly(spec);
    let mut schedule = plan::recon::schedule(spec, groups, &bases, p);
    schedule.apply = super::apply_points(spec, p);
    ReconPlan {
        schedule,
        owners: (0..n_elems).map(|_| AtomicU64::new(0)).collect(),
        running: Mutex::new(()),
        calls: AtomicU64::new(0),
        summary,
        captured: captured.into(),
        timed,
        hopeless: None,
    }
}
