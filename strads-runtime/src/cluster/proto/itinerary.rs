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

pub use super::inputs::{MADE, NotShippable, PlanArray};
use super::inputs::{TaskRegions, check_inputs, task_regions};
use super::region::Region;
use super::rows::Rows;
use crate::plan::Schedule;

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

/// Everything a call moves between ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
        Self::planned(schedule, ranks, threads, arrays, home, true)
    }

    /// [`new`](Self::new), with rows that every region treats alike planned once each
    /// (`squeeze`, see `rows.rs`) or every row on its own: the same plan.
    pub(super) fn planned(
        schedule: &Schedule,
        ranks: usize,
        threads: usize,
        arrays: &[PlanArray],
        home: bool,
        squeeze: bool,
    ) -> Result<Itinerary, NotShippable> {
        check_inputs(schedule, ranks, threads, arrays)?;
        let mut regions = task_regions(schedule, threads, arrays)?;
        let rows: Vec<Option<Rows>> = arrays
            .iter()
            .enumerate()
            .map(|(a, arr)| {
                let tasks = regions.iter().flatten().flatten();
                let of_tasks = tasks.filter_map(|set| set[a].as_ref());
                let parts = arr.held.iter().chain(&arr.away).map(|(r, _)| r);
                let all = of_tasks.flat_map(|(x, w)| [x, w]).chain(parts);
                (squeeze && arr.shipped)
                    .then(|| Rows::of(&arr.shape, all))
                    .flatten()
            })
            .collect();
        if rows.iter().all(Option::is_none) {
            return Ok(Self::walk(schedule, ranks, threads, arrays, &regions, home));
        }
        let squeezed: Vec<PlanArray> = arrays
            .iter()
            .zip(&rows)
            .map(|(arr, rs)| match rs {
                None => arr.clone(),
                Some(rs) => PlanArray {
                    shape: rs.shape(),
                    shipped: arr.shipped,
                    holders: arr.holders.clone(),
                    away: arr.away.iter().map(|(r, k)| (rs.squeeze(r), *k)).collect(),
                    held: arr.held.iter().map(|(r, k)| (rs.squeeze(r), *k)).collect(),
                },
            })
            .collect();
        for set in regions.iter_mut().flatten().flatten() {
            for (a, rs) in rows.iter().enumerate() {
                if let (Some(rs), Some((access, written))) = (rs, set[a].as_mut()) {
                    *access = rs.squeeze(access);
                    *written = rs.squeeze(written);
                }
            }
        }
        let mut plan = Self::walk(schedule, ranks, threads, &squeezed, &regions, home);
        for (a, rs) in rows.iter().enumerate() {
            let Some(rs) = rs else { continue };
            for tr in plan.transfers.iter_mut().filter(|t| t.array == a) {
                tr.region = rs.expand(&tr.region);
            }
            plan.end[a] = rs.expand_ranges(&plan.end[a]);
            for (region, _) in &mut plan.held[a] {
                *region = rs.expand(region);
            }
        }
        Ok(plan)
    }

    /// The walk of the module's rule over the tasks' `regions` (from [`task_regions`]).
    fn walk(
        schedule: &Schedule,
        ranks: usize,
        threads: usize,
        arrays: &[PlanArray],
        regions: &TaskRegions,
        home: bool,
    ) -> Itinerary {
        let p = schedule.workers;
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
                let mut writes = Vec::new();
                let set = regions
                    .get(t)
                    .and_then(|row| row.get(w))
                    .and_then(Option::as_ref)
                    .expect("a task's regions");
                for (a, arr) in arrays.iter().enumerate() {
                    let Some((region, written)) = set[a].as_ref() else {
                        continue;
                    };
                    if !arr.shipped {
                        continue;
                    }
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
        plan
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
