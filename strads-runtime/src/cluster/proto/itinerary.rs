//! What moves between processes in one call: from a [`Schedule`] and the placement of its
//! workers on ranks, every transfer of array elements (who sends which elements to whom,
//! after which task, and which tasks wait for them), the remote waits and the barriers.
//!
//! Every rank computes the same plan from the same inputs, so a transfer is named by its
//! index alone.
//!
//! The rule: walk the tasks in the schedule's serial order (step by step, worker by
//! worker), keeping for every element of every shipped array the task that last wrote it
//! (or the call's start), the rank that did, and the ranks that hold that value. A task
//! whose window holds an element its rank does not hold receives it, from the rank that
//! wrote it, after that write; the first of its rank's tasks to need a transfer applies it
//! and the others wait for that. Elements a task may write are then its rank's alone. At
//! the end, every element the driver (rank 0) does not hold comes home. Because windows
//! of tasks that may run at once never overlap a write (`Schedule::overlap`), the elements
//! a task receives are exactly the values the serial order gives them.

use std::collections::BTreeMap;

use super::region::{Claims, Region};
use crate::plan::Schedule;

/// The rank a part of an array created in place comes from while no rank has written
/// it: none; the rank that needs it makes it from the array's recipe
/// ([`ArrayMeta::made`](super::ArrayMeta::made)), and the driver when serial code reads it.
pub const MADE: usize = usize::MAX;

/// A task: `(step, worker)`.
pub type TaskId = (usize, usize);

/// Elements of one array sent from one rank to another once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The array (index into the spec).
    pub array: usize,
    /// The elements.
    pub region: Region,
    /// The rank that sends them.
    pub from: usize,
    /// The task after which they are sent; `None`: at the call's start.
    pub writer: Option<TaskId>,
    /// The rank that receives them.
    pub to: usize,
    /// The tasks of `to` that need them, in serial order; empty: they come home at the
    /// end of the call.
    pub needed_by: Vec<TaskId>,
}

/// One array as the plan sees it.
#[derive(Clone, Debug)]
pub struct PlanArray {
    /// Its shape.
    pub shape: Vec<usize>,
    /// Whether its elements travel by regions (arrays the loop writes); read-only arrays
    /// are sent whole before the call instead.
    pub shipped: bool,
    /// Ranks that hold its current value before the call (the driver always).
    pub holders: Vec<usize>,
    /// Regions whose current value is on another rank only (left there by an earlier
    /// call): `(region, rank)`.
    pub away: Vec<(Region, usize)>,
    /// Regions whose current value another rank also holds (its copy from an earlier call
    /// of an array the driver has not changed since): `(region, rank)`; sent it no more.
    pub held: Vec<(Region, usize)>,
}

/// Everything a call moves between ranks.
#[derive(Clone, Debug, Default)]
pub struct Itinerary {
    pub ranks: usize,
    pub threads: usize,
    pub transfers: Vec<Transfer>,
    /// `waits[t][w]`: the transfers task `(t, w)` needs applied before it starts.
    pub waits: Vec<Vec<Vec<usize>>>,
    /// `sends[t][w]`: the transfers its rank sends when task `(t, w)` is done.
    pub sends: Vec<Vec<Vec<usize>>>,
    /// `notify[t][w]`: the other ranks with a task that waits for `(t, w)`.
    pub notify: Vec<Vec<Vec<usize>>>,
    /// `remote_after[t][w]`: the tasks on other ranks that `(t, w)` waits for.
    pub remote_after: Vec<Vec<Vec<TaskId>>>,
    /// Whether every rank waits for all after step `t`.
    pub barrier: Vec<bool>,
    /// After the call, per array, where the current value of each range is:
    /// `((lo, hi), rank)` (a rank that wrote it last; the driver when `home`).
    pub end: Vec<Vec<((u64, u64), usize)>>,
    /// After the call, per array, the regions ranks other than the driver hold current:
    /// `(region, rank)`, sorted by rank (what the next call may list as `held`).
    pub held: Vec<Vec<(Region, usize)>>,
    /// Per transfer: whether its sender may give back the pages of its region once sent
    /// (a block that rotates on): no later task of the sender reads its copy, which is
    /// not current at the end either. Only transfers sent after a task.
    pub release: Vec<bool>,
}

impl PlanArray {
    /// Arrays of `shapes` that the call writes, held by the driver alone (the first
    /// call's start).
    pub fn on_driver(shapes: &[&[usize]]) -> Vec<PlanArray> {
        shapes
            .iter()
            .map(|s| PlanArray {
                shape: s.to_vec(),
                shipped: true,
                holders: vec![0],
                away: Vec::new(),
                held: Vec::new(),
            })
            .collect()
    }
}

/// Why a schedule cannot be run across processes as regions of its arrays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotShippable(pub String);

#[derive(Clone, Debug)]
struct Seg {
    end: u64,
    writer: Option<TaskId>,
    src: usize,
    /// Ranks holding this value, with the transfer that brought it (`None`: made there).
    held: Vec<(usize, Option<usize>)>,
    /// Transfers of this value sent after its writer ran (their sender is `src`).
    sent: Vec<usize>,
    /// Whether `src` read its own copy of this value after writing it: it keeps it.
    kept: bool,
}

/// Splits the segment holding `x` so that one starts at `x`.
fn split_at(map: &mut BTreeMap<u64, Seg>, x: u64) {
    let Some((&start, seg)) = map.range(..=x).next_back() else {
        return;
    };
    if start < x && x < seg.end {
        let right = seg.clone();
        map.get_mut(&start).expect("present").end = x;
        map.insert(x, right);
    }
}

/// The inputs a plan trusts, checked: they come partly from another process's message
/// (the driver's array metas), so a wrong one is an error, not a panic or an access
/// outside an array.
fn check_inputs(
    schedule: &Schedule,
    ranks: usize,
    threads: usize,
    arrays: &[PlanArray],
) -> Result<(), NotShippable> {
    let bad = |what: String| Err(NotShippable(what));
    if ranks == 0 || threads == 0 || ranks.checked_mul(threads) != Some(schedule.workers) {
        return bad(format!(
            "{} workers are not {ranks} ranks of {threads} threads",
            schedule.workers
        ));
    }
    for (a, arr) in arrays.iter().enumerate() {
        let len = arr
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
            .ok_or_else(|| NotShippable(format!("array {a}: its shape overflows")))?;
        if let Some(r) = arr.holders.iter().find(|&&r| r >= ranks) {
            return bad(format!("array {a}: held by rank {r} of a job of {ranks}"));
        }
        // Parts away may also be made where needed (`MADE`); copies are held by ranks.
        let held = arr.held.iter().map(|p| (p, false));
        for ((region, r), away) in held.chain(arr.away.iter().map(|p| (p, true))) {
            if *r >= ranks && !(away && *r == MADE) {
                return bad(format!("array {a}: a part on rank {r} of a job of {ranks}"));
            }
            let mut end = 0;
            for &(lo, hi) in &region.0 {
                if lo < end || lo >= hi || hi > len {
                    return bad(format!(
                        "array {a}: the part [{lo}, {hi}) is not a sorted, disjoint range \
                         inside its {len} elements"
                    ));
                }
                end = hi;
            }
        }
    }
    Ok(())
}

impl Itinerary {
    /// The plan of `schedule` on `ranks` ranks of `threads` workers each (worker `w` on
    /// rank `w / threads`).
    ///
    /// With `home`, every element the driver does not hold at the end comes home;
    /// without, it stays where it was written (see [`Itinerary::end`]). Inputs that do not
    /// fit (a worker count that is not ranks x threads, a rank or a part outside the job or
    /// the array) are an error.
    pub fn new(
        schedule: &Schedule,
        ranks: usize,
        threads: usize,
        arrays: &[PlanArray],
        home: bool,
    ) -> Result<Itinerary, NotShippable> {
        let p = schedule.workers;
        check_inputs(schedule, ranks, threads, arrays)?;
        let rank_of = |w: usize| w / threads;
        let steps = schedule.steps.len();
        let grid = || vec![vec![Vec::new(); p]; steps];
        let mut plan = Itinerary {
            ranks,
            threads,
            transfers: Vec::new(),
            waits: grid(),
            sends: grid(),
            notify: grid(),
            remote_after: vec![vec![Vec::new(); p]; steps],
            barrier: (0..steps)
                .map(|t| ranks > 1 && schedule.barrier_between(t))
                .collect(),
            end: Vec::new(),
            held: Vec::new(),
            release: Vec::new(),
        };
        let claims = Claims::of(schedule);
        let mut maps: Vec<BTreeMap<u64, Seg>> = arrays
            .iter()
            .map(|a| {
                let len: u64 = a.shape.iter().map(|&d| d as u64).product();
                let mut m = BTreeMap::new();
                if len > 0 {
                    let mut held = vec![(0, None)];
                    held.extend(a.holders.iter().filter(|&&r| r != 0).map(|&r| (r, None)));
                    m.insert(
                        0,
                        Seg {
                            end: len,
                            writer: None,
                            src: 0,
                            held,
                            sent: Vec::new(),
                            kept: false,
                        },
                    );
                    for (region, r) in &a.held {
                        for &(lo, hi) in &region.0 {
                            split_at(&mut m, lo);
                            split_at(&mut m, hi);
                            for seg in m.range_mut(lo..hi).map(|(_, s)| s) {
                                if !seg.held.iter().any(|(h, _)| h == r) {
                                    seg.held.push((*r, None));
                                }
                            }
                        }
                    }
                    for (region, r) in &a.away {
                        for &(lo, hi) in &region.0 {
                            split_at(&mut m, lo);
                            split_at(&mut m, hi);
                            for seg in m.range_mut(lo..hi).map(|(_, s)| s) {
                                seg.src = *r;
                                seg.held = vec![(*r, None)];
                            }
                        }
                    }
                }
                m
            })
            .collect();
        // (array, writer, sender, to) → transfer index. Values from the call's start may
        // come from several ranks (parts left where they were written).
        let mut index: BTreeMap<(usize, Option<TaskId>, usize, usize), usize> = BTreeMap::new();
        for t in 0..steps {
            for w in 0..p {
                let Some(task) = schedule.task(t, w) else {
                    continue;
                };
                let r = rank_of(w);
                for &(u, v) in &task.after {
                    if rank_of(v) != r {
                        plan.remote_after[t][w].push((u, v));
                        if !plan.notify[u][v].contains(&r) {
                            plan.notify[u][v].push(r);
                        }
                    }
                }
                let windows = &schedule.windows[task.windows];
                let mut writes = Vec::new();
                for (a, arr) in arrays.iter().enumerate() {
                    if !arr.shipped {
                        continue;
                    }
                    let window = windows.get(a).ok_or_else(|| {
                        NotShippable(format!("task ({t}, {w}) has no window for array {a}"))
                    })?;
                    let (region, written) = claims
                        .regions(window, &arr.shape, r * threads..(r + 1) * threads)
                        .ok_or_else(|| {
                            NotShippable(format!("task ({t}, {w}) has a window that cannot cross"))
                        })?;
                    let map = &mut maps[a];
                    for &(lo, hi) in &region.0 {
                        split_at(map, lo);
                        split_at(map, hi);
                        let keys: Vec<u64> = map.range(lo..hi).map(|(&k, _)| k).collect();
                        for k in keys {
                            let seg = map.get_mut(&k).expect("present");
                            match seg.held.iter().find(|(h, _)| *h == r) {
                                Some((_, None)) => {
                                    // The rank reads its own copy again: it keeps it
                                    // (sends of it, before or after, give nothing back).
                                    if seg.src == r {
                                        seg.kept = true;
                                        for &tid in &seg.sent {
                                            plan.release[tid] = false;
                                        }
                                    }
                                }
                                Some(&(_, Some(tid))) => {
                                    let tr = &mut plan.transfers[tid];
                                    if !tr.needed_by.contains(&(t, w)) {
                                        tr.needed_by.push((t, w));
                                    }
                                    if !plan.waits[t][w].contains(&tid) {
                                        plan.waits[t][w].push(tid);
                                    }
                                }
                                None => {
                                    let key = (a, seg.writer, seg.src, r);
                                    let tid = *index.entry(key).or_insert_with(|| {
                                        plan.transfers.push(Transfer {
                                            array: a,
                                            region: Region::default(),
                                            from: seg.src,
                                            writer: seg.writer,
                                            to: r,
                                            needed_by: Vec::new(),
                                        });
                                        let tid = plan.transfers.len() - 1;
                                        plan.release.push(seg.writer.is_some());
                                        if let Some((u, v)) = seg.writer {
                                            plan.sends[u][v].push(tid);
                                        }
                                        tid
                                    });
                                    if seg.writer.is_some() && !seg.sent.contains(&tid) {
                                        seg.sent.push(tid);
                                    }
                                    if seg.kept {
                                        plan.release[tid] = false;
                                    }
                                    let tr = &mut plan.transfers[tid];
                                    // Sorted and merged once, at the end (segments
                                    // of several tasks arrive in no order).
                                    tr.region.0.push((k, seg.end));
                                    if !tr.needed_by.contains(&(t, w)) {
                                        tr.needed_by.push((t, w));
                                    }
                                    if !plan.waits[t][w].contains(&tid) {
                                        plan.waits[t][w].push(tid);
                                    }
                                    seg.held.push((r, Some(tid)));
                                }
                            }
                        }
                    }
                    if !written.is_empty() {
                        writes.push((a, written));
                    }
                }
                for (a, region) in writes {
                    let map = &mut maps[a];
                    for &(lo, hi) in &region.0 {
                        // A written region may cut the segments where the accessed one
                        // did not (a tile reads beyond what it writes).
                        split_at(map, lo);
                        split_at(map, hi);
                        for seg in map.range_mut(lo..hi).map(|(_, s)| s) {
                            seg.writer = Some((t, w));
                            seg.src = r;
                            seg.held = vec![(r, None)];
                            seg.sent.clear();
                            seg.kept = false;
                        }
                    }
                }
            }
        }
        // A sender whose copy is current at the end keeps it (the next call may rely on it,
        // or it is the value's place).
        for map in &maps {
            for seg in map.values() {
                for &tid in &seg.sent {
                    let from = plan.transfers[tid].from;
                    if seg.held.iter().any(|&(h, _)| h == from) {
                        plan.release[tid] = false;
                    }
                }
            }
        }
        // Where each value is at the end; with `home`, what the driver does not hold comes
        // home.
        for map in &maps {
            let mut end: Vec<((u64, u64), usize)> = Vec::new();
            for (&k, seg) in map {
                let r = if home || seg.held.iter().any(|(h, _)| *h == 0) {
                    0
                } else {
                    seg.src
                };
                match end.last_mut() {
                    Some(((_, hi), last)) if *hi == k && *last == r => *hi = seg.end,
                    _ => end.push(((k, seg.end), r)),
                }
            }
            plan.end.push(end);
            let mut held: BTreeMap<usize, Region> = BTreeMap::new();
            for (&k, seg) in map {
                for &(r, _) in &seg.held {
                    if r != 0 && r != MADE {
                        held.entry(r).or_default().push(k, seg.end);
                    }
                }
            }
            plan.held
                .push(held.into_iter().map(|(r, region)| (region, r)).collect());
        }
        for (a, map) in maps.iter().enumerate() {
            for (&k, seg) in map {
                if !home || seg.held.iter().any(|(h, _)| *h == 0) {
                    continue;
                }
                let key = (a, seg.writer, seg.src, usize::MAX);
                let tid = *index.entry(key).or_insert_with(|| {
                    plan.transfers.push(Transfer {
                        array: a,
                        region: Region::default(),
                        from: seg.src,
                        writer: seg.writer,
                        to: 0,
                        needed_by: Vec::new(),
                    });
                    plan.release.push(false);
                    let tid = plan.transfers.len() - 1;
                    if let Some((u, v)) = seg.writer {
                        plan.sends[u][v].push(tid);
                    }
                    tid
                });
                let tr = &mut plan.transfers[tid];
                tr.region.0.push((k, seg.end));
            }
        }
        for tr in &mut plan.transfers {
            tr.region.normalize();
        }
        Ok(plan)
    }

    /// The rank of worker `w`.
    pub fn rank_of(&self, w: usize) -> usize {
        w / self.threads
    }

    /// The arrays of the next call of the same loop when the driver changed none of them
    /// in between: `arrays` with the copies this call leaves on other ranks, and the parts
    /// it leaves there alone (none when it brought everything home).
    pub fn next_arrays(&self, arrays: &[PlanArray]) -> Vec<PlanArray> {
        arrays
            .iter()
            .enumerate()
            .zip(&self.held)
            .map(|((i, a), c)| PlanArray {
                held: c.clone(),
                away: self.away(i),
                ..a.clone()
            })
            .collect()
    }

    /// Of array `a`, the regions whose current value is on another rank alone after the
    /// call (what the driver must fetch before it reads them), sorted by rank.
    pub fn away(&self, a: usize) -> Vec<(Region, usize)> {
        let mut by_rank: BTreeMap<usize, Region> = BTreeMap::new();
        for &((lo, hi), r) in self.end.get(a).into_iter().flatten() {
            if r != 0 {
                by_rank.entry(r).or_default().push(lo, hi);
            }
        }
        by_rank.into_iter().map(|(r, region)| (region, r)).collect()
    }

    /// Transfers rank `r` receives that come home at the end (the driver's, `r == 0`).
    pub fn homecoming(&self) -> impl Iterator<Item = usize> + '_ {
        self.transfers
            .iter()
            .enumerate()
            .filter(|(_, t)| t.needed_by.is_empty())
            .map(|(i, _)| i)
    }

    /// Transfers sent at the call's start (each by the rank that holds the value).
    pub fn initial(&self) -> impl Iterator<Item = usize> + '_ {
        self.transfers
            .iter()
            .enumerate()
            .filter(|(_, t)| t.writer.is_none())
            .map(|(i, _)| i)
    }

    /// Elements each rank receives, in bytes of `elem` bytes each (parts made where they
    /// are needed move nothing).
    pub fn bytes_moved(&self, elem: &[usize]) -> u64 {
        self.transfers
            .iter()
            .filter(|t| t.from != MADE)
            .map(|t| t.region.len() * elem[t.array] as u64)
            .sum()
    }
}
