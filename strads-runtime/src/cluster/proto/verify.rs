//! A call plan checked by running it on tags instead of values: every element carries the
//! task that wrote it last (0: the call's start) and each rank holds its own copy. Tests
//! run it on every schedule they make (`proto/tests.rs`, `tests/random_loops.rs`).

use std::collections::{BTreeMap, BTreeSet};

use super::itinerary::{Itinerary, PlanArray};
use super::region::{Claims, Region};
use crate::plan::Schedule;

/// Tags of every element of every array, per rank (`None`: the rank does not hold it).
type Memory = Vec<Vec<Vec<Option<u32>>>>;

/// Runs the call plan of `schedule` on `ranks` ranks in the schedule's serial order (steps
/// in order, workers in order), checking that:
/// - a task's rank holds the serial value of every element its window reaches when the
///   task starts, after the transfers it waits for (the first task of a rank that needs a
///   transfer applies it), each taken from its sender right after its writer ran;
/// - a transfer is sent by the rank that holds its elements, before a task waits for it;
///   a sender that gives back its region's pages once sent (`release`) holds nothing
///   there afterwards, so a later read of its own copy, or a later send of it, fails;
/// - after the transfers home, the rank the plan's `end` names holds every element's final
///   value (the driver, with `home`), and every other rank holds the final value of what
///   the plan lists as held (which the next call may rely on); ranks start with the
///   regions the arrays list as `held`, and the `away` parts on their rank alone.
///
/// Tasks that may run at once never overlap a write (`Schedule::overlap`), so the serial
/// order stands for every order the executors may take. `Ok(false)`: the schedule does not
/// cross processes (reconnaissance), nothing to check.
pub fn verify(
    schedule: &Schedule,
    arrays: &[PlanArray],
    ranks: usize,
    home: bool,
) -> Result<bool, String> {
    let p = schedule.workers;
    if ranks == 0 || p % ranks != 0 {
        return Err(format!("{p} workers do not split into {ranks} ranks"));
    }
    let threads = p / ranks;
    let claims = Claims::of(schedule);
    let plan = match Itinerary::new(schedule, ranks, threads, arrays, home) {
        Ok(plan) => plan,
        Err(_) => return Ok(false),
    };
    let len = |a: usize| arrays[a].shape.iter().product::<usize>();
    let mut truth: Vec<Vec<u32>> = (0..arrays.len()).map(|a| vec![0; len(a)]).collect();
    let mut mem: Memory = (0..ranks)
        .map(|r| {
            (0..arrays.len())
                .map(|a| vec![(r == 0 || arrays[a].holders.contains(&r)).then_some(0); len(a)])
                .collect()
        })
        .collect();
    for (a, arr) in arrays.iter().enumerate() {
        for (region, r) in &arr.held {
            for &(lo, hi) in &region.0 {
                mem[*r][a][lo as usize..hi as usize].fill(Some(0));
            }
        }
        for (region, r) in &arr.away {
            for &(lo, hi) in &region.0 {
                for (q, m) in mem.iter_mut().enumerate() {
                    m[a][lo as usize..hi as usize].fill((q == *r).then_some(0));
                }
            }
        }
    }
    let elems = |region: &Region| -> Vec<usize> {
        region
            .0
            .iter()
            .flat_map(|&(lo, hi)| lo as usize..hi as usize)
            .collect()
    };
    let snapshot = |mem: &Memory, tid: usize| -> Vec<Option<u32>> {
        let tr = &plan.transfers[tid];
        elems(&tr.region)
            .into_iter()
            .map(|e| mem[tr.from][tr.array].get(e).copied().flatten())
            .collect()
    };
    let mut sent: BTreeMap<usize, Vec<Option<u32>>> = BTreeMap::new();
    for tid in plan.initial() {
        sent.insert(tid, snapshot(&mem, tid));
    }
    let apply = |mem: &mut Memory, sent: &BTreeMap<usize, Vec<Option<u32>>>, tid: usize| {
        let tr = &plan.transfers[tid];
        let data = sent
            .get(&tid)
            .ok_or_else(|| format!("transfer {tid} is waited for before it is sent"))?;
        for (e, v) in elems(&tr.region).into_iter().zip(data) {
            if v.is_none() {
                return Err(format!(
                    "transfer {tid} sends element {e} of array {} that rank {} lacks",
                    tr.array, tr.from
                ));
            }
            mem[tr.to][tr.array][e] = *v;
        }
        Ok(())
    };
    let mut applied = BTreeSet::new();
    let mut tag = 0;
    for t in 0..schedule.steps.len() {
        for w in 0..p {
            let Some(task) = schedule.task(t, w) else {
                continue;
            };
            tag += 1;
            let r = w / threads;
            for &tid in &plan.waits[t][w] {
                if plan.transfers[tid].to != r {
                    return Err(format!(
                        "task ({t}, {w}) waits for transfer {tid} to another rank"
                    ));
                }
                if applied.insert(tid) {
                    apply(&mut mem, &sent, tid)?;
                }
            }
            for (a, arr) in arrays.iter().enumerate() {
                let window = schedule.windows[task.windows]
                    .get(a)
                    .ok_or_else(|| format!("task ({t}, {w}) has no window of array {a}"))?;
                let (access, written) = claims
                    .regions(window, &arr.shape, r * threads..(r + 1) * threads)
                    .ok_or_else(|| format!("task ({t}, {w}): a window that cannot cross"))?;
                for e in elems(&access) {
                    if mem[r][a][e] != Some(truth[a][e]) {
                        return Err(format!(
                            "task ({t}, {w}) on rank {r} reaches element {e} of array {a} \
                             holding {:?}, not the serial value {}",
                            mem[r][a][e], truth[a][e]
                        ));
                    }
                }
                for e in elems(&written) {
                    mem[r][a][e] = Some(tag);
                    truth[a][e] = tag;
                }
            }
            for &tid in &plan.sends[t][w] {
                if plan.transfers[tid].from != r {
                    return Err(format!(
                        "task ({t}, {w}) sends transfer {tid} of another rank"
                    ));
                }
                sent.insert(tid, snapshot(&mem, tid));
            }
            // Once all are read, the sender gives back the pages of the regions it
            // releases: it holds nothing there.
            for &tid in plan.sends[t][w].iter().filter(|&&tid| plan.release[tid]) {
                let tr = &plan.transfers[tid];
                for e in elems(&tr.region) {
                    mem[r][tr.array][e] = None;
                }
            }
        }
    }
    for tid in plan.homecoming() {
        apply(&mut mem, &sent, tid)?;
    }
    for (a, truth) in truth.iter().enumerate() {
        for &((lo, hi), r) in &plan.end[a] {
            if home && r != 0 {
                return Err(format!(
                    "a plan that brings all home leaves {lo}..{hi} on rank {r}"
                ));
            }
            for e in lo as usize..hi as usize {
                if mem[r][a][e] != Some(truth[e]) {
                    return Err(format!(
                        "after the call rank {r} holds {:?} for element {e} of array {a}, not \
                         the final value {}",
                        mem[r][a][e], truth[e]
                    ));
                }
            }
        }
        let covered: u64 = plan.end[a].iter().map(|((lo, hi), _)| hi - lo).sum();
        if covered != truth.len() as u64 {
            return Err(format!(
                "the plan's end places {covered} of array {a}'s {} elements",
                truth.len()
            ));
        }
    }
    // What the plan says other ranks hold after the call is what they hold.
    for (a, held) in plan.held.iter().enumerate() {
        for (region, r) in held {
            for e in elems(region) {
                if mem[*r][a][e] != Some(truth[a][e]) {
                    return Err(format!(
                        "the plan lists element {e} of array {a} as held by rank {r} after \
                         the call, which holds {:?}, not {}",
                        mem[*r][a][e], truth[a][e]
                    ));
                }
            }
        }
    }
    Ok(true)
}
