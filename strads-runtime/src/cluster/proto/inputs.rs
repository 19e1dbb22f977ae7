//! The inputs of a call's plan: the arrays as the plan sees them, checked, and the
//! regions each task's windows cover.

use super::region::{Claims, Region};
use crate::plan::Schedule;

/// The rank a part of an array created in place comes from while no rank has written
/// it: none; the rank that needs it makes it from the array's recipe
/// ([`ArrayMeta::made`](super::ArrayMeta::made)), and the driver when serial code reads it.
pub const MADE: usize = usize::MAX;

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

/// The inputs a plan trusts, checked: they come partly from another process's message
/// (the driver's array metas), so a wrong one is an error, not a panic or an access
/// outside an array.
pub(super) fn check_inputs(
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

/// Every task's regions of every shipped array, `(access, written)`, as
/// `regions[step][worker]` (`None`: no task there; an array's `None`: not shipped).
pub(super) type TaskRegions = Vec<Vec<Option<Vec<Option<(Region, Region)>>>>>;

/// The [`TaskRegions`] of `schedule` on ranks of `threads` workers.
pub(super) fn task_regions(
    schedule: &Schedule,
    threads: usize,
    arrays: &[PlanArray],
) -> Result<TaskRegions, NotShippable> {
    let claims = Claims::of(schedule);
    let mut out = Vec::with_capacity(schedule.steps.len());
    for t in 0..schedule.steps.len() {
        let mut row = Vec::with_capacity(schedule.workers);
        for w in 0..schedule.workers {
            let Some(task) = schedule.task(t, w) else {
                row.push(None);
                continue;
            };
            let r = w / threads;
            let windows = &schedule.windows[task.windows];
            let mut set = Vec::with_capacity(arrays.len());
            for (a, arr) in arrays.iter().enumerate() {
                if !arr.shipped {
                    set.push(None);
                    continue;
                }
                let window = windows.get(a).ok_or_else(|| {
                    NotShippable(format!("task ({t}, {w}) has no window for array {a}"))
                })?;
                let regions = claims
                    .regions(window, &arr.shape, r * threads..(r + 1) * threads)
                    .ok_or_else(|| {
                        NotShippable(format!("task ({t}, {w}) has a window that cannot cross"))
                    })?;
                set.push(Some(regions));
            }
            row.push(Some(set));
        }
        out.push(row);
    }
    Ok(out)
}
