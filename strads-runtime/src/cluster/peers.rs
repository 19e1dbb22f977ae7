//! The hooks of one rank in one call across processes ([`Peers`]: what a task waits for
//! before it runs, what it sends after, the barriers and the buffers' exchanges), and the
//! time this process's workers waited for other ranks.

use std::ops::Range;
use std::sync::Arc;

use super::proto::{Arrival, Itinerary};
use super::session::Session;
use super::wire::{SEAL, WireArray};
use crate::sync::Peers;

/// Per loop (by name), this process's calls and the nanoseconds its workers spent waiting
/// for other ranks, in all and in the first call: for the transfers a task needs, at
/// barriers, and (the driver) for the other ranks to finish.
static WAITS: std::sync::Mutex<Vec<(String, u64, u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// Per loop that crossed processes: `(name, calls, time its workers waited for other
/// ranks, of which in the first call)`, summed over workers, in the order the loops were
/// first called.
pub(super) fn waits() -> Vec<(String, u64, std::time::Duration, std::time::Duration)> {
    WAITS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|(n, c, ns, first)| {
            (
                n.clone(),
                *c,
                std::time::Duration::from_nanos(*ns),
                std::time::Duration::from_nanos(*first),
            )
        })
        .collect()
}

/// Adds one call of loop `name` that waited `ns`.
pub(super) fn record_wait(name: &str, ns: u64) {
    let mut w = WAITS.lock().unwrap_or_else(|e| e.into_inner());
    match w.iter_mut().find(|(n, ..)| n == name) {
        Some(e) => {
            e.1 += 1;
            e.2 += ns;
        }
        None => w.push((name.to_string(), 1, ns, ns)),
    }
}

/// Nanoseconds since `t0`.
pub(super) fn since(t0: std::time::Instant) -> u64 {
    u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The hooks of one rank in one call.
pub(super) struct RankPeers<'a> {
    pub(super) session: &'static Session,
    pub(super) plan: Arc<Itinerary>,
    pub(super) arrays: &'a [&'a dyn WireArray],
    /// Per array, the recipe of an array created in place (parts this rank makes).
    pub(super) recipes: Vec<Option<super::proto::Recipe>>,
    /// The lease the call holds on arrays it reads with parts away (0: none).
    pub(super) lease: u64,
    pub(super) local: Range<usize>,
    /// Nanoseconds this rank's workers waited in this call.
    pub(super) waited: std::sync::atomic::AtomicU64,
    /// Buffers' exchanges so far in this call (each rank counts the same ones).
    pub(super) merges: std::sync::atomic::AtomicU64,
}

// Shipment's arrays are `Vec<&dyn WireArray>`; the hooks borrow them as a slice.

impl RankPeers<'_> {
    /// One exchange of the buffers' (`Peers::exchange`): sends `to[r]` to rank `r`, returns
    /// what the others sent, the exchanges numbered alike on every rank.
    fn trade(&self, to: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)> {
        let key = self
            .merges
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.session.with(|core| core.send_merge_each(key, to));
        self.session.wait(|core| core.take_merges(key))
    }

    /// Applies transfer `tid` (once per rank; other tasks wait for it).
    fn apply(&self, tid: usize) {
        loop {
            // `None`: applied (by this task or another of this rank).
            let part = self.session.wait(|core| match core.arrival(tid) {
                Arrival::Applied => Some(None),
                Arrival::Received(_) | Arrival::Made => Some(core.take_part(tid)),
                Arrival::Applying | Arrival::Pending => None,
            });
            let Some(part) = part else {
                return;
            };
            let tr = &self.plan.transfers[tid];
            let arr = self.arrays[tr.array];
            let done = part.apply(
                self.recipes.get(tr.array).copied().flatten(),
                arr,
                |arr, bytes| arr.write(SEAL, &tr.region, bytes),
                |arr, recipe| arr.make(SEAL, &tr.region, recipe),
            );
            if let Err(e) = done {
                self.session.fail(format!(
                    "transfer {tid} from rank {} does not fit array {}: {e}",
                    tr.from, tr.array
                ));
            }
            self.session.with(|core| core.applied(tid));
        }
    }
}

impl Peers for RankPeers<'_> {
    fn local(&self) -> Range<usize> {
        self.local.clone()
    }

    fn ranks(&self) -> usize {
        self.plan.ranks
    }

    fn before(&self, t: usize, w: usize) {
        let t0 = std::time::Instant::now();
        self.session.wait(|core| core.ready(t, w).then_some(()));
        for &tid in &self.plan.waits[t][w] {
            self.apply(tid);
        }
        self.waited
            .fetch_add(since(t0), std::sync::atomic::Ordering::Relaxed);
    }

    fn after(&self, t: usize, w: usize) {
        let sends: Vec<(usize, Vec<u8>)> = self.plan.sends[t][w]
            .iter()
            .map(|&tid| {
                let tr = &self.plan.transfers[tid];
                (tid, self.arrays[tr.array].read(SEAL, &tr.region))
            })
            .collect();
        // A block passed on that this rank neither reads again nor keeps (the plan's
        // `release`): its pages go back to the kernel once read for sending.
        for &tid in self.plan.sends[t][w]
            .iter()
            .filter(|&&tid| self.plan.release[tid])
        {
            let tr = &self.plan.transfers[tid];
            self.arrays[tr.array].release(SEAL, &tr.region);
        }
        self.session.with(|core| {
            for (tid, data) in sends {
                core.send_transfer(tid, data);
            }
            core.task_done(t, w);
        });
    }

    fn exchange(&self, to: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)> {
        let t0 = std::time::Instant::now();
        let theirs = self.trade(to);
        self.waited(since(t0));
        theirs
    }

    fn merge_behind(&self, mine: Vec<u8>) -> Vec<(Range<usize>, Vec<u8>)> {
        let me = self.local.start / self.local.len().max(1);
        let to = crate::sync::to_others(mine, self.plan.ranks, me);
        crate::sync::by_workers(self.trade(to), self.local.len())
    }

    fn exchange_behind(&self, to: Vec<Vec<u8>>) -> Vec<(usize, Vec<u8>)> {
        self.trade(to)
    }

    fn waited(&self, ns: u64) {
        self.waited
            .fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
    }

    fn fail(&self, message: String) -> ! {
        self.session.fail(message)
    }

    fn lease(&self) -> u64 {
        self.lease
    }

    fn barrier(&self, t: usize) {
        if self.plan.barrier[t] {
            let t0 = std::time::Instant::now();
            self.session.with(|core| core.barrier(t));
            self.session
                .wait(|core| core.barrier_passed(t).then_some(()));
            self.waited
                .fetch_add(since(t0), std::sync::atomic::Ordering::Relaxed);
        }
    }
}
