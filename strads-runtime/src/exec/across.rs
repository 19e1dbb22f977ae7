//! Everything `exec/` knows of the cluster, in one place: where a call runs ([`Side`],
//! decided once when the call is made), how it runs across processes (as the driver, or
//! as a worker rank serving the driver's call), why a call stays on the driver's threads,
//! and a sparse space's blocks, which cross rank by rank.
//!
//! The other files of `exec/` name no `cluster::` item; they ask the call's side.
//!
//! A sparse iteration space crosses by blocks: the driver sends each worker rank only the
//! blocks its workers run (`BlocksWire`), once per contents and schedule; the worker runs
//! the driver's schedule on them instead of planning from a whole copy of the space, so it
//! holds its part of the data, not all of it.

use std::sync::Arc;

use super::cost::Where;
use super::{Block, Call, Execution, Job, LoopState, StaticPlan, threads};
use crate::cluster;
pub(crate) use crate::cluster::Steps;
pub(crate) use crate::cluster::call::{PartsWire, Served, Shipment, ValuesWire};
use crate::cluster::session::Session;
pub(crate) use crate::cluster::wire::WireArray;
use crate::plan::Unit;
use crate::space::Space;
use crate::trace::LoopRun;

/// Where a call runs, fixed when it is made (as quinn-proto's `Side` is when a connection
/// is): in this process alone, as the serial replay of a recorded call, as the driver of a
/// cluster job, or as a worker rank serving the driver's call.
#[derive(Debug)]
pub(crate) enum Side {
    /// This process alone: a program run as one process, or a loop called from inside
    /// another loop's task.
    Local,
    /// The serial replay of the next recorded call (`testing::replay`).
    Replay(LoopRun),
    /// The driver of a job of several ranks.
    Driver(&'static Session),
    /// A worker rank running its part of the driver's call.
    Worker(Served),
}

impl Side {
    /// The side of a new call of loop `name` made by the program (the driver's, or one
    /// process's), and its workers: a replay's recorded count, one inside another loop's
    /// task, the job's ranks x threads on a cluster's driver, the pool's threads otherwise.
    /// The first call of a cluster job's driver starts the job.
    pub(crate) fn of_program(name: &str) -> (Side, usize) {
        if let Some(run) = crate::trace::next_replay(name) {
            let workers = run.steps.first().map_or(1, Vec::len).max(1);
            return (Side::Replay(run), workers);
        }
        if crate::pool::in_worker() {
            return (Side::Local, 1);
        }
        match cluster::job::get() {
            Some(s) if s.size() > 1 => (Side::Driver(s), s.workers()),
            Some(s) => (Side::Local, s.workers()),
            None => (Side::Local, crate::pool::current_threads()),
        }
    }

    /// The side of a worker rank's call of the driver's `served`, and its workers: the
    /// driver's layout.
    pub(crate) fn of_served(served: Served) -> (Side, usize) {
        let workers = served.session().size() * served.msg().threads;
        (Side::Worker(served), workers)
    }

    /// The recorded call a replay runs.
    pub(crate) fn replay(&self) -> Option<&LoopRun> {
        match self {
            Side::Replay(run) => Some(run),
            _ => None,
        }
    }

    /// The driver's call a worker rank serves.
    pub(crate) fn served(&self) -> Option<&Served> {
        match self {
            Side::Worker(s) => Some(s),
            _ => None,
        }
    }

    /// Whether the call meets other processes (the driver's or a worker rank's): what it
    /// sends must then be encoded.
    pub(crate) fn remote(&self) -> bool {
        matches!(self, Side::Driver(_) | Side::Worker(_))
    }
}

impl<B: Send + Sync + 'static> Job<'_, B> {
    /// Runs the call across processes when the program is a cluster job: as the driver,
    /// or as a worker serving the driver's call; what the workers ran when the driver
    /// records the call (`Crossed::steps`). `None`: run it in this process alone.
    pub(super) fn run_cluster<S, F>(
        &self,
        base: &Execution<'_, S>,
        f: &F,
        ship: &Shipment<'_>,
    ) -> Option<Steps>
    where
        S: Space<Blocks = B>,
        F: Fn(&mut Block<'_, S>) + Sync,
    {
        let space = base.space;
        // The driver of a call over a sparse space of numbers (or an `iter_mut()` loop's
        // indices) sends each rank only the blocks it runs; the space array crosses as its
        // shape.
        let index = self.call.state.spec().space_array();
        // A space whose entries live in parts on the ranks trades them instead, so that
        // each rank holds the blocks it runs; nothing of it crosses with the call.
        if let (Side::Driver(s), Some(blocks), Some(i)) = (&self.call.side, self.blocks(), index)
            && base.schedule.workers == s.workers()
            && let Some(runs) = cluster::call::block_ranks(base.schedule, s.threads)
            && let Some(key) = space.spread_blocks(blocks, s.workers(), s.threads, &runs)
        {
            let (shape, traded) = (cluster::wire::ShapeWire(ship.arrays[i]), Traded(key));
            let ship = by_shape(ship, i, &shape, &traded);
            return across(&self.call.side, base, &ship, f);
        }
        if let (Some(blocks), Some(i)) = (self.blocks(), index)
            && self.call.side.served().is_none()
            && space.blocks_bytes(blocks, &[], false).is_some()
            && let Some(meta) = ship.arrays.get(i).and_then(|a| a.meta(false))
        {
            let by_blocks = SpaceBlocks {
                space,
                blocks,
                key: (meta.id, meta.version),
            };
            let shape = cluster::wire::ShapeWire(ship.arrays[i]);
            let ship = by_shape(ship, i, &shape, &by_blocks);
            return across(&self.call.side, base, &ship, f);
        }
        across(&self.call.side, base, ship, f)
    }
}

impl<B: Send + Sync + 'static> Job<'_, B> {
    /// Driver of a call over an array in parts (`array`: its indices): why the call could
    /// not cross with the array as its shape and its blocks traded, if it could not
    /// (`cluster::call::may_cross`); nothing is planned or moved.
    pub(crate) fn why_not_across<T: Send + Sync + 'static, const N: usize>(
        &self,
        array: &crate::array::SparseArray<T, N>,
    ) -> Option<String> {
        let (Side::Driver(_), Some(ship), Some(i)) = (
            &self.call.side,
            &self.call.ship,
            self.call.state.spec().space_array(),
        ) else {
            return Some("the call does not cross processes".into());
        };
        let keys = cluster::wire::KeysWire(array);
        let (shape, traded) = (cluster::wire::ShapeWire(&keys), Traded(1));
        let ship = by_shape(ship, i, &shape, &traded);
        let spec = self.call.state.spec();
        cluster::call::may_cross(spec, self.schedule(), &ship)
            .and_then(|()| cluster::call::schedule_bytes(self.schedule()).map(drop))
            .err()
    }
}

/// `ship` with its space array `i` crossing as its shape, and its blocks crossing as
/// `blocks` say.
fn by_shape<'a>(
    ship: &Shipment<'a>,
    i: usize,
    shape: &'a dyn WireArray,
    blocks: &'a dyn cluster::call::BlocksWire,
) -> Shipment<'a> {
    let mut arrays = ship.arrays.clone();
    arrays[i] = shape;
    Shipment {
        name: ship.name,
        captured: ship.captured.clone(),
        space: ship.space.clone(),
        arrays,
        parts: ship.parts,
        values: ship.values,
        blocks: Some(blocks),
    }
}

/// Runs `base` across processes when the program is a cluster job: as the driver (when
/// the call can cross), or as a worker serving the driver's call, each process running
/// its workers of the schedule with the hooks that meet the others. `None`: run it in
/// this process alone. On the driver of a recorded call (`testing::record`), what every
/// rank's workers ran (each rank records its own and sends it with the call's end);
/// empty otherwise.
pub(crate) fn across<S, F>(
    side: &Side,
    base: &Execution<'_, S>,
    ship: &Shipment<'_>,
    f: &F,
) -> Option<Steps>
where
    S: Space,
    F: Fn(&mut Block<'_, S>) + Sync,
{
    let (state, schedule) = (base.state, base.schedule);
    // On the driver, whether the call is recorded (a worker rank: whether the driver's is).
    let tracing = base.tracing;
    let mut go = |peers: &dyn crate::sync::Peers| with_peers(base, peers, f, tracing);
    let s = match side {
        Side::Worker(served) => {
            // A panic in a block ends the job from the panicking thread itself: the
            // rank's other threads may be waiting for other ranks, which wait for this
            // block, and would never let the panic reach the serve loop.
            let session = served.session();
            let name = &state.spec().name;
            let guarded = |b: &mut Block<'_, S>| {
                if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(b))) {
                    session.fail(format!(
                        "loop `{name}` panicked: {}",
                        cluster::registry::panic_message(p.as_ref())
                    ));
                }
            };
            let tracing = served.msg().trace;
            let mut go =
                |peers: &dyn crate::sync::Peers| with_peers(base, peers, &guarded, tracing);
            cluster::call::work(served, schedule, ship, &mut go);
            return Some(Vec::new());
        }
        Side::Driver(s) => *s,
        Side::Local | Side::Replay(_) => return None,
    };
    if schedule.workers != s.workers() {
        explain_local(
            side,
            state,
            &format!(
                "its plan runs on {} of the job's {} workers (see its plan line)",
                schedule.workers,
                s.workers()
            ),
        );
        return None;
    }
    // Where the cost model runs the plan: across the ranks, or on the driver's threads as
    // the job's workers (the same schedule, so the same bits). A call crosses whose space
    // has its entries on the ranks, or whose arrays have more than `HOME_BUDGET` bytes
    // away (the driver does not hold them: bringing them home for a loop would undo what
    // keeping them in parts is for).
    let len = base.space.len();
    // A `hybrid` loop crosses too: on one process its workers share one replica, across
    // processes each rank has its own, merged at every batch; where it runs would change
    // how its updates combine.
    let forced = ship.blocks.is_some_and(|b| b.traded().is_some())
        || !may_come_home(ship)
        || super::staticplan::timing_dependent(state.spec());
    let decides = super::cost::decides(side);
    let roomy = crate::pool::cores() >= s.workers();
    if decides && !forced && state.place(s.workers(), s.one_host(), roomy) == Where::Driver {
        let t = std::time::Instant::now();
        // Parts away come home whole, once each, before the workers start (reading them
        // window by window from every thread would fetch them a window at a time).
        for a in ship.arrays.iter().filter(|a| a.is_away()) {
            a.bring_home();
        }
        if let Some(v) = ship.values {
            v.home();
        }
        let steps = threads::execute(base, f);
        state.ran_at(Where::Driver, len, t.elapsed().as_nanos() as u64);
        return Some(steps);
    }
    let t = std::time::Instant::now();
    let crossing = match cluster::call::plan_call(state.spec(), schedule, ship, s) {
        Ok(c) => c,
        Err(why) => {
            explain_local(side, state, &why);
            if decides {
                state.refused_crossing();
            }
            return None;
        }
    };
    let (sent, received) = s.bytes();
    let steps = cluster::call::drive(s, state.spec(), schedule, ship, crossing, tracing, &mut go);
    if decides {
        state.ran_at(Where::Across, len, t.elapsed().as_nanos() as u64);
    }
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
    Some(steps)
}

/// The bytes of arrays away on other ranks that a call may bring home to run on the
/// driver's threads (or as its serial loop) when the cost model finds crossing cannot pay:
/// the bounded cache of parts the driver may read. Arrays with more away run where their
/// parts are.
pub(crate) const HOME_BUDGET: u64 = 64 << 20;

/// Whether the arrays of `ship` that have parts away hold at most [`HOME_BUDGET`] bytes
/// together (none away: `true`).
pub(crate) fn may_come_home(ship: &Shipment<'_>) -> bool {
    may_come_home_with(ship, 0)
}

/// [`may_come_home`] with `extra` bytes away besides them.
pub(crate) fn may_come_home_with(ship: &Shipment<'_>, extra: u64) -> bool {
    let away: u64 = ship
        .arrays
        .iter()
        .filter(|a| a.is_away())
        .map(|a| {
            a.meta(false).map_or(u64::MAX, |m| {
                let len: u64 = m.shape.iter().map(|&d| d as u64).product();
                len.saturating_mul(m.elem.size() as u64)
            })
        })
        .fold(0, u64::saturating_add);
    // And `iter_mut()` values an earlier call left on the ranks.
    let values = ship.values.map_or(0, |v| v.away_bytes());
    let budget = crate::testing::home_budget().unwrap_or(HOME_BUDGET);
    away.saturating_add(values).saturating_add(extra) <= budget
}

/// Runs this process's workers of `base` with the hooks that meet the other ranks; when
/// `tracing`, returns what they ran (`threads::execute`'s trace).
fn with_peers<S, G>(
    base: &Execution<'_, S>,
    peers: &dyn crate::sync::Peers,
    g: &G,
    tracing: bool,
) -> Steps
where
    S: Space,
    G: Fn(&mut Block<'_, S>) + Sync,
{
    let exec = Execution {
        peers: Some(peers),
        serialized: false,
        tracing,
        ..*base
    };
    threads::execute(&exec, g)
}

/// In a cluster job, says (once, under `STRADS_EXPLAIN`) that the loop runs on the
/// driver's threads alone, as many workers as the job has, and why.
pub(crate) fn explain_local(side: &Side, state: &LoopState, why: &str) {
    if let Side::Driver(s) = side {
        state.explain_cluster(|| {
            format!(
                "runs on the driver's threads as the job's {} workers ({why})",
                s.workers()
            )
        });
    }
}

/// The driver's side: a call's space and its blocks.
pub(crate) struct SpaceBlocks<'s, S: Space> {
    pub(crate) space: &'s S,
    pub(crate) blocks: &'s S::Blocks,
    /// The space array's id and version.
    pub(crate) key: (u64, u64),
}

impl<S: Space> cluster::call::BlocksWire for SpaceBlocks<'_, S> {
    fn bytes(&self, ids: &[usize], with_ids: bool) -> Vec<u8> {
        self.space
            .blocks_bytes(self.blocks, ids, with_ids)
            .expect("checked before the blocks were shipped")
    }

    fn key(&self) -> (u64, u64) {
        self.key
    }
}

/// The blocks of a spread space, traded among the ranks under a key before the call.
struct Traded(u64);

impl cluster::call::BlocksWire for Traded {
    fn bytes(&self, _: &[usize], _: bool) -> Vec<u8> {
        Vec::new()
    }

    fn key(&self) -> (u64, u64) {
        (self.0, 0)
    }

    fn traded(&self) -> Option<u64> {
        Some(self.0)
    }
}

/// On a worker rank serving a call whose space crosses by blocks: the driver's schedule
/// with this rank's blocks (received with this call, or kept from the loop's last one).
/// `None` otherwise: the call plans here.
pub(crate) fn by_blocks<S: Space>(call: &Call<'_>, space: &S) -> Option<StaticPlan<S::Blocks>> {
    let served = call.side.served()?;
    let (msg, s) = (served.msg(), served.session());
    if msg.blocks == 0 || call.ship.is_none() {
        return None;
    }
    let schedule = served.schedule();
    let fail = |e: String| -> ! { s.fail(format!("loop `{}`: {e}", msg.name)) };
    // Blocks only: no lists of iterations, no ownership windows.
    if let Err(e) = schedule.check_against(msg.arrays.len(), 0, 0) {
        fail(format!("the driver's schedule does not fit here ({e})"));
    }
    let space_id = call
        .state
        .spec()
        .space_array()
        .and_then(|i| msg.arrays.get(i))
        .map_or(0, |m| m.id);
    let blocks: Arc<S::Blocks> = if msg.blocks_sent {
        let bytes = served.blocks();
        let ids = cluster::call::rank_blocks(&schedule, s.rank, msg.threads);
        let at_least = schedule
            .steps
            .iter()
            .flat_map(|st| st.tasks.iter().flatten())
            .filter_map(|t| match t.unit {
                Unit::Block(id) => Some(id.saturating_add(1)),
                Unit::Ids(_) => None,
            })
            .max()
            .unwrap_or(0);
        let blocks = match space.blocks_from_bytes(at_least, &ids, &bytes) {
            Some(Ok(b)) => Arc::new(b),
            Some(Err(e)) => fail(format!("the driver's blocks of its space: {e}")),
            None => fail("the driver sent blocks of a space that does not cross by blocks".into()),
        };
        cluster::store::keep_blocks(&msg.name, msg.blocks, space_id, blocks.clone(), bytes.len());
        blocks
    } else {
        let kept = cluster::store::kept_blocks(&msg.name, msg.blocks).or_else(|| {
            cluster::store::kept_blocks(&cluster::spread::traded_name(msg.blocks), msg.blocks)
        });
        match kept.map(|b| b.downcast()) {
            Some(Ok(b)) => b,
            _ => fail("the driver sent no blocks and this rank keeps none under their key".into()),
        }
    };
    Some(StaticPlan {
        schedule: (*schedule).clone(),
        blocks,
        summary: String::new(),
        // A worker rank runs the driver's decision.
        timed: false,
        alone: None,
    })
}
