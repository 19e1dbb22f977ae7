//! One loop call across processes: what the driver sends and waits for, what a worker
//! runs, and the `Peers` hooks through which the thread executor of each process meets
//! the others.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use strads_analysis::LoopSpec;

use super::away::{Leased, lease_parts};
use super::peers::{RankPeers, record_wait, since};
use super::proto::directory::{Parts, Use, plan_arrays};
use super::proto::{ArrayMeta, CallMsg, Itinerary, MADE, Region};
pub use super::rankdata::{BlocksWire, ValuesWire};
pub(crate) use super::rankdata::{block_ranks, rank_blocks};
pub use super::served::{Served, ServedCall};
use super::session::Session;
use super::wire::{SEAL, WireArray};
use crate::plan::Schedule;
use crate::sync::Peers;

/// What generated code gives a call for the cluster: the loop struct, its arrays (in the
/// spec's order) and the reductions' parts.
pub struct Shipment<'a> {
    /// The loop's registry name.
    pub name: &'static str,
    /// The loop struct, postcard.
    pub captured: Vec<u8>,
    /// The iteration space when it is not an array, postcard.
    pub space: Vec<u8>,
    /// The call's arrays, in the spec's order.
    pub arrays: Vec<&'a dyn WireArray>,
    /// The reductions' parts, when the loop has reductions.
    pub parts: Option<&'a dyn PartsWire>,
    /// An `iter_mut()` loop's values (set by the runtime).
    pub values: Option<&'a dyn ValuesWire>,
    /// The blocks of a sparse iteration space, which cross rank by rank (set by the
    /// runtime; the space array itself then crosses as its shape).
    pub blocks: Option<&'a dyn BlocksWire>,
}

impl std::fmt::Debug for Shipment<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shipment")
            .field("arrays", &self.arrays.len())
            .finish_non_exhaustive()
    }
}

/// Reduction parts that cross processes.
pub trait PartsWire: Sync {
    /// The parts this process made, postcard.
    fn to_bytes(&self) -> Vec<u8>;
    /// Adds parts another process made.
    fn absorb(&self, bytes: &[u8]) -> Result<(), String>;
}

impl<R> PartsWire for crate::array::reduce::Parts<R>
where
    R: serde::Serialize + serde::de::DeserializeOwned + Send,
{
    fn to_bytes(&self) -> Vec<u8> {
        self.with_all(|parts| postcard::to_allocvec(parts).expect("reduction parts encode"))
    }

    fn absorb(&self, bytes: &[u8]) -> Result<(), String> {
        let parts: Vec<((usize, usize), R)> =
            postcard::from_bytes(bytes).map_err(|e| format!("reduction parts: {e}"))?;
        for (seq, part) in parts {
            self.push(seq, part);
        }
        Ok(())
    }
}

/// This process's program file, as errors name it (looked up once: the driver sends it
/// with every call).
pub(crate) fn this_program() -> &'static str {
    static PROGRAM: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PROGRAM.get_or_init(|| {
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "this program".into())
    })
}

/// A hash of a loop's spec: a worker with another spec of the same loop (another binary)
/// is refused.
pub fn spec_hash(spec: &LoopSpec) -> u64 {
    let bytes = postcard::to_allocvec(spec).expect("specs encode");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Which arrays a schedule writes (a writable window in some task). An array no task
/// writes is sent whole to every rank unless its blocks read it by parts
/// ([`read_by_parts`]: aligned reads, and the dense array a loop iterates without indexing
/// it, `plan::read_as_blocks`).
pub(crate) fn written(schedule: &Schedule, arrays: usize) -> Vec<bool> {
    let mut out = vec![false; arrays];
    for set in &schedule.windows {
        for (a, w) in set.iter().enumerate().take(arrays) {
            out[a] |= w.writable();
        }
    }
    out
}

/// Which arrays the schedule's blocks read by parts: an array no task writes but whose
/// windows are not the whole array (each block reads the image of its partition). A dense
/// one travels by regions, so a rank receives only what its blocks read.
pub(crate) fn read_by_parts(schedule: &Schedule, arrays: usize) -> Vec<bool> {
    let mut out = vec![false; arrays];
    for set in &schedule.windows {
        for (a, w) in set.iter().enumerate().take(arrays) {
            out[a] |= !w.writable() && !matches!(w, crate::plan::Window::All { .. });
        }
    }
    out
}

/// A call planned across processes, once: the arrays as the driver describes them to
/// every rank, and the transfers they make.
#[derive(Debug)]
pub struct Crossing {
    metas: Vec<ArrayMeta>,
    plan: Arc<Itinerary>,
    /// The schedule, postcard.
    schedule: Vec<u8>,
}

/// Whether a call may cross processes, as far as its arguments tell (what it captures,
/// its buffers, its arrays' elements), before anything is planned or moved: `Err` says why
/// not.
pub fn may_cross(spec: &LoopSpec, schedule: &Schedule, ship: &Shipment<'_>) -> Result<(), String> {
    // The captured values travel in the call's control message: values larger than a
    // quarter of what one carries stay here (the call runs on the driver's threads).
    if ship.captured.len() > super::proto::msg::MAX_MSG / 4 {
        return Err(format!(
            "its captured values take {} bytes, more than a call message carries ({} \
             bytes); pass large data as a `DistArray` or `SparseArray` argument, which \
             crosses by parts",
            ship.captured.len(),
            super::proto::msg::MAX_MSG / 4
        ));
    }
    let w = written(schedule, ship.arrays.len());
    // Buffers are merged, and their apply functions run, on every rank alike (the copies
    // are exchanged at each application point): the arrays they change must not also
    // travel by regions, whose hand-offs would carry values from before a merge.
    for b in spec.buffers.iter() {
        let changed =
            std::iter::once(b.array).chain(b.apply.iter().flat_map(|a| a.targets.iter().copied()));
        for a in changed {
            if w.get(a).copied().unwrap_or(false) {
                return Err(format!(
                    "`{}`, which a write-back buffer changes, is also written by the loop's \
                     blocks",
                    spec.arrays[a].name
                ));
            }
        }
    }
    let mut ids = Vec::with_capacity(ship.arrays.len());
    for (a, arr) in ship.arrays.iter().enumerate() {
        let Some(m) = arr.meta(w[a]) else {
            return Err(format!(
                "array {a} has elements that cannot cross processes (numbers only)"
            ));
        };
        // One array passed as two parameters: a worker keeps one copy per array, and the
        // two parameters may travel differently (whole, by parts), so the call stays here.
        if let Some(b) = ids.iter().position(|&id| id == m.id) {
            return Err(format!(
                "`{}` and `{}` are the same array",
                spec.arrays[b].name, spec.arrays[a].name
            ));
        }
        ids.push(m.id);
    }
    Ok(())
}

/// The schedule as it travels in the call's control message; `Err` for one too large for
/// a message (a reconnaissance plan lists every iteration), which stays here.
pub fn schedule_bytes(schedule: &Schedule) -> Result<Vec<u8>, String> {
    let bytes = postcard::to_allocvec(schedule).expect("schedules encode");
    if bytes.len() > super::proto::msg::MAX_MSG / 2 {
        return Err(format!(
            "its schedule takes {} bytes, more than a call message carries",
            bytes.len()
        ));
    }
    Ok(bytes)
}

/// Plans a call across processes; `Err`: why it cannot cross (then the driver runs it
/// alone).
pub fn plan_call(
    spec: &LoopSpec,
    schedule: &Schedule,
    ship: &Shipment<'_>,
    session: &Session,
) -> Result<Crossing, String> {
    may_cross(spec, schedule, ship)?;
    let metas = metas(schedule, ship, session);
    let plan = Itinerary::new(
        schedule,
        session.size,
        session.threads,
        &plan_arrays(&metas),
        false,
    )
    .map_err(|e| e.0)?;
    let bytes = schedule_bytes(schedule)?;
    Ok(Crossing {
        metas,
        plan: Arc::new(plan),
        schedule: bytes,
    })
}

fn metas(schedule: &Schedule, ship: &Shipment<'_>, session: &Session) -> Vec<ArrayMeta> {
    let w = written(schedule, ship.arrays.len());
    let by_parts = read_by_parts(schedule, ship.arrays.len());
    // Where each array's parts are, decided before the directory is locked to describe
    // the arrays (a fetch takes it): the parts of a written array that the last call left
    // on other ranks, still there (nothing on this process read or wrote the array since),
    // stay for the plan to take from where they are; every other array is brought home,
    // since it is sent from here.
    let parts: Vec<Parts> = ship
        .arrays
        .iter()
        .enumerate()
        .map(|(a, arr)| {
            // A dense array the blocks read by parts stays where it is too (the call
            // leases it).
            let by_regions = w[a] || (by_parts[a] && arr.meta(false).is_some_and(|m| !m.sparse));
            let left = (by_regions && arr.is_away())
                .then(|| {
                    let m = arr.meta(w[a])?;
                    let now = arr.version_before().unwrap_or(m.version);
                    let directory = session.directory();
                    directory.away_at(m.id, now).or_else(|| {
                        // Created in place and unchanged since: every part is made where
                        // it is needed.
                        let fresh = now == 0 && !directory.knows(m.id) && arr.recipe().is_some();
                        let len: u64 = m.shape.iter().map(|&d| d as u64).product();
                        fresh.then(|| vec![(Region::all(len), MADE)])
                    })
                })
                .flatten();
            left.unwrap_or_else(|| {
                arr.bring_home();
                Vec::new()
            })
        })
        .collect();
    let mut directory = session.directory();
    ship.arrays
        .iter()
        .zip(parts)
        .enumerate()
        .map(|(a, (arr, away))| {
            let mut m = arr.meta(w[a]).expect("checked by `plan_call`");
            let now = arr.version_before().unwrap_or(m.version);
            let u = Use {
                read_by_parts: by_parts[a],
                now,
                ranks: session.size,
            };
            directory.describe(&mut m, away, u);
            if m.away.iter().any(|(_, r)| *r == MADE) {
                m.made = arr.recipe();
            }
            m
        })
        .collect()
}

/// After a call: the directory learns what other ranks hold of the arrays it wrote, and
/// the arrays left partly away are told so: they fetch those parts before anything on
/// this process reads them, unless the next call across processes takes them first.
fn remember_parts(
    plan: &Itinerary,
    metas: &[ArrayMeta],
    ship: &Shipment<'_>,
    session: &'static Session,
) {
    let left = session.directory().after_call(plan, metas);
    for (a, parts) in left {
        ship.arrays[a].leave(SEAL, session, metas[a].id, parts);
    }
}

/// Driver: runs a call across every rank, as `plan_call` planned it. `run` runs this
/// process's part on the thread executor with the hooks it is given. `trace`: the call is
/// recorded; every worker's list of iterations comes back (`Steps`, empty otherwise).
pub(crate) fn drive(
    session: &'static Session,
    spec: &LoopSpec,
    schedule: &Schedule,
    ship: &Shipment<'_>,
    crossing: Crossing,
    trace: bool,
    run: &mut dyn FnMut(&dyn Peers) -> super::traces::Steps,
) -> super::traces::Steps {
    let name = ship.name;
    let seq = session
        .next_seq
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let Crossing {
        metas,
        plan,
        schedule: bytes,
    } = crossing;
    // The plan takes the parts other ranks hold from where they are: the arrays must not
    // fetch them when the workers view them. An array the call only reads is leased
    // instead: its parts stay away, and only those this process's workers read come here.
    for (arr, m) in ship.arrays.iter().zip(&metas) {
        if m.shipped {
            arr.claim(SEAL);
        }
    }
    let written = written(schedule, ship.arrays.len());
    let lease_id = crate::sync::next_call();
    let mut leases: Vec<Option<Box<dyn Leased + '_>>> = ship
        .arrays
        .iter()
        .zip(&metas)
        .enumerate()
        .map(|(a, (arr, m))| {
            (!written[a] && m.shipped && !m.away.is_empty())
                .then(|| arr.lease(SEAL, lease_id))
                .flatten()
        })
        .collect();
    // This thread reads the leased arrays' home parts too (the transfers it sends).
    let _lease = crate::pool::enter_lease(lease_id);
    // The schedule goes out unless the workers keep it from one of the loop's last calls.
    let (schedule_hash, kept) = super::schedules::sent_before(session, name, &bytes);
    let values: Vec<Vec<u8>> = match ship.values {
        Some(v) => (1..session.size).map(|r| v.out(r)).collect(),
        None => Vec::new(),
    };
    // A sparse space crosses by blocks: each rank gets those it runs, once per contents
    // and schedule.
    let (mut blocks, mut blocks_sent) = (0, false);
    let mut blocks_out: Vec<Vec<u8>> = Vec::new();
    if let Some(key) = ship.blocks.and_then(|b| b.traded()) {
        // Traded among the ranks before the call: each rank keeps its own.
        blocks = key;
    } else if let Some(b) = ship.blocks {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        // A recorded call's blocks carry their entries' ids: kept under a key of their own.
        (b.key(), schedule_hash, trace).hash(&mut h);
        blocks = h.finish() | 1;
        let mut sent = session.blocks.lock().unwrap_or_else(|e| e.into_inner());
        blocks_sent = sent.insert((name.to_string(), b.key().0), blocks) != Some(blocks);
        drop(sent);
        if blocks_sent {
            blocks_out = (1..session.size)
                .map(|r| b.bytes(&rank_blocks(schedule, r, session.threads), trace))
                .collect();
        }
    }
    let msg = CallMsg {
        seq,
        name: name.to_string(),
        spec_hash: spec_hash(spec),
        captured: ship.captured.clone(),
        space: ship.space.clone(),
        threads: session.threads,
        arrays: metas.clone(),
        schedule: if kept { Vec::new() } else { bytes },
        schedule_hash,
        blocks,
        blocks_sent,
        program: this_program().to_string(),
        trace,
    };
    session.with(|core| {
        // An array whole to several ranks is encoded once, its bytes shared by their sends.
        let mut encoded: Vec<Option<bytes::Bytes>> = vec![None; metas.len()];
        core.send_call(&msg, |r| {
            metas
                .iter()
                .enumerate()
                .filter(|(_, m)| !m.shipped && !m.holders.contains(&r))
                .map(|(a, _)| {
                    let data = encoded[a]
                        .get_or_insert_with(|| ship.arrays[a].whole(SEAL).into())
                        .clone();
                    (a, data)
                })
                .collect()
        });
        for (r, bytes) in blocks_out.into_iter().enumerate() {
            core.send_blocks(seq, r + 1, bytes);
        }
        for (r, bytes) in values.into_iter().enumerate() {
            core.send_values(seq, r + 1, bytes);
        }
        core.begin(seq, plan.clone());
        for tid in plan.initial().filter(|&t| plan.transfers[t].from == 0) {
            let tr = &plan.transfers[tid];
            core.send_transfer(tid, ship.arrays[tr.array].read(SEAL, &tr.region));
        }
    });
    lease_parts(session, &plan, &metas, &leases);
    // Other ranks hold copies of every array of the call now: they drop them when the
    // driver drops the array.
    for (arr, m) in ship.arrays.iter().zip(&metas) {
        arr.shared(SEAL, m.id);
    }
    // The whole arrays sent are now held by every rank.
    session.directory().sent_whole(&metas, session.size);
    let peers = RankPeers {
        session,
        plan: plan.clone(),
        arrays: &ship.arrays,
        recipes: metas.iter().map(|m| m.made).collect(),
        lease: if leases.iter().any(Option::is_some) {
            lease_id
        } else {
            0
        },
        local: 0..session.threads,
        waited: Default::default(),
        merges: Default::default(),
    };
    // A loop body that panics on the driver leaves the call half done, the other ranks
    // waiting and the claimed arrays without their parts: the job stops (after the panic's
    // own message), whether or not the program catches the panic.
    let guard = FailOnUnwind(session, name);
    let mut steps = run(&peers);
    std::mem::forget(guard);
    // Every worker finished (waiting for other ranks too); the written parts stay where
    // they are.
    let t0 = std::time::Instant::now();
    session.wait(|core| core.all_finished().then_some(()));
    let waited = peers.waited.load(std::sync::atomic::Ordering::Relaxed) + since(t0);
    record_wait(&spec.name, waited);
    remember_parts(&plan, &metas, ship, session);
    // What the leased arrays still have away; their leases end.
    for (a, lease) in leases.iter_mut().enumerate() {
        if let Some(lease) = lease.take() {
            lease.settle(session, metas[a].id, metas[a].made, plan.away(a));
        }
    }
    let parts = session.with(|core| {
        let parts = core.take_parts();
        core.end();
        parts
    });
    if let Some(p) = ship.parts {
        for (r, bytes) in parts.iter().enumerate() {
            if let Err(e) = p.absorb(bytes) {
                session.fail(format!("rank {}: {e}", r + 1));
            }
        }
    }
    if trace {
        super::traces::gather(session, seq, name, &mut steps);
    }
    if let Some(v) = ship.values {
        for r in 1..session.size {
            v.back(r, session.wait(|core| core.take_values(seq, r)));
        }
    }
    steps
}

/// Fails the job when dropped (while a call across processes unwinds).
struct FailOnUnwind<'a>(&'static Session, &'a str);

impl Drop for FailOnUnwind<'_> {
    fn drop(&mut self) {
        self.0.fail(format!(
            "loop `{}` panicked on the driver during a call across processes",
            self.1
        ));
    }
}

/// Worker: runs its part of the served call (planned here as `schedule`, which must be
/// the driver's).
pub(crate) fn work(
    served: &ServedCall,
    schedule: &Schedule,
    ship: &Shipment<'_>,
    run: &mut dyn FnMut(&dyn Peers) -> super::traces::Steps,
) {
    let (session, msg) = (served.session, &served.msg);
    let theirs = served.schedule();
    if *theirs != *schedule {
        session.fail(format!(
            "loop `{}`: this rank plans another schedule than the driver's (different data \
             or binary)",
            msg.name
        ));
    }
    let plan = served.plan(schedule);
    let r = session.rank;
    // Arrays the call only reads sent theirs before they were lent (`Served::dense`).
    let written = written(schedule, msg.arrays.len());
    session.with(|core| {
        core.begin(msg.seq, plan.clone());
        let mine = |&t: &usize| plan.transfers[t].from == r && written[plan.transfers[t].array];
        for tid in plan.initial().filter(mine) {
            let tr = &plan.transfers[tid];
            core.send_transfer(tid, ship.arrays[tr.array].read(SEAL, &tr.region));
        }
    });
    let peers = RankPeers {
        session,
        plan: plan.clone(),
        arrays: &ship.arrays,
        recipes: msg.arrays.iter().map(|m| m.made).collect(),
        lease: 0,
        local: r * msg.threads..(r + 1) * msg.threads,
        waited: Default::default(),
        merges: Default::default(),
    };
    let steps = run(&peers);
    let trace = msg
        .trace
        .then(|| super::traces::encode(&steps, peers.local.clone()));
    let parts = ship.parts.map(|p| p.to_bytes()).unwrap_or_default();
    session.with(|core| {
        if let Some(trace) = trace {
            core.send_trace(msg.seq, trace);
        }
        core.finish(parts);
        core.end();
    });
}
